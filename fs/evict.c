/*
 * evict: the size limit (config max-size, -o max_size), every removal
 * of kernels the mount makes (tcfs prune through ctl.c), and the blobs
 * that no file names any more.
 *
 * A thread of its own checks the store's size once a second: one walk of
 * objects/ when a limit is first set, then the bytes the blob store
 * created and freed since (cas.h), so a check costs nothing.  Past the
 * limit it evicts whole kernels, least recently used first, down to 90%
 * of it, skipping any whose files a process holds open or mapped (read
 * from /proc).  A kernel out of the tree is dropped from the kernel's
 * caches; its nodes that the kernel does not hold go at once, the others
 * when it forgets them, and their blobs then, by a later pass; a prune
 * of kernels no process holds waits that moment (milliseconds) and frees
 * them itself, so that its figures and tcfs info are right at once.
 *
 * Blobs that no file in the tree names wait in a list (pending) until
 * they can go, and count as freed meanwhile: the size the limit is
 * compared with is that of the blobs files name.  Those of removed
 * files the kernel still holds; a file's old blob when it is rewritten
 * in place, for the put grace (a read may have found the row naming it
 * just before); and orphans, named by no row at all, as a crash between
 * a removal's commit and its frees leaves them.  The thread looks for
 * orphans when the mount starts and every hour after, in batches with
 * pauses between them, and takes each only once its bytes are older
 * than the put grace (cas.h).  The limit evicts nothing before the first
 * look is done.
 *
 * Each user may have a share of the limit (config user-max-size, -o
 * user_max_size): the bytes of the kernels that user wrote (kernel.h),
 * and of the user's files that no kernel holds, which cannot be evicted
 * (plain files, key dirs with no group file).  A user past it loses their
 * own least recently used kernels first, down to 90% of the share, by the
 * same pass; while none of them can go (all in use, or none left), that
 * user's writes fail with EDQUOT, and so does a write that would take the
 * file written and the user's files no kernel holds past the share: it is
 * checked as it comes, not a second later, so that a user cannot write a
 * flood between two passes.  Root and the mount's owner have no share,
 * nor have kernels of no user (a fetch, an import).
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "index/blob/blobset.h"
#include "index/blob/cas.h"
#include "index/store/config.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/maint/gc.h"
#include "index/model/kernel.h"
#include "index/maint/prune.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "fs.h"
#include "priv.h"

/* How often the size is checked, and the limit read again. */
#define EVICT_EVERY_MS 1000
/* Users' files that no kernel holds, a scan of every node, are counted
 * again when blobs came or went, else this often (a file written with
 * bytes stored already, or removed with bytes another file names); and
 * never sooner than this many times the last count took, so that on a
 * large store the counts take a tenth of a core at most. */
#define LOOSE_EVERY_MS (60 * 1000)
#define LOOSE_COST_TIMES 10
/* Evicting stops at this share of the limit, so that it runs in bursts,
 * not at every new blob. */
#define EVICT_LOW_PCT 90
/* A kernel hit or made this recently is being loaded, or about to be:
 * its probe is answered before its files are read. */
#define EVICT_GRACE_NS (10 * 1000000000LL)
/* A blob still named by a node the kernel holds is tried again this many
 * passes (then the next look for orphans finds it, or tcfs gc). */
#define PENDING_TRIES 600
/* How long a prune waits for the kernel to forget the nodes of kernels
 * no process holds (it takes milliseconds), in naps of FORGET_NAP_NS. */
#define FORGET_WAIT_NS (3 * 1000000000LL)
#define FORGET_NAP_NS (5 * 1000000LL)
/* At most this many blobs wait, and as many old blobs of rewritten files
 * are handed over between two passes: more are left to the next look. */
#define PENDING_MAX 65536
/* Orphans: looked for this often, this many blobs at a time, with this
 * pause between two batches. */
#define SWEEP_EVERY_NS (3600 * 1000000000LL)
#define SWEEP_BATCH 1024
#define SWEEP_PAUSE_MS 10

/* Why a blob waits. */
enum pend_why {
	PEND_REMOVED,		/* pruned; nodes the kernel holds name it */
	PEND_EVICTED,		/* the same by the limit: counted as evicted */
	PEND_REWRITTEN,		/* a file's content before a rewrite */
	PEND_ORPHAN,		/* named by no row when found */
};

struct pending {
	struct tcfs_hash h;
	uint64_t size;
	int64_t not_before_ns;	/* wall clock, as tcfs_ns_now */
	unsigned tries;
	enum pend_why why;
};

/* A rewritten file's old blob, as a request thread hands it over. */
struct rewritten {
	struct tcfs_hash h;
	int64_t at_ns;
};

struct fs_evict {
	pthread_t thread;
	pthread_mutex_t mu;	/* guards the fields below, and one removal
				 * at a time (eviction or prune) */
	pthread_cond_t cv;
	int stop;
	int stopped;		/* the thread is joined */
	int64_t opt_max;	/* -o max_size, or -1: the store's setting */
	int64_t opt_user_max;	/* -o user_max_size, or -1: the same */
	int64_t base;		/* stored bytes at the walk, less the growth
				 * then; -1 until walked */
	struct pending *pending;
	size_t npending, pcap;
	struct tcfs_blobset pset;	/* the blobs in pending */
	int64_t pending_bytes;	/* their sizes: as good as freed */
	int64_t pending_saved;	/* what the counter says (-1: unsaved) */
	dev_t dev;		/* the mount's, as /proc shows its files */
	int have_dev;
	int64_t last_pass_ms;	/* CLOCK_MONOTONIC */
	struct tcfs_cas_walk *walk;	/* the look for orphans under way */
	int swept;		/* one look ended: orphans are pending */
	int64_t sweep_at_ns;	/* the next look */
	size_t sweep_found;
	uint64_t sweep_bytes;
	pthread_mutex_t in_mu;	/* guards the three below; taken inside
				 * mu by the evictor only, and alone by
				 * requests, so they never wait for a
				 * pass */
	struct rewritten *in;
	size_t nin, incap;
	uid_t *over;		/* users past their share, with nothing left
				 * to evict: their writes get EDQUOT */
	size_t nover;
	int64_t share;		/* the share the last pass held to */
	struct tcfs_kernel_user *loose;	/* each user's bytes that cannot
					 * be evicted, by uid, as counted */
	size_t nloose;
	int64_t loose_growth;	/* the blob store's growth, */
	int64_t loose_pending;	/* the bytes pending, */
	int64_t loose_ms;	/* and the time, of that count */
	int64_t loose_cost_ms;	/* what it took */
};

/* Files that processes hold open (by path) or mapped (by inode). */
struct held {
	char **paths;
	size_t npaths, pcap;
	uint64_t *inos;
	size_t ninos, icap;
};

static void held_free(struct held *h)
{
	for (size_t i = 0; i < h->npaths; i++)
		free(h->paths[i]);
	free(h->paths);
	free(h->inos);
}

static void held_maps(struct fs_evict *e, struct held *h, int pid)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		uint64_t *slot;

		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) != 3 ||
		    makedev(maj, min) != e->dev || ino == 0)
			continue;
		slot = tcfs_vec_push(&h->inos, &h->ninos, &h->icap,
				     sizeof(*slot));
		if (slot)
			*slot = fs_ino_row(ino);
	}
	fclose(f);
}

static void held_fds(struct tcfs_fs *fs, struct held *h, int pid)
{
	char path[64], target[4096 + 64];
	size_t rootlen = strlen(fs->root);
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, target,
				       sizeof(target) - 1);
		char **slot;

		if (n <= 0 || (size_t)n <= rootlen)
			continue;
		target[n] = '\0';
		if (strncmp(target, fs->root, rootlen) != 0 ||
		    target[rootlen] != '/')
			continue;
		slot = tcfs_vec_push(&h->paths, &h->npaths, &h->pcap,
				     sizeof(*slot));
		if (slot && !(*slot = strdup(target + rootlen + 1)))
			h->npaths--;
	}
	closedir(d);
}

/* Reads what every process holds on this mount.  Best effort: a process
 * that comes or goes meanwhile is missed, and its files stay readable
 * anyway (prune.h). */
static void held_scan(struct tcfs_fs *fs, struct held *h)
{
	struct fs_evict *e = fs->evict;
	struct dirent *de;
	DIR *d = opendir("/proc");

	memset(h, 0, sizeof(*h));
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || pid == getpid())
			continue;
		if (e->have_dev)
			held_maps(e, h, pid);
		held_fds(fs, h, pid);
	}
	closedir(d);
}

/* Whether a path under the mount lies in dir (its path "a/KEY"), in the
 * cache itself, in binary-only/ or in the browse tree. */
static int path_in(const char *p, const char *dir)
{
	static const char *const trees[] = { "binary-only/",
					     FS_BROWSE_DIR "/" };
	size_t n = strlen(dir);

	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++)
		if (strncmp(p, trees[t], strlen(trees[t])) == 0)
			p += strlen(trees[t]);
	return strncmp(p, dir, n) == 0 && p[n] == '/';
}

static int held_by(struct tcfs_fs *fs, const struct held *h,
		   const struct tcfs_prune_victim *v)
{
	struct tcfs_node *kids = NULL;
	char dir[4096];
	size_t nk = 0;
	int yes = 0;

	if (h->npaths && tcfs_ns_path(fs->store, v->dir_ino, dir,
				      sizeof(dir)) == 0)
		for (size_t i = 0; !yes && i < h->npaths; i++)
			yes = path_in(h->paths[i], dir);
	if (!yes && h->ninos &&
	    tcfs_ns_list(fs->store, v->dir_ino, 0, 0, &kids, &nk) == 0)
		for (size_t i = 0; !yes && i < nk; i++)
			for (size_t j = 0; !yes && j < h->ninos; j++)
				yes = kids[i].ino == h->inos[j];
	free(kids);
	return yes;
}

/* A removal's state: an eviction pass, or a prune (held and over
 * unused). */
struct pass {
	struct tcfs_fs *fs;
	struct held held;
	int64_t over;		/* bytes still to go */
	struct tcfs_prune_report *r;
	uint64_t *limbo;	/* removed nodes the kernel held */
	size_t nlimbo, lcap;
};

static void release(void *ctx)
{
	fs_probe_unlock(((struct pass *)ctx)->fs);
}

/* A file's stored writes that its row does not name yet (a commit
 * failed, to be tried again) are no orphan: every blob the evictor
 * frees is asked here (prune.h's held), whatever made it free. */
static int held_by_files(void *ctx, const struct tcfs_hash *h)
{
	return fs_files_hold(((struct pass *)ctx)->fs, h);
}

/* A prune asked for: every kernel chosen, each alone with the probes. */
static int take(void *ctx, const struct tcfs_prune_victim *v)
{
	(void)v;
	fs_probe_lock(((struct pass *)ctx)->fs, 1);
	return 1;
}

/* The kernel drops the key dir's entry (in both views); nodes it never
 * held go now. */
static void removed(void *ctx, const struct tcfs_prune_victim *v,
		    const struct tcfs_prune_done *d)
{
	struct tcfs_fs *fs = ((struct pass *)ctx)->fs;

	fs_events_inval(fs, d->parent, v->key);
	fs_changed(fs, d->parent, FS_KIND_STORE, v->key);
	for (size_t i = 0; i < d->nnodes; i++) {
		struct pass *p = ctx;
		uint64_t *slot;

		if (!fs_inode_known(fs, d->nodes[i])) {
			tcfs_ns_forget(fs->store, d->nodes[i]);
			continue;
		}
		slot = tcfs_vec_push(&p->limbo, &p->nlimbo, &p->lcap,
				     sizeof(*slot));
		if (slot)
			*slot = d->nodes[i];
	}
}

/* Lets h wait, once; a blob that does not fit waits for the next look
 * for orphans (or tcfs gc). */
static void pend(struct fs_evict *e, const struct tcfs_hash *h,
		 uint64_t size, int64_t not_before_ns, enum pend_why why)
{
	struct pending *p;

	if (e->npending >= PENDING_MAX || tcfs_blobset_get(&e->pset, h))
		return;
	p = tcfs_vec_push(&e->pending, &e->npending, &e->pcap, sizeof(*p));
	if (!p)
		return;
	if (tcfs_blobset_set(&e->pset, h, 1) < 0) {
		e->npending--;
		return;
	}
	p->h = *h;
	p->size = size;
	p->not_before_ns = not_before_ns;
	p->tries = 0;
	p->why = why;
	e->pending_bytes += (int64_t)size;
}

/* The pending bytes, saved as they change, for tcfs info: the blobs on
 * disk that no file names, freed within a minute, are no part of the
 * store's size to a user (TCFS_PENDING_COUNTER, fs.h). */
static void save_pending(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;

	if (e->pending_bytes != e->pending_saved &&
	    tcfs_counter_set(fs->store, TCFS_PENDING_COUNTER,
			     e->pending_bytes) == 0)
		e->pending_saved = e->pending_bytes;
}

/* Keeps the blobs a removal could not free yet, for later passes. */
static void keep_pending(struct tcfs_fs *fs,
			 const struct tcfs_prune_report *r, int evicted)
{
	for (size_t i = 0; i < r->npending; i++) {
		uint64_t size;

		if (tcfs_cas_stat(tcfs_store_cas(fs->store), &r->pending[i],
				  &size) == 0)
			pend(fs->evict, &r->pending[i], size, 0,
			     evicted ? PEND_EVICTED : PEND_REMOVED);
	}
}

void fs_evict_rewritten(struct tcfs_fs *fs, const struct tcfs_hash *old)
{
	struct fs_evict *e = fs->evict;
	struct rewritten *r = NULL;

	if (!e)
		return;
	pthread_mutex_lock(&e->in_mu);
	if (e->nin < PENDING_MAX)
		r = tcfs_vec_push(&e->in, &e->nin, &e->incap, sizeof(*r));
	if (r) {
		r->h = *old;
		r->at_ns = tcfs_ns_now();
	}
	pthread_mutex_unlock(&e->in_mu);
}

/* Moves the old blobs handed over to pending: each waits the put grace,
 * unless another file in the tree names it. */
static void take_rewritten(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;
	struct tcfs_cas *cas = tcfs_store_cas(fs->store);
	struct rewritten *in;
	size_t n;

	pthread_mutex_lock(&e->in_mu);
	in = e->in;
	n = e->nin;
	e->in = NULL;
	e->nin = e->incap = 0;
	pthread_mutex_unlock(&e->in_mu);
	for (size_t i = 0; i < n; i++) {
		uint64_t size;

		if (tcfs_cas_stat(cas, &in[i].h, &size) == 0 && size > 0 &&
		    tcfs_gc_live(fs->store, &in[i].h) == 0)
			pend(e, &in[i].h, size,
			     in[i].at_ns + TCFS_CAS_GRACE_NS, PEND_REWRITTEN);
	}
	free(in);
}

/* Whether p waits on after this pass: freed, gone, or named by a file
 * in the tree again, it leaves.  *evicted grows by what the limit
 * evicted.  At the end (final) a rewritten file's old blob is due: no
 * read is left to find it. */
static int still_pending(struct tcfs_fs *fs, struct pending *p, int64_t now,
			 int final, uint64_t *evicted)
{
	int due = p->not_before_ns <= now ||
		  (final && p->why == PEND_REWRITTEN);
	struct pass pass = { .fs = fs };
	struct tcfs_prune_hooks keeper = { .held = held_by_files,
					   .ctx = &pass };
	uint64_t got = 0, size;

	if (due && tcfs_prune_free(fs->store, &p->h, 1, &keeper, &got,
				   NULL) == 0 &&
	    got) {
		if (p->why == PEND_EVICTED)
			*evicted += got;
		return 0;
	}
	if (tcfs_cas_stat(tcfs_store_cas(fs->store), &p->h, &size) < 0 ||
	    tcfs_gc_live(fs->store, &p->h) == 1)
		return 0;
	return !due || ++p->tries < PENDING_TRIES;
}

/* Frees pending blobs that may go now; returns the bytes of those the
 * limit evicted. */
static uint64_t free_pending(struct tcfs_fs *fs, int final)
{
	struct fs_evict *e = fs->evict;
	int64_t now = tcfs_ns_now();
	uint64_t evicted = 0;
	size_t kept = 0;

	/* What unnamed them committed first (prune.h). */
	if (tcfs_store_sync(fs->store) < 0)
		return 0;
	for (size_t i = 0; i < e->npending; i++) {
		if (still_pending(fs, &e->pending[i], now, final, &evicted))
			e->pending[kept++] = e->pending[i];
		else
			e->pending_bytes -= (int64_t)e->pending[i].size;
	}
	if (kept < e->npending) {
		/* Out of memory, a blob may wait twice: it is freed once. */
		tcfs_blobset_free(&e->pset);
		for (size_t i = 0; i < kept; i++)
			tcfs_blobset_set(&e->pset, &e->pending[i].h, 1);
	}
	e->npending = kept;
	return evicted;
}

/* Whether a process holds a file of any of v[] open or mapped. */
static int any_held(struct tcfs_fs *fs, const struct tcfs_prune_victim *v,
		    size_t n)
{
	struct held h;
	int yes = 0;

	held_scan(fs, &h);
	for (size_t i = 0; !yes && (h.npaths || h.ninos) && i < n; i++)
		yes = held_by(fs, &h, &v[i]);
	held_free(&h);
	return yes;
}

/* Whether the kernel still holds one of p's removed nodes. */
static int in_limbo(struct pass *p)
{
	while (p->nlimbo && !fs_inode_known(p->fs, p->limbo[p->nlimbo - 1]))
		p->nlimbo--;
	return p->nlimbo > 0;
}

/* Frees r's pending blobs once the kernel has forgotten the nodes naming
 * them, a moment after the removal's invalidation (events.c): prune
 * said "freed 0 B (109.7 KiB more once no process uses them)" when none
 * did.  Blobs put within the grace (cas.h) stay pending. */
static void free_forgotten(struct pass *p, struct tcfs_prune_report *r)
{
	struct tcfs_prune_hooks keeper = { .held = held_by_files, .ctx = p };
	struct timespec nap = { 0, FORGET_NAP_NS };
	size_t kept = 0;

	for (int64_t t = 0; in_limbo(p) && t < FORGET_WAIT_NS;
	     t += FORGET_NAP_NS)
		nanosleep(&nap, NULL);
	if (tcfs_store_sync(p->fs->store) < 0)
		return;
	for (size_t i = 0; i < r->npending; i++) {
		uint64_t got = 0;

		if (tcfs_prune_free(p->fs->store, &r->pending[i], 1, &keeper,
				    &got, NULL) < 0 || !got) {
			r->pending[kept++] = r->pending[i];
			continue;
		}
		assert(got <= r->pending_bytes - r->fresh_bytes);
		r->freed_bytes += got;
		r->pending_bytes -= got;
	}
	r->npending = kept;
}

int fs_evict_prune(struct tcfs_fs *fs, const struct tcfs_prune_victim *v,
		   size_t n, int how, struct tcfs_prune_report *r)
{
	struct pass p = { fs, { 0 }, 0, r, NULL, 0, 0 };
	struct tcfs_prune_hooks hooks = { take, release, removed,
					  held_by_files, &p };
	struct fs_evict *e = fs->evict;
	int rc, wait;

	/* Its writes first: a kernel pruned must not come back from a
	 * commit of a file written in it before. */
	fs_files_flush_all(fs);
	pthread_mutex_lock(&e->mu);
	wait = !any_held(fs, v, n);
	rc = tcfs_prune_run(fs->store, v, n, (enum tcfs_prune_how)how, 0,
			    &hooks, r);
	if (rc == 0 && wait && r->npending)
		free_forgotten(&p, r);
	free(p.limbo);
	keep_pending(fs, r, 0);
	save_pending(fs);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

/* The limit in force: -o max_size, else the store's; 0 for none. */
static int64_t limit_of(struct tcfs_fs *fs)
{
	int64_t v = 0;

	if (fs->evict->opt_max >= 0)
		return fs->evict->opt_max;
	if (tcfs_config_get(fs->store, TCFS_CONFIG_MAX_SIZE, &v, NULL) < 0)
		return 0;
	return v;
}

static int add_size(void *ctx, const struct tcfs_cas_entry *en)
{
	*(int64_t *)ctx += (int64_t)en->size;
	return 0;
}

/* The bytes under objects/ now. */
static int64_t stored(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;
	struct tcfs_cas *cas = tcfs_store_cas(fs->store);

	if (e->base < 0) {
		int64_t sum = 0, before = tcfs_cas_growth(cas);

		if (tcfs_cas_foreach(cas, add_size, &sum) < 0)
			return -1;
		e->base = sum - before;
	}
	return e->base + tcfs_cas_growth(cas);
}

static int want(void *ctx, const struct tcfs_prune_victim *v)
{
	struct pass *p = ctx;

	int64_t since = tcfs_ns_now() - EVICT_GRACE_NS;

	if (p->over <= 0)
		return -1;
	if (v->last_used_ns >= since || held_by(p->fs, &p->held, v))
		return 0;
	/* Held until release: no probe can hit it between this look and its
	 * removal. */
	fs_probe_lock(p->fs, 1);
	if (fs_probe_recent(p->fs, v->dir_ino, since)) {
		fs_probe_unlock(p->fs);
		return 0;
	}
	/* Counted before it goes: what it frees is known only after. */
	p->over -= (int64_t)v->total_bytes;
	return 1;
}

/* The kernels eviction may take, least recently used first, and what
 * processes hold: read once a pass, when some limit is passed. */
struct victims {
	int ready;
	struct tcfs_prune_victim *v;
	size_t n;
	struct held held;
};

static int victims_get(struct tcfs_fs *fs, struct victims *vs)
{
	struct tcfs_prune_select all = { { NULL, NULL, NULL }, -1 };

	if (vs->ready)
		return 0;
	/* Every probe answered so far counts in the kernels' last use. */
	fs_events_sync(fs);
	if (tcfs_prune_pick(fs->store, &all, &vs->v, &vs->n) < 0) {
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
		return -1;
	}
	held_scan(fs, &vs->held);
	vs->ready = 1;
	return 0;
}

static void victims_free(struct victims *vs)
{
	held_free(&vs->held);
	free(vs->v);
}

/* Evicts of v[] (least recently used first) until over bytes went, or
 * none is left that may go; why says for whom, in the log.  Returns the
 * bytes of the kernels taken. */
static uint64_t evict_some(struct tcfs_fs *fs, const struct victims *vs,
			   const struct tcfs_prune_victim *v, size_t n,
			   int64_t over, const char *why)
{
	struct tcfs_prune_report r;
	struct pass p = { fs, vs->held, over, &r };
	struct tcfs_prune_hooks hooks = { want, release, removed,
					  held_by_files, &p };
	uint64_t taken = 0;

	if (tcfs_prune_run(fs->store, v, n, TCFS_PRUNE_EVICT, 0, &hooks,
			   &r) < 0)
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
	free(p.limbo);	/* its later passes free what the kernel held */
	keep_pending(fs, &r, 1);
	if (r.ntaken && tcfs_prune_count_eviction(fs->store, r.ntaken,
						  r.freed_bytes) < 0)
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
	for (size_t i = 0; i < r.ntaken; i++)
		taken += r.taken[i]->total_bytes;
	if (r.ntaken)
		syslog(LOG_INFO, "tcfs: %s: evicted %zu %s, freed %" PRIu64
		       " %s, %zu kept (held open)", why, r.ntaken,
		       TCFS_NOUN(r.ntaken, "kernel"), r.freed_bytes,
		       TCFS_NOUN(r.freed_bytes, "byte"), r.skipped);
	tcfs_prune_report_free(&r);
	return taken;
}

static void evict_pass(struct tcfs_fs *fs, int64_t limit,
		       struct victims *vs)
{
	struct fs_evict *e = fs->evict;
	int64_t now = stored(fs);
	char why[64];

	now -= e->pending_bytes;
	if (now < 0 || now <= limit || victims_get(fs, vs) < 0)
		return;
	snprintf(why, sizeof(why), "over the size limit (%" PRId64 " bytes)",
		 limit);
	evict_some(fs, vs, vs->v, vs->n, now - limit * EVICT_LOW_PCT / 100,
		   why);
}

/* The share in force: -o user_max_size, else the store's; 0 for none. */
static int64_t share_of(struct tcfs_fs *fs)
{
	int64_t v = 0;

	if (fs->evict->opt_user_max >= 0)
		return fs->evict->opt_user_max;
	if (tcfs_config_get(fs->store, TCFS_CONFIG_USER_MAX_SIZE, &v,
			    NULL) < 0)
		return 0;
	return v;
}

/* Root and the mount's owner have no share; nor have kernels of no user,
 * which stand for the mount's owner. */
static int exempt(const struct tcfs_fs *fs, int64_t uid)
{
	return uid <= 0 || uid == (int64_t)fs->uid;
}

/* Evicts u's own kernels until u's bytes, with loose (bytes of u's that
 * cannot be evicted), are down to 90% of share; returns those left, loose
 * included. */
static uint64_t evict_user(struct tcfs_fs *fs, const struct tcfs_kernel_user *u,
			   uint64_t loose, int64_t share, struct victims *vs)
{
	struct tcfs_prune_victim *mine;
	uint64_t taken = 0, total = u->bytes + loose;
	size_t n = 0;
	char why[96];

	if (victims_get(fs, vs) < 0)
		return total;
	mine = malloc((vs->n ? vs->n : 1) * sizeof(*mine));
	if (!mine)
		return total;
	for (size_t i = 0; i < vs->n; i++)
		if (vs->v[i].uid == u->uid)
			mine[n++] = vs->v[i];
	snprintf(why, sizeof(why), "uid %" PRId64 " over its share (%" PRId64
		 " bytes)", u->uid, share);
	if (n)
		taken = evict_some(fs, vs, mine, n,
				   (int64_t)total - share * EVICT_LOW_PCT / 100,
				   why);
	free(mine);
	taken = taken < u->bytes ? taken : u->bytes;
	return total - taken;
}

/* uid's bytes in l (sorted by uid), 0 if none. */
static uint64_t bytes_of(const struct tcfs_kernel_user *l, size_t n,
			 int64_t uid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l[mid].uid == uid)
			return l[mid].bytes;
		if (l[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Whether u (with loose bytes that cannot go) is past share once its own
 * kernels that can go are gone. */
static int still_over(struct tcfs_fs *fs, const struct tcfs_kernel_user *u,
		      uint64_t loose, int64_t share, struct victims *vs)
{
	if (exempt(fs, u->uid) || u->bytes + loose <= (uint64_t)share)
		return 0;
	return evict_user(fs, u, loose, share, vs) > (uint64_t)share;
}

static void note_over(uid_t **over, size_t *n, size_t *cap, int64_t uid)
{
	uid_t *slot = tcfs_vec_push(over, n, cap, sizeof(*slot));

	if (slot)
		*slot = (uid_t)uid;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts users' files that no kernel holds into *l, unless no blob came
 * or went since the last count, of a while ago: 1 if counted, 0 if that
 * one holds, or -errno. */
static int count_loose(struct tcfs_fs *fs, struct tcfs_kernel_user **l,
		       size_t *nl)
{
	struct fs_evict *e = fs->evict;
	int64_t growth = tcfs_cas_growth(tcfs_store_cas(fs->store));
	int64_t now = mono_ms();
	int rc;

	*l = NULL;
	*nl = 0;
	if (e->loose_ms &&
	    (now - e->loose_ms < LOOSE_COST_TIMES * e->loose_cost_ms ||
	     (growth == e->loose_growth &&
	      e->pending_bytes == e->loose_pending &&
	      now - e->loose_ms < LOOSE_EVERY_MS)))
		return 0;
	e->loose_growth = growth;
	e->loose_pending = e->pending_bytes;
	e->loose_ms = now;
	rc = tcfs_kernel_users_loose(fs->store, l, nl);
	e->loose_cost_ms = mono_ms() - now;
	return rc < 0 ? rc : 1;
}

/* Every user's kernels (*u) and bytes that cannot be evicted (*l), for a
 * share (0: none, and neither): 1 if *l was counted, 0 if e->loose
 * holds, or -errno. */
static int users_of(struct tcfs_fs *fs, int64_t share,
		    struct tcfs_kernel_user **u, size_t *n,
		    struct tcfs_kernel_user **l, size_t *nl)
{
	int rc = 0;

	*u = *l = NULL;
	*n = *nl = 0;
	if (share <= 0)
		return 1;
	if ((rc = tcfs_kernel_users(fs->store, u, n)) < 0 ||
	    (rc = count_loose(fs, l, nl)) < 0) {
		syslog(LOG_ERR, "tcfs: users' shares: %s", tcfs_err_msg());
		free(*u);
		*u = NULL;
		*n = 0;
		fs->evict->loose_ms = 0;
	}
	return rc;
}

/* Holds every user to share (0: none), and notes who is still past it:
 * a user's bytes are those of the kernels that user wrote and of the
 * user's files no kernel holds, which only the user can remove. */
static void share_pass(struct tcfs_fs *fs, int64_t share, struct victims *vs)
{
	struct fs_evict *e = fs->evict;
	struct tcfs_kernel_user *u, *l, *oldl;
	uid_t *over = NULL, *old;
	size_t n, nl, nover = 0, cap = 0;

	int counted = users_of(fs, share, &u, &n, &l, &nl);

	if (counted < 0)
		return;
	if (!counted) {
		l = e->loose;	/* the evictor's alone to change */
		nl = e->nloose;
	}
	if (share <= 0)
		e->loose_ms = 0;	/* a share set again counts anew */
	for (size_t i = 0; i < n; i++)
		if (still_over(fs, &u[i], bytes_of(l, nl, u[i].uid), share, vs))
			note_over(&over, &nover, &cap, u[i].uid);
	for (size_t i = 0; i < nl; i++)
		if (!exempt(fs, l[i].uid) && l[i].bytes > (uint64_t)share &&
		    !bytes_of(u, n, l[i].uid))
			note_over(&over, &nover, &cap, l[i].uid);
	free(u);
	pthread_mutex_lock(&e->in_mu);
	old = e->over;
	oldl = e->loose;
	e->over = over;
	e->nover = nover;
	e->share = share;
	e->loose = l;
	e->nloose = nl;
	pthread_mutex_unlock(&e->in_mu);
	free(old);
	if (oldl != l)
		free(oldl);
}

int fs_evict_over_share(struct tcfs_fs *fs, uid_t uid, uint64_t end,
			uint64_t counted)
{
	struct fs_evict *e = fs->evict;
	int yes = 0;

	if (!e)
		return 0;
	pthread_mutex_lock(&e->in_mu);
	for (size_t i = 0; !yes && i < e->nover; i++)
		yes = e->over[i] == uid;
	if (!yes && e->share > 0 && !exempt(fs, uid)) {
		uint64_t loose = bytes_of(e->loose, e->nloose, uid);

		yes = loose - (counted < loose ? counted : loose) + end >
		      (uint64_t)e->share;
	}
	pthread_mutex_unlock(&e->in_mu);
	return yes;
}

/* One blob of a look for orphans: named by no row, it waits until its
 * bytes are older than the put grace, for the row its put may be
 * waiting for (cas.h).  A time ahead of the clock says nothing of that:
 * it waits the grace from now. */
static int sweep_one(void *ctx, const struct tcfs_cas_entry *en)
{
	struct tcfs_fs *fs = ctx;
	struct fs_evict *e = fs->evict;
	int64_t now = tcfs_ns_now();
	int64_t born = en->mtime_ns < now ? en->mtime_ns : now;

	if (!en->h || en->size == 0 || tcfs_blobset_get(&e->pset, en->h) ||
	    tcfs_gc_referenced(fs->store, en->h) != 0)
		return 0;
	pend(e, en->h, en->size, born + TCFS_CAS_GRACE_NS, PEND_ORPHAN);
	e->sweep_found++;
	e->sweep_bytes += en->size;
	return 0;
}

/* Looks at the next batch of blobs when a look is due or under way. */
static void sweep_step(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;
	int rc = 0;

	if (!e->walk && tcfs_ns_now() < e->sweep_at_ns)
		return;
	if (!e->walk) {
		e->sweep_found = 0;
		e->sweep_bytes = 0;
		rc = tcfs_cas_walk_begin(tcfs_store_cas(fs->store), &e->walk);
	}
	if (rc == 0)
		rc = tcfs_cas_walk_step(e->walk, SWEEP_BATCH, sweep_one, fs);
	if (rc == 0 && !tcfs_cas_walk_done(e->walk))
		return;
	if (rc < 0)
		syslog(LOG_ERR, "tcfs: looking for orphan blobs: %s",
		       tcfs_err_msg());
	if (e->sweep_found)
		syslog(LOG_INFO, "tcfs: %zu %s (%" PRIu64 " %s) that no "
		       "file names: freed once written a minute ago",
		       e->sweep_found, TCFS_NOUN(e->sweep_found, "blob"),
		       e->sweep_bytes, TCFS_NOUN(e->sweep_bytes, "byte"));
	tcfs_cas_walk_end(e->walk);
	e->walk = NULL;
	e->swept = 1;
	e->sweep_at_ns = tcfs_ns_now() + SWEEP_EVERY_NS;
}

/* tcfs gc's walk through the mount: the orphans' callback, and what
 * it found. */
struct gc_walk {
	struct tcfs_fs *fs;
	int dry;
	int64_t now;
	void (*orphan)(void *ctx, const char *relpath, uint64_t size);
	void *ctx;
	struct tcfs_gc_result *res;
};

/* One blob of tcfs gc: as the orphan sweep takes it (sweep_one), but at
 * once when its bytes are older than the put grace. */
static int gc_one(void *ctx, const struct tcfs_cas_entry *en)
{
	struct gc_walk *w = ctx;
	struct pass pass = { .fs = w->fs };
	struct tcfs_prune_hooks keeper = { .held = held_by_files,
					   .ctx = &pass };
	uint64_t got = en->size;
	int rc;

	if (!en->h)
		return 0;	/* not a blob: fsck reports it */
	rc = tcfs_gc_referenced(w->fs->store, en->h);
	if (rc == 0 && fs_files_hold(w->fs, en->h))
		rc = 1;
	if (rc == 0 && en->mtime_ns > w->now - TCFS_CAS_GRACE_NS) {
		w->res->recent++;
		w->res->recent_bytes += en->size;
		return 0;
	}
	if (rc == 0 && !w->dry) {
		got = 0;
		rc = tcfs_prune_free(w->fs->store, en->h, 1, &keeper, &got,
				     NULL);
		rc = rc < 0 ? rc : !got;	/* kept: named meanwhile */
	}
	if (rc < 0)
		return rc;
	if (rc == 1) {
		w->res->kept++;
		w->res->kept_bytes += en->size;
		return 0;
	}
	w->res->removed++;
	w->res->freed_bytes += got;
	if (w->orphan)
		w->orphan(w->ctx, en->relpath, en->size);
	return 0;
}

int fs_evict_gc(struct tcfs_fs *fs, int dry,
		void (*orphan)(void *ctx, const char *relpath, uint64_t size),
		void *ctx, struct tcfs_gc_result *res)
{
	struct gc_walk w = { fs, dry, tcfs_ns_now(), orphan, ctx, res };
	int rc;

	memset(res, 0, sizeof(*res));
	/* Files written and closed name their blobs once committed. */
	fs_files_flush_all(fs);
	rc = tcfs_store_sync(fs->store);
	return rc < 0 ? rc : tcfs_cas_foreach(tcfs_store_cas(fs->store),
					      gc_one, &w);
}

/* A second's work: what waits, then the limit. */
static void pass(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;
	struct victims vs = { 0 };
	struct stat st;
	uint64_t freed;
	int64_t limit;

	/* Read now, not at start: the root is served only once the session
	 * loop runs. */
	if (!e->have_dev && atomic_load(&fs->looping) &&
	    stat(fs->root, &st) == 0) {
		e->dev = st.st_dev;
		e->have_dev = 1;
	}
	take_rewritten(fs);
	freed = e->npending ? free_pending(fs, 0) : 0;
	if (freed)
		tcfs_prune_count_eviction(fs->store, 0, freed);
	save_pending(fs);
	limit = limit_of(fs);
	if (limit > 0 && e->swept)
		evict_pass(fs, limit, &vs);
	if (e->swept)
		share_pass(fs, share_of(fs), &vs);
	victims_free(&vs);
}

static void *evictor(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_evict *e = fs->evict;

	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		long ms = e->walk ? SWEEP_PAUSE_MS : EVICT_EVERY_MS;
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += ms * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&e->cv, &e->mu, &until);
		if (e->stop)
			break;
		sweep_step(fs);
		if (mono_ms() - e->last_pass_ms < EVICT_EVERY_MS)
			continue;
		e->last_pass_ms = mono_ms();
		pass(fs);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

int fs_evict_start(struct tcfs_fs *fs, const struct fs_limits *lim)
{
	struct fs_evict *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->in_mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	e->opt_max = lim->max_size;
	e->opt_user_max = lim->user_max_size;
	e->base = -1;
	e->pending_saved = -1;
	fs->evict = e;
	rc = fs_thread_start(&e->thread, evictor, fs);
	if (rc < 0) {
		fs->evict = NULL;
		pthread_cond_destroy(&e->cv);
		pthread_mutex_destroy(&e->in_mu);
		pthread_mutex_destroy(&e->mu);
		free(e);
	}
	return rc;
}

void fs_evict_stop(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;

	if (!e || e->stopped)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = 1;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->thread, NULL);
	e->stopped = 1;
}

void fs_evict_free(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;

	if (!e)
		return;
	assert(e->stopped);
	/* Every request is answered and every write committed: no put is in
	 * flight, and the kernel holds no node. */
	if (!fs->failed)
		take_rewritten(fs);
	if (e->npending && !fs->failed) {
		tcfs_cas_settled(tcfs_store_cas(fs->store));
		if (tcfs_ns_purge_unlinked(fs->store) == 0)
			free_pending(fs, 1);
	}
	tcfs_cas_walk_end(e->walk);
	tcfs_blobset_free(&e->pset);
	free(e->pending);
	free(e->in);
	free(e->over);
	free(e->loose);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->in_mu);
	pthread_mutex_destroy(&e->mu);
	free(e);
	fs->evict = NULL;
}
