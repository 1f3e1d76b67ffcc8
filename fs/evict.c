/*
 * evict: the size limit (config max-size, -o max_size) and every removal
 * of kernels the mount makes (tcfs prune through ctl.c).
 *
 * A thread of its own checks the store's size once a second: one walk of
 * objects/ when a limit is first set, then the bytes the blob store
 * created and freed since (cas.h), so a check costs nothing.  Past the
 * limit it evicts whole kernels, least recently used first, down to 90%
 * of it, skipping any whose files a process holds open or mapped (read
 * from /proc).  A kernel out of the tree is dropped from the kernel's
 * caches; its nodes that the kernel does not hold go at once, the others
 * when it forgets them, and their blobs then, by a later pass.
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

#include "index/cas.h"
#include "index/config.h"
#include "index/err.h"
#include "index/prune.h"
#include "index/store.h"
#include "index/vec.h"
#include "priv.h"

/* How often the size is checked, and the limit read again. */
#define EVICT_EVERY_MS 1000
/* Evicting stops at this share of the limit, so that it runs in bursts,
 * not at every new blob. */
#define EVICT_LOW_PCT 90
/* A kernel hit or made this recently is being loaded, or about to be:
 * its probe is answered before its files are read. */
#define EVICT_GRACE_NS (10 * 1000000000LL)
/* A blob still named by a node the kernel holds is tried again this many
 * passes (then tcfs gc frees it). */
#define PENDING_TRIES 600

struct pending {
	struct tcfs_hash h;
	uint64_t size;
	unsigned tries;
	int evicted;		/* by the limit: its bytes count as evicted */
};

struct fs_evict {
	pthread_t thread;
	pthread_mutex_t mu;	/* guards the fields below, and one removal
				 * at a time (eviction or prune) */
	pthread_cond_t cv;
	int stop;
	int stopped;		/* the thread is joined */
	int64_t opt_max;	/* -o max_size, or -1: the store's setting */
	int64_t base;		/* stored bytes at the walk, less the growth
				 * then; -1 until walked */
	struct pending *pending;
	size_t npending, pcap;
	int64_t pending_bytes;	/* their sizes: as good as freed */
	dev_t dev;		/* the mount's, as /proc shows its files */
	int have_dev;
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
			*slot = fs_row(ino);
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
 * cache itself or in binary-only/. */
static int path_in(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (strncmp(p, "binary-only/", 12) == 0)
		p += 12;
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
};

static void release(void *ctx)
{
	fs_probe_unlock(((struct pass *)ctx)->fs);
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
	fs_changed(fs, d->parent, 0, v->key);
	for (size_t i = 0; i < d->nnodes; i++)
		if (!fs_inode_known(fs, d->nodes[i]))
			tcfs_ns_forget(fs->store, d->nodes[i]);
}

/* Keeps the blobs a removal could not free yet, for later passes. */
static void keep_pending(struct tcfs_fs *fs,
			 const struct tcfs_prune_report *r, int evicted)
{
	struct fs_evict *e = fs->evict;

	for (size_t i = 0; i < r->npending; i++) {
		struct pending *p = tcfs_vec_push(&e->pending, &e->npending,
						  &e->pcap, sizeof(*p));

		if (p && tcfs_cas_stat(tcfs_store_cas(fs->store),
				       &r->pending[i], &p->size) == 0) {
			p->h = r->pending[i];
			p->evicted = evicted;
			e->pending_bytes += (int64_t)p->size;
		} else if (p) {
			e->npending--;
		}
	}
}

/* Frees pending blobs that nothing names now; returns the bytes of
 * those the limit evicted. */
static uint64_t free_pending(struct tcfs_fs *fs)
{
	struct fs_evict *e = fs->evict;
	uint64_t evicted = 0;
	size_t kept = 0;

	for (size_t i = 0; i < e->npending; i++) {
		uint64_t got = 0;
		int rc = tcfs_prune_free(fs->store, &e->pending[i].h, 1, &got,
					 NULL);

		if (e->pending[i].evicted)
			evicted += got;
		if ((rc == 0 && got) ||
		    ++e->pending[i].tries >= PENDING_TRIES) {
			e->pending_bytes -= (int64_t)e->pending[i].size;
			continue;
		}
		e->pending[kept++] = e->pending[i];
	}
	e->npending = kept;
	return evicted;
}

int fs_evict_prune(struct tcfs_fs *fs, const struct tcfs_prune_victim *v,
		   size_t n, int how, struct tcfs_prune_report *r)
{
	struct pass p = { fs, { 0 }, 0, r };
	struct tcfs_prune_hooks hooks = { take, release, removed, &p };
	struct fs_evict *e = fs->evict;
	int rc;

	/* Its writes first: a kernel pruned must not come back from a
	 * commit of a file written in it before. */
	fs_files_flush_all(fs);
	pthread_mutex_lock(&e->mu);
	rc = tcfs_prune_run(fs->store, v, n, (enum tcfs_prune_how)how, 0,
			    &hooks, r);
	keep_pending(fs, r, 0);
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

static void evict_pass(struct tcfs_fs *fs, int64_t limit)
{
	struct fs_evict *e = fs->evict;
	struct tcfs_prune_select all = { { NULL, NULL, NULL }, -1 };
	struct tcfs_prune_victim *v = NULL;
	struct tcfs_prune_report r;
	struct pass p = { fs, { 0 }, 0, &r };
	struct tcfs_prune_hooks hooks = { want, release, removed, &p };
	int64_t now = stored(fs);
	uint64_t freed;
	size_t n = 0;

	now -= e->pending_bytes;
	if (now < 0 || now <= limit)
		return;
	p.over = now - limit * EVICT_LOW_PCT / 100;
	/* Every probe answered so far counts in the kernels' last use. */
	fs_events_sync(fs);
	if (tcfs_prune_pick(fs->store, &all, &v, &n) < 0) {
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
		return;
	}
	held_scan(fs, &p.held);
	if (tcfs_prune_run(fs->store, v, n, TCFS_PRUNE_EVICT, 0, &hooks,
			   &r) < 0)
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
	keep_pending(fs, &r, 1);
	freed = r.freed_bytes;
	if (r.ntaken && tcfs_prune_count_eviction(fs->store, r.ntaken,
						  freed) < 0)
		syslog(LOG_ERR, "tcfs: evicting: %s", tcfs_err_msg());
	if (r.ntaken)
		syslog(LOG_INFO, "tcfs: over the size limit (%" PRId64
		       " bytes): evicted %zu kernels, freed %" PRIu64
		       " bytes, %zu kept (held open)", limit, r.ntaken, freed,
		       r.skipped);
	held_free(&p.held);
	tcfs_prune_report_free(&r);
	free(v);
}

static void *evictor(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_evict *e = fs->evict;
	struct stat st;

	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		struct timespec until;
		int64_t limit;
		uint64_t freed;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += EVICT_EVERY_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&e->cv, &e->mu, &until);
		if (e->stop)
			break;
		/* Read now, not at start: the root is served only once the
		 * session loop runs. */
		if (!e->have_dev && atomic_load(&fs->looping) &&
		    stat(fs->root, &st) == 0) {
			e->dev = st.st_dev;
			e->have_dev = 1;
		}
		freed = e->npending ? free_pending(fs) : 0;
		if (freed)
			tcfs_prune_count_eviction(fs->store, 0, freed);
		limit = limit_of(fs);
		if (limit > 0)
			evict_pass(fs, limit);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

int fs_evict_start(struct tcfs_fs *fs, int64_t max_size)
{
	struct fs_evict *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	e->opt_max = max_size;
	e->base = -1;
	fs->evict = e;
	rc = fs_thread_start(&e->thread, evictor, fs);
	if (rc < 0) {
		fs->evict = NULL;
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
	if (e->npending && !fs->failed) {
		tcfs_cas_settled(tcfs_store_cas(fs->store));
		if (tcfs_ns_purge_unlinked(fs->store) == 0 &&
		    tcfs_store_sync(fs->store) == 0)
			free_pending(fs);
	}
	free(e->pending);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
	fs->evict = NULL;
}
