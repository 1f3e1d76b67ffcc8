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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <xxhash.h>

#include "index/base/err.h"
#include "index/model/event.h"
#include "index/model/kernel.h"
#include "index/remote/land.h"
#include "index/remote/publish.h"
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
	char name[TCFS_NAME_MAX + 1];	/* kernel NAME or module FILE */
	int group;
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

/* Fetches what the probe nm of dir names and lands it: 0 when it is
 * here now.  A dir of ino 0 (target_of) is made in its parent first. */
static int fetch_and_land(struct tcfs_fs *fs, struct tcfs_node *dir,
			  const struct fs_name *nm, enum tcfs_probe kind)
{
	struct tcfs_fetched got = { 0 };
	const char *landed[TCFS_WIRE_FILES_MAX + 1];
	size_t n = 0;
	int rc;

	rc = kind == TCFS_PROBE_KERNEL
		     ? tcfs_remote_fetch_kernel(fs->remote->r, dir->name,
						nm->kernel, &got)
		     : tcfs_remote_fetch_file(fs->remote->r, dir->name, nm->s,
					      &got);
	if (rc == 0 && !dir->ino) {
		rc = tcfs_ns_mkdir(fs->store, dir->parent, dir->name, 0755,
				   tcfs_ns_now(), NULL, dir);
		if (rc == -EEXIST)
			rc = tcfs_ns_lookup(fs->store, dir->parent, dir->name,
					    dir);
	}
	if (rc == 0)
		rc = tcfs_remote_land(fs->store, dir->ino, &got, landed, &n);
	/* The kernel may hold misses of the names that are here now. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		fs_events_inval(fs, dir->ino, landed[i]);
		fs_changed(fs, dir->ino, FS_KIND_STORE, landed[i]);
	}
	if (rc < 0 && rc != -ENOENT && rc != -EAGAIN && rc != -EBUSY)
		syslog(LOG_WARNING, "remote: %s/%s: %s", dir->name, nm->s,
		       tcfs_err_msg()[0] ? tcfs_err_msg() : strerror(-rc));
	tcfs_fetched_free(&got);
	return rc;
}

/* Whether a probe of nm may ask the remote: a kernel, an autotune result,
 * and a launcher module only when remote_modules says so (it is code). */
static int askable(const struct tcfs_fs *fs, const struct fs_name *nm,
		   enum tcfs_probe kind)
{
	if (kind == TCFS_PROBE_KERNEL)
		return nm->group;
	if (nm->art == TCFS_ART_MODULE)
		return tcfs_remote_cfg_of(fs->remote->r)->modules;
	return nm->art == TCFS_ART_AUTOTUNE;
}

/* Where a kernel fetched for a probe in dir lands: dir, or when dir is a
 * user's own key dir (users.c), the shared one of its name, made if need
 * be; the remote's kernels are shared, as remote_trust vetted them.  The
 * user's own dir, empty, then goes: its name is the shared one again. */
static int target_of(struct tcfs_fs *fs, const struct tcfs_node *dir,
		     struct tcfs_node *to)
{
	struct tcfs_node own;
	int rc;

	*to = *dir;
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
		     const struct tcfs_node *to)
{
	if (to->ino != dir->ino)
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

	if (!rm || !askable(fs, nm, kind) || target_of(fs, dir, to) < 0)
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
		if (rc == 0 && !to->ino && (target_of(fs, dir, to) < 0 ||
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
	if (rc == 0)
		drop_own(fs, dir, to);
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

/* After a rename that landed nm in dir: what is to be published, queued.
 * Never waits: a full queue drops the job, counted. */
static void enqueue(struct fs_remote *rm, uint64_t dir, const char *key,
		    const char *name, int group)
{
	struct job *j;

	pthread_mutex_lock(&rm->mu);
	if (rm->qlen == rm->qmax) {
		pthread_mutex_unlock(&rm->mu);
		atomic_fetch_add(&tcfs_remote_stats(rm->r)->queue_drops, 1);
		return;
	}
	j = &rm->q[(rm->qhead + rm->qlen++) % rm->qmax];
	j->dir = dir;
	j->group = group;
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
			enqueue(rm, d->ino, d->name, kname, 1);
		else if (a == TCFS_ART_MODULE || a == TCFS_ART_AUTOTUNE)
			enqueue(rm, d->ino, d->name, kids[i].name, 0);
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

void fs_remote_landed(struct tcfs_fs *fs, uint64_t dir,
		      const struct fs_name *nm)
{
	struct fs_remote *rm = fs->remote;
	struct tcfs_node d, n;
	int key;

	if (!rm || tcfs_remote_cfg_of(rm->r)->publish == TCFS_PUBLISH_OFF)
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
		enqueue(rm, dir, d.name, nm->kernel, 1);
	else
		enqueue(rm, dir, d.name, nm->s, 0);
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
		rc = j.group ? tcfs_remote_publish_kernel(rm->r, fs->store,
							  j.dir, j.key, j.name)
			     : tcfs_remote_publish_file(rm->r, fs->store, j.dir,
							j.key, j.name);
		if (rc < 0 && rc != -EAGAIN && rc != -EBUSY)
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
