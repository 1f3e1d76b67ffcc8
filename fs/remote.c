/*
 * remote: the mount's use of the fleet tier (index/remote/): asked on a
 * probe's local miss, once per kernel at a time, and fed what lands here
 * to publish, from a thread of its own.
 *
 * When the remote is asked: at a probe (probe.c) that misses locally, of a
 * kernel's group file, or of a module (remote_modules=on) or autotune file,
 * in a key dir.  What is remembered: a miss, per key and name, for
 * remote_miss_ttl (the remote is not asked again meanwhile); and the
 * fetches in flight.  What a probe waits for: a fetch of the same kernel
 * that another probe started (no longer than the probe budget), or its
 * own fetch, which the engine bounds by its timeouts and the budget.  A
 * probe never waits for a connection: with every one busy, or the breaker
 * open, it is a local miss at once.  So at most remote_conns of the
 * session's 16 workers wait on the network, whatever the remote does.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <xxhash.h>

#include "index/base/err.h"
#include "index/model/entry.h"
#include "index/model/event.h"
#include "index/model/kernel.h"
#include "index/remote/land.h"
#include "index/remote/pack.h"
#include "index/remote/publish.h"
#include "index/remote/pt2.h"
#include "index/remote/survey.h"
#include "index/store/store.h"
#include "index/tree/nsread.h"
#include "priv.h"

/* Misses remembered: one slot per hash, the last one wins.  A miss
 * forgotten early costs one more question to the remote, nothing else. */
#define MISS_SLOTS 8192
/* Fetches in flight at once: one per connection is enough, as each takes
 * one; a few more for the probes that wait on them. */
#define FLIGHTS 32

struct flight {
	uint64_t h;		/* of key and name; 0: free slot */
	int done;
	int rc;			/* the fetch's, once done */
	int waiters;
};

struct job {
	uint64_t dir;
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];	/* kernel NAME, module FILE, or an
					 * entry's name */
	int group;
	enum tcfs_probe kind;		/* an entry's kind; 0: Triton's */
};

struct fs_remote {
	struct tcfs_remote *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a flight done (mu) */
	struct flight flights[FLIGHTS];	/* (mu) */
	struct {
		_Atomic uint64_t h;
		_Atomic int64_t until_ns;
	} miss[MISS_SLOTS];
	/* The publish queue, a ring (mu), and its thread. */
	struct job *q;
	size_t qhead, qlen, qmax;
	pthread_cond_t qcv;
	int stop;
	pthread_t thread;
	int started;
	/* What the store's counters have of stats (the events thread's). */
	uint64_t saved[TCFS_REMOTE_FIGS];
	int breaker_saved;
	/* Hits per kind (of the kinds whose entries travel apart from
	 * Triton's kernels), and their counters' names and saved values. */
	_Atomic uint64_t kind_hits[TCFS_PROBE_KINDS + 1];
	uint64_t kind_saved[TCFS_PROBE_KINDS + 1];
	char kind_fig[TCFS_PROBE_KINDS + 1][64];
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t hash_of(const char *key, const char *name)
{
	char buf[2 * TCFS_NAME_MAX + 2];
	int n = snprintf(buf, sizeof(buf), "%s/%s", key, name);

	return XXH3_64bits(buf, (size_t)n) | 1;	/* never 0: a free slot */
}

static int missed_lately(struct fs_remote *rm, uint64_t h)
{
	size_t i = h % MISS_SLOTS;

	return atomic_load(&rm->miss[i].h) == h &&
	       atomic_load(&rm->miss[i].until_ns) > mono_ns();
}

static void remember_miss(struct fs_remote *rm, uint64_t h)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(rm->r);
	size_t i = h % MISS_SLOTS;

	atomic_store(&rm->miss[i].until_ns,
		     mono_ns() + (int64_t)cfg->miss_ttl_ms * 1000000);
	atomic_store(&rm->miss[i].h, h);
}

/* The flight of h (mu held), or a new one; NULL when all are taken. */
static struct flight *flight_of(struct fs_remote *rm, uint64_t h, int *mine)
{
	struct flight *free_slot = NULL;

	FS_ASSERT_HELD(&rm->mu);
	for (size_t i = 0; i < FLIGHTS; i++) {
		if (rm->flights[i].h == h && !rm->flights[i].done) {
			*mine = 0;
			return &rm->flights[i];
		}
		if (!free_slot && rm->flights[i].h == 0)
			free_slot = &rm->flights[i];
	}
	if (free_slot)
		*free_slot = (struct flight){ .h = h };
	*mine = 1;
	return free_slot;
}

/* Waits for another probe's fetch of the same kernel, within the budget:
 * its result, or -ETIMEDOUT. */
static int wait_flight(struct fs_remote *rm, struct flight *f)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(rm->r);
	int64_t until = mono_ns() + (int64_t)cfg->budget_ms * 1000000;
	struct timespec ts = { until / 1000000000, until % 1000000000 };
	int rc = -ETIMEDOUT;

	f->waiters++;
	while (!f->done &&
	       pthread_cond_timedwait(&rm->cv, &rm->mu, &ts) != ETIMEDOUT)
		;
	if (f->done)
		rc = f->rc;
	if (--f->waiters == 0 && f->done)
		f->h = 0;
	return rc;
}

/* Name in the dir parent, made (by the mount, 0755) if it is not there:
 * into *out. */
static int made(struct tcfs_fs *fs, uint64_t parent, const char *name,
		struct tcfs_node *out)
{
	int rc = tcfs_ns_mkdir(fs->store, parent, name, 0755, tcfs_ns_now(),
			       NULL, out);

	if (rc == -EEXIST)
		rc = tcfs_ns_lookup(fs->store, parent, name, out);
	if (rc == 0 && out->kind != TCFS_DIR)
		rc = -EEXIST;
	return rc;
}

/* Whether what a probe of kind fetches is a dir, named as the probe's
 * name, in the dir probed: an FX graph's key dir, a vLLM rank dir. */
static int fetches_dir(enum tcfs_probe kind)
{
	const struct tcfs_probe_kind *k = tcfs_probe_kind(kind);

	return k->holds_entries || k->remote == TCFS_ENTRY_REMOTE_TCFS;
}

/* The key of a pack of a dir in dir: "PARENT/DIR" by name (a vLLM HASH
 * dir and the dir it is in: entry.h), *up the parent. */
static int pack_key(struct tcfs_fs *fs, const struct tcfs_node *dir,
		    struct tcfs_node *up, char *buf, size_t len)
{
	int rc = tcfs_ns_get(fs->store, dir->parent, up);

	if (rc == 0 && snprintf(buf, len, "%s/%s", up->name, dir->name) >=
			       (int)len)
		rc = -ENAMETOOLONG;
	return rc;
}

/* The fetch a probe of kind asks for: a kernel or a file of Triton's key
 * dir dir, or an entry of Inductor's in PyTorch's format (the entry's dir
 * is nm, in dir). */
static int fetch(struct tcfs_fs *fs, const struct tcfs_node *dir,
		 const struct fs_name *nm, enum tcfs_probe kind,
		 struct tcfs_fetched *got)
{
	const struct tcfs_probe_kind *k = tcfs_probe_kind(kind);
	struct tcfs_remote *r = fs->remote->r;

	char key[2 * TCFS_NAME_MAX + 2];
	struct tcfs_node up;

	if (k->remote == TCFS_ENTRY_REMOTE_PT2)
		return tcfs_remote_fetch_entry(r, k->remote_id, nm->s, got);
	if (k->remote == TCFS_ENTRY_REMOTE_TCFS)
		return pack_key(fs, dir, &up, key, sizeof(key)) < 0
			       ? -ENOENT
			       : tcfs_remote_fetch_pack(r, k->remote_id, key,
							nm->s, got);
	if (kind == TCFS_PROBE_KERNEL)
		return tcfs_remote_fetch_kernel(r, dir->name, nm->kernel, got);
	return tcfs_remote_fetch_file(r, dir->name, nm->s, got);
}

/* Fetches what the probe nm of dir names and lands it: 0 when it is
 * here now.  A dir of ino 0 (target_of) is made in its parent first; an
 * entry's dir (nm) is made in dir. */
static int fetch_and_land(struct tcfs_fs *fs, struct tcfs_node *dir,
			  const struct fs_name *nm, enum tcfs_probe kind)
{
	int entry = fetches_dir(kind);
	int pack = tcfs_probe_kind(kind)->remote == TCFS_ENTRY_REMOTE_TCFS;
	struct tcfs_fetched got = { 0 };
	const char *landed[TCFS_WIRE_FILES_MAX + 1];
	struct tcfs_node into;
	size_t n = 0;
	int rc;

	rc = fetch(fs, dir, nm, kind, &got);
	if (rc == 0 && !dir->ino)
		rc = made(fs, dir->parent, dir->name, dir);
	into = *dir;
	if (rc == 0 && pack)
		rc = tcfs_remote_land_pack(fs->store, dir->ino, &got, &into);
	else if (rc == 0 && entry)
		rc = made(fs, dir->ino, nm->s, &into);
	if (rc == 0 && !pack)
		rc = tcfs_remote_land(fs->store, into.ino, &got, landed, &n);
	/* The kernel may hold misses of the names that are here now. */
	if (rc == 0 && entry) {
		fs_events_inval(fs, dir->ino, nm->s);
		fs_changed(fs, dir->ino, FS_KIND_STORE, nm->s);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		fs_events_inval(fs, into.ino, landed[i]);
		fs_changed(fs, into.ino, FS_KIND_STORE, landed[i]);
	}
	if (rc < 0 && rc != -ENOENT && rc != -EAGAIN && rc != -EBUSY)
		syslog(LOG_WARNING, "remote: %s/%s: %s", dir->name, nm->s,
		       tcfs_err_msg()[0] ? tcfs_err_msg() : strerror(-rc));
	tcfs_fetched_free(&got);
	return rc;
}

/* Whether a probe of nm may ask the remote: as its kind's row says
 * (entry.h), and the option it names.  A launcher module only when
 * remote_modules says so, an entry only when remote_inductor does (both
 * are code). */
static int askable(const struct tcfs_fs *fs, const struct fs_name *nm,
		   enum tcfs_probe kind)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(fs->remote->r);
	const struct tcfs_probe_kind *k = tcfs_probe_kind(kind);

	switch (k->remote) {
	case TCFS_ENTRY_REMOTE_TRITON:
		if (kind == TCFS_PROBE_KERNEL)
			return nm->group;
		if (nm->art == TCFS_ART_MODULE)
			return cfg->modules;
		return nm->art == TCFS_ART_AUTOTUNE;
	case TCFS_ENTRY_REMOTE_PT2:
		return cfg->inductor != TCFS_INDUCTOR_OFF && k->holds_entries;
	case TCFS_ENTRY_REMOTE_TCFS:
		return cfg->inductor != TCFS_INDUCTOR_OFF;
	default:
		return 0;
	}
}

/* Where a kernel fetched for a probe in dir lands: dir, or when dir is a
 * user's own key dir (users.c), the shared one of its name, made if need
 * be; the remote's kernels are shared, as remote_trust vetted them.  The
 * user's own dir, empty, then goes: its name is the shared one again. */
static int target_of(struct tcfs_fs *fs, const struct tcfs_node *dir,
		     enum tcfs_probe kind, struct tcfs_node *to)
{
	struct tcfs_node own;
	int rc;

	*to = *dir;
	/* An entry's dir is looked up in a user's own dir, which stands for
	 * its parent, the place where shared entries sit. */
	if (fetches_dir(kind))
		return fs->users && tcfs_name_private(dir->name, NULL)
			       ? tcfs_ns_get(fs->store, dir->parent, to)
			       : 0;
	if (!fs->users || tcfs_ns_get(fs->store, dir->parent, &own) < 0 ||
	    !tcfs_name_private(own.name, NULL))
		return 0;
	rc = tcfs_ns_lookup(fs->store, own.parent, dir->name, to);
	if (rc == -ENOENT) {
		/* Made only once the fetch found it (fetch_and_land): an
		 * empty shared dir would stand in the way of the user's own
		 * kernel, promoted later. */
		*to = *dir;
		to->ino = 0;
		to->parent = own.parent;
		rc = 0;
	}
	return rc;
}

static void drop_own(struct tcfs_fs *fs, const struct tcfs_node *dir,
		     enum tcfs_probe kind, const struct tcfs_node *to)
{
	if (to->ino != dir->ino && !fetches_dir(kind))
		tcfs_ns_rmdir(fs->store, dir->parent, dir->name);
}

int fs_remote_fetch(struct tcfs_fs *fs, const struct tcfs_node *dir,
		    const struct fs_name *nm, enum tcfs_probe kind,
		    struct tcfs_node *to)
{
	struct fs_remote *rm = fs->remote;
	struct tcfs_node here;
	struct flight *f;
	uint64_t h;
	int mine, rc;

	if (!rm || !askable(fs, nm, kind) || target_of(fs, dir, kind, to) < 0)
		return -ENOENT;
	h = hash_of(dir->name, nm->s);
	if (missed_lately(rm, h))
		return -ENOENT;
	pthread_mutex_lock(&rm->mu);
	f = flight_of(rm, h, &mine);
	if (!f) {	/* more fetches than flights: not this one */
		pthread_mutex_unlock(&rm->mu);
		atomic_fetch_add(&tcfs_remote_stats(rm->r)->skipped, 1);
		return -EBUSY;
	}
	if (!mine) {
		rc = wait_flight(rm, f);
		pthread_mutex_unlock(&rm->mu);
		/* The fetch it waited for made the shared dir. */
		if (rc == 0 && !to->ino && (target_of(fs, dir, kind, to) < 0 ||
					    !to->ino))
			rc = -ENOENT;
		return rc;
	}
	pthread_mutex_unlock(&rm->mu);
	/* A fetch of it may have landed it just before this one began. */
	rc = to->ino ? tcfs_ns_lookup(fs->store, to->ino, nm->s, &here)
		     : -ENOENT;
	if (rc < 0)
		rc = fetch_and_land(fs, to, nm, kind);
	if (rc == 0) {
		drop_own(fs, dir, kind, to);
		atomic_fetch_add(&rm->kind_hits[kind], 1);
	}
	if (rc == -ENOENT || rc == -EBADMSG || rc == -EPERM ||
	    rc == -EEXIST || rc == -EFBIG)
		remember_miss(rm, h);
	pthread_mutex_lock(&rm->mu);
	f->done = 1;
	f->rc = rc;
	if (f->waiters == 0)
		f->h = 0;
	pthread_cond_broadcast(&rm->cv);
	pthread_mutex_unlock(&rm->mu);
	return rc;
}

int fs_remote_above(struct tcfs_fs *fs, uint64_t parent,
		    const struct fs_name *nm, struct tcfs_node *n)
{
	struct tcfs_node p, to;
	enum tcfs_probe k;

	if (!fs->remote ||
	    tcfs_remote_cfg_of(fs->remote->r)->inductor == TCFS_INDUCTOR_OFF ||
	    tcfs_ns_get(fs->store, parent, &p) < 0)
		return -ENOENT;
	/* A vLLM rank dir is fetched whole, as one pack. */
	k = tcfs_entry_rank_dir(fs->store, &p, nm->s);
	if (k) {
		if (fs_remote_fetch(fs, &p, nm, k, &to) < 0)
			return 1;
		return tcfs_ns_lookup(fs->store, to.ino, nm->s, n) < 0 ? 1 : 0;
	}
	k = tcfs_entry_above(fs->store, &p, nm->s);
	if (!k || tcfs_probe_kind(k)->remote == TCFS_ENTRY_REMOTE_NONE)
		return -ENOENT;
	return made(fs, parent, nm->s, n) < 0 ? 1 : 0;
}

/* After a rename that landed nm in dir: what is to be published, queued.
 * Never waits: a full queue drops the job, counted. */
static void enqueue(struct fs_remote *rm, uint64_t dir, const char *key,
		    const char *name, int group, enum tcfs_probe kind)
{
	struct job *j;

	pthread_mutex_lock(&rm->mu);
	/* A dir published whole is read when its turn comes: once queued,
	 * a later write in it adds nothing. */
	for (size_t i = 0; kind && !group && i < rm->qlen; i++) {
		j = &rm->q[(rm->qhead + i) % rm->qmax];
		if (j->kind == kind && j->dir == dir &&
		    strcmp(j->name, name) == 0) {
			pthread_mutex_unlock(&rm->mu);
			return;
		}
	}
	if (rm->qlen == rm->qmax) {
		pthread_mutex_unlock(&rm->mu);
		atomic_fetch_add(&tcfs_remote_stats(rm->r)->queue_drops, 1);
		return;
	}
	j = &rm->q[(rm->qhead + rm->qlen++) % rm->qmax];
	j->dir = dir;
	j->group = group;
	j->kind = kind;
	snprintf(j->key, sizeof(j->key), "%s", key);
	snprintf(j->name, sizeof(j->name), "%s", name);
	pthread_cond_signal(&rm->qcv);
	pthread_mutex_unlock(&rm->mu);
}

/* A key dir moved into place (Inductor's os.replace): every kernel and
 * module in it. */
static void enqueue_dir(struct fs_remote *rm, struct tcfs_fs *fs,
			const struct tcfs_node *d)
{
	struct tcfs_node *kids = NULL;
	char kname[TCFS_NAME_MAX + 1];
	size_t n = 0;

	if (tcfs_ns_list(fs->store, d->ino, 0, 0, &kids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		enum tcfs_artifact a = tcfs_name_artifact(kids[i].name);

		if (kids[i].kind != TCFS_FILE ||
		    !tcfs_store_trusts(fs->store, kids[i].uid, kids[i].gid))
			continue;
		if (a == TCFS_ART_GROUP &&
		    tcfs_name_group_kernel(kids[i].name, kname,
					   sizeof(kname)) == 0)
			enqueue(rm, d->ino, d->name, kname, 1, 0);
		else if (a == TCFS_ART_MODULE || a == TCFS_ART_AUTOTUNE)
			enqueue(rm, d->ino, d->name, kids[i].name, 0, 0);
	}
	free(kids);
}

/* Whether what the key dir d holds may go to the fleet: decided by who
 * wrote it, never by where it sits.  Its kernels marked shared
 * (kernel.h), and each file to publish written by a trusted user (a
 * module has no row to mark). */
static int shared(struct tcfs_fs *fs, const struct tcfs_node *d,
		  const struct tcfs_node *file)
{
	int yes = 0;

	if (tcfs_kernel_dir_shared(fs->store, d->ino, &yes) < 0 || !yes)
		return 0;
	return !file || tcfs_store_trusts(fs->store, file->uid, file->gid);
}

/* An entry's file renamed into its key dir (Inductor's write_atomic):
 * queued when the kind's entries travel as PyTorch's and its writer is
 * trusted (an entry has no row to mark).  1 when nm was an entry. */
static int entry_landed(struct tcfs_fs *fs, uint64_t dir,
			const struct fs_name *nm)
{
	struct tcfs_node d, up, n;
	enum tcfs_probe kind;

	if (tcfs_remote_cfg_of(fs->remote->r)->inductor == TCFS_INDUCTOR_OFF ||
	    tcfs_ns_get(fs->store, dir, &d) < 0 ||
	    tcfs_ns_get(fs->store, d.parent, &up) < 0)
		return 0;
	kind = tcfs_entry_kind(fs->store, &up, d.name);
	if (!kind || !tcfs_probe_kind(kind)->holds_entries ||
	    tcfs_probe_kind(kind)->remote != TCFS_ENTRY_REMOTE_PT2)
		return 0;
	if (tcfs_ns_lookup(fs->store, dir, nm->s, &n) == 0 &&
	    n.kind == TCFS_FILE &&
	    tcfs_store_trusts(fs->store, n.uid, n.gid))
		enqueue(fs->remote, dir, d.name, nm->s, 0, kind);
	return 1;
}

/* A file written or renamed into dir: when dir is a vLLM rank dir, or
 * lies in one, the rank dir is queued, to go whole as one pack.  1 when
 * it was such a dir. */
static int rank_written(struct tcfs_fs *fs, uint64_t dir)
{
	char key[2 * TCFS_NAME_MAX + 2];
	struct tcfs_node d, p, up;

	if (tcfs_remote_cfg_of(fs->remote->r)->inductor == TCFS_INDUCTOR_OFF ||
	    tcfs_ns_get(fs->store, dir, &d) < 0)
		return 0;
	for (int i = 0; i < TCFS_PACK_DEPTH && d.ino != TCFS_ROOT_INO; i++) {
		enum tcfs_probe k;

		if (tcfs_ns_get(fs->store, d.parent, &p) < 0)
			return 0;
		k = tcfs_entry_rank_dir(fs->store, &p, d.name);
		if (k) {
			if (pack_key(fs, &p, &up, key, sizeof(key)) == 0)
				enqueue(fs->remote, d.ino, key, d.name, 0, k);
			return 1;
		}
		d = p;
	}
	return 0;
}

void fs_remote_written(struct tcfs_fs *fs, uint64_t ino)
{
	struct tcfs_node n;

	if (fs->remote &&
	    tcfs_remote_cfg_of(fs->remote->r)->publish != TCFS_PUBLISH_OFF &&
	    tcfs_remote_cfg_of(fs->remote->r)->inductor != TCFS_INDUCTOR_OFF &&
	    tcfs_ns_get(fs->store, ino, &n) == 0 && n.kind == TCFS_FILE)
		rank_written(fs, n.parent);
}

void fs_remote_landed(struct tcfs_fs *fs, uint64_t dir,
		      const struct fs_name *nm)
{
	struct fs_remote *rm = fs->remote;
	struct tcfs_node d, n;
	int key;

	if (!rm || tcfs_remote_cfg_of(rm->r)->publish == TCFS_PUBLISH_OFF)
		return;
	if (!nm->temp && rank_written(fs, dir))
		return;
	if (!nm->temp && nm->art == TCFS_ART_OTHER &&
	    entry_landed(fs, dir, nm))
		return;
	if (nm->temp || (nm->art != TCFS_ART_GROUP &&
			 nm->art != TCFS_ART_MODULE &&
			 nm->art != TCFS_ART_AUTOTUNE &&
			 nm->art != TCFS_ART_OTHER))
		return;
	if (nm->art == TCFS_ART_OTHER) {
		if (tcfs_ns_lookup(fs->store, dir, nm->s, &n) == 0 &&
		    n.kind == TCFS_DIR && shared(fs, &n, NULL) &&
		    tcfs_kernel_is_key_dir(fs->store, n.ino, &key) == 0 && key)
			enqueue_dir(rm, fs, &n);
		return;
	}
	if (tcfs_ns_get(fs->store, dir, &d) < 0 ||
	    tcfs_ns_lookup(fs->store, dir, nm->s, &n) < 0 ||
	    !shared(fs, &d, &n) ||
	    tcfs_kernel_is_key_dir(fs->store, dir, &key) < 0 || !key)
		return;
	if (nm->art == TCFS_ART_GROUP)
		enqueue(rm, dir, d.name, nm->kernel, 1, 0);
	else
		enqueue(rm, dir, d.name, nm->s, 0, 0);
}

static int publish(struct tcfs_remote *r, struct tcfs_store *s,
		   const struct job *j)
{
	const struct tcfs_probe_kind *k = j->kind ? tcfs_probe_kind(j->kind)
						   : NULL;

	if (k && k->remote == TCFS_ENTRY_REMOTE_TCFS)
		return tcfs_remote_publish_pack(r, s, j->dir, k->remote_id,
						j->key, j->name);
	if (k)
		return tcfs_remote_publish_entry(r, s, j->dir, k->remote_id,
						 j->key, j->name);
	if (j->group)
		return tcfs_remote_publish_kernel(r, s, j->dir, j->key,
						  j->name);
	return tcfs_remote_publish_file(r, s, j->dir, j->key, j->name);
}

/* A publish the remote was not asked (breaker open, no connection free:
 * its one call counted as skipped) is dropped: counted so, and not as
 * skipped, which counts the misses the remote was not asked about, so
 * that it adds up with the probes a user made. */
static void not_asked(struct fs_remote *rm)
{
	struct tcfs_remote_stats *st = tcfs_remote_stats(rm->r);

	atomic_fetch_sub(&st->skipped, 1);
	atomic_fetch_add(&st->queue_drops, 1);
}

static void *publisher(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_remote *rm = fs->remote;
	struct job j;
	int rc;

	pthread_mutex_lock(&rm->mu);
	for (;;) {
		while (!rm->stop && rm->qlen == 0)
			pthread_cond_wait(&rm->qcv, &rm->mu);
		if (rm->stop)
			break;
		j = rm->q[rm->qhead];
		rm->qhead = (rm->qhead + 1) % rm->qmax;
		rm->qlen--;
		pthread_mutex_unlock(&rm->mu);
		tcfs_err_clear();
		rc = publish(rm->r, fs->store, &j);
		if (rc == -EAGAIN || rc == -EBUSY)
			not_asked(rm);
		else if (rc < 0)
			syslog(LOG_WARNING, "remote: %s", tcfs_err_msg()[0]
				       ? tcfs_err_msg() : strerror(-rc));
		pthread_mutex_lock(&rm->mu);
	}
	pthread_mutex_unlock(&rm->mu);
	return NULL;
}

int fs_remote_start(struct tcfs_fs *fs, const struct tcfs_remote_cfg *cfg)
{
	struct fs_remote *rm = calloc(1, sizeof(*rm));
	pthread_condattr_t ca;
	int rc;

	if (!rm)
		return -ENOMEM;
	rm->qmax = (size_t)cfg->queue_max;
	rm->q = calloc(rm->qmax, sizeof(*rm->q));
	rc = rm->q ? tcfs_remote_open(cfg, &rm->r) : -ENOMEM;
	if (rc < 0) {
		free(rm->q);
		free(rm);
		return rc;
	}
	pthread_mutex_init(&rm->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rm->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&rm->qcv, NULL);
	rm->breaker_saved = -1;
	for (int k = 1; k <= TCFS_PROBE_KINDS; k++)
		tcfs_remote_kind_fig(k, rm->kind_fig[k],
				     sizeof(rm->kind_fig[k]));
	fs->remote = rm;
	rc = fs_thread_start(&rm->thread, publisher, fs);
	rm->started = rc == 0;
	return rc;
}

void fs_remote_stop(struct tcfs_fs *fs)
{
	struct fs_remote *rm = fs->remote;

	if (!rm)
		return;
	pthread_mutex_lock(&rm->mu);
	rm->stop = 1;
	pthread_cond_signal(&rm->qcv);
	pthread_mutex_unlock(&rm->mu);
	if (rm->started)
		pthread_join(rm->thread, NULL);
	fs_remote_tick(fs);
	fs->remote = NULL;
	tcfs_remote_close(rm->r);
	pthread_cond_destroy(&rm->cv);
	pthread_cond_destroy(&rm->qcv);
	pthread_mutex_destroy(&rm->mu);
	free(rm->q);
	free(rm);
}

/* The hits per kind, each into its counter (tcfs_remote_kind_fig). */
static void tick_kinds(struct tcfs_fs *fs, struct fs_remote *rm)
{
	for (int k = 1; k <= TCFS_PROBE_KINDS; k++) {
		uint64_t now = atomic_load(&rm->kind_hits[k]);
		const char *name = rm->kind_fig[k];
		uint64_t d = now - rm->kind_saved[k];

		if (d && name[0] &&
		    tcfs_counters_add(fs->store, &name, &d, 1) == 0)
			rm->kind_saved[k] = now;
	}
}

void fs_remote_tick(struct tcfs_fs *fs)
{
	struct fs_remote *rm = fs->remote;
	uint64_t now[TCFS_REMOTE_FIGS], delta[TCFS_REMOTE_FIGS];
	int changed = 0, breaker;

	if (!rm)
		return;
	tcfs_remote_figs(rm->r, now);
	for (size_t i = 0; i < TCFS_REMOTE_FIGS; i++) {
		delta[i] = now[i] - rm->saved[i];
		changed |= delta[i] != 0;
	}
	if (changed && tcfs_counters_add(fs->store, tcfs_remote_fig_names,
					 delta, TCFS_REMOTE_FIGS) == 0)
		memcpy(rm->saved, now, sizeof(now));
	tick_kinds(fs, rm);
	/* Saved as it changes (-1 at the start), so stats can tell. */
	breaker = (int)tcfs_remote_breaker(rm->r);
	if (breaker != rm->breaker_saved &&
	    tcfs_counter_set(fs->store, "remote_breaker", breaker) == 0)
		rm->breaker_saved = breaker;
}

int fs_remote_pull(struct tcfs_fs *fs, const char *key, const char *name)
{
	char grp[TCFS_NAME_MAX + 16];
	struct tcfs_node dir, n;
	struct fs_name nm;
	int rc;

	if (!fs->remote)
		return tcfs_err_set(-ENOTCONN, "the mount has no remote "
				    "(-o remote, or tcfs config remote)");
	if (!tcfs_name_is_key(key) ||
	    snprintf(grp, sizeof(grp), "__grp__%s.json", name) >=
		    (int)sizeof(grp))
		return tcfs_err_set(-EINVAL, "%s/%s: not a kernel's name",
				    key, name);
	rc = tcfs_ns_lookup(fs->store, TCFS_ROOT_INO, key, &dir);
	if (rc == -ENOENT) {
		rc = tcfs_ns_mkdir(fs->store, TCFS_ROOT_INO, key, 0755,
				   tcfs_ns_now(), NULL, &dir);
		/* The kernel may hold a miss of the name. */
		if (rc == 0)
			fs_events_inval(fs, TCFS_ROOT_INO, key);
	}
	if (rc == 0 && dir.kind != TCFS_DIR)
		rc = tcfs_err_set(-ENOTDIR, "%s: not a directory", key);
	if (rc < 0)
		return rc;
	if (tcfs_ns_lookup(fs->store, dir.ino, grp, &n) == 0)
		return 0;
	fs_name_of(&nm, grp);
	rc = fetch_and_land(fs, &dir, &nm, TCFS_PROBE_KERNEL);
	return rc < 0 ? rc : 1;
}

/* {"url": null}: the answer of a mount with no remote. */
static int no_remote(cJSON **out)
{
	*out = cJSON_CreateObject();
	return *out && cJSON_AddNullToObject(*out, "url") ? 0 : -ENOMEM;
}

int fs_remote_status(struct tcfs_fs *fs, const struct tcfs_kernel_filter *f,
		     cJSON **out)
{
	if (!fs->remote)
		return no_remote(out);
	return tcfs_remote_survey_status(fs->remote->r, fs->store, f, out);
}

int fs_remote_list(struct tcfs_fs *fs, const struct tcfs_kernel_filter *f,
		   cJSON **out)
{
	struct tcfs_remote_kernel *v = NULL;
	char url[512];
	size_t n = 0;
	cJSON *items;
	int rc;

	if (!fs->remote)
		return no_remote(out);
	rc = tcfs_remote_survey_list(fs->remote->r, f, &v, &n);
	tcfs_remote_cfg_url_of(tcfs_remote_cfg_of(fs->remote->r), url,
			       sizeof(url));
	*out = rc < 0 ? NULL : cJSON_CreateObject();
	items = *out && cJSON_AddStringToObject(*out, "url", url)
			? cJSON_AddArrayToObject(*out, "items") : NULL;
	for (size_t i = 0; items && i < n; i++) {
		cJSON *it = cJSON_CreateObject();

		if (it && cJSON_AddStringToObject(it, "key", v[i].key) &&
		    cJSON_AddStringToObject(it, "name", v[i].name) &&
		    cJSON_AddItemToArray(items, it))
			continue;
		cJSON_Delete(it);
		items = NULL;
	}
	free(v);
	if (rc == 0 && !items)
		rc = -ENOMEM;
	return rc;
}
