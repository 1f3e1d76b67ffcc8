/*
 * probe: which lookups are cache probes, and one event per probe.
 *
 * Triton probes a kernel by looking up KEY/__grp__NAME.json, and a module by
 * looking up KEY/NAME.so (or FN.autotune.json).  One probe reaches us as
 * several lookups by the same process: os.path.exists then open on a hit,
 * and on a miss the lookups its own writes cause (the rename into place,
 * dlopen of the new module).  So a process's first lookup of a path is the
 * probe, and later ones by the same process are folded into it; the
 * memory of a process is dropped when it exits.  So is its command name,
 * read from /proc once per process rather than once per probe: a probe's
 * lookup waits for it.  That memory is bounded, per user and in all,
 * whatever a process probes: anyone who can reach the mount may probe
 * names without end.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <xxhash.h>

#include "index/model/entry.h"
#include "index/model/kernel.h"
#include "index/base/name.h"
#include "priv.h"

#define PROBE_BUCKETS 4096
#define PROC_BUCKETS 256
/* Paths remembered at most: for one user's processes, and for all (tens
 * of MB).  Beyond a user's bound, that user's lookups are not remembered,
 * and the same process's next lookup of that path counts as a probe
 * again.  With the table full, a user's lookup takes the oldest path of
 * the user holding the most, if that user holds more than this one: so a
 * flood costs the accuracy of the flooders' own counts, not memory nor
 * others' counts, however many users flood.  A user has an entry while
 * it has a path, so there are never more users than paths. */
#define SEEN_PER_USER (64 * 1024)
#define SEEN_MAX (256 * 1024)
#define USER_BUCKETS 256

/* What the table keeps per process (first in each entry): the pid it is
 * dropped with. */
struct of_pid {
	pid_t pid;
	struct of_pid *next;
};

/* A path a process probed: "ROOT/KEY/NAME", ROOT the cache root's inode.
 * The key dir by name, not inode: Inductor replaces the key dir itself
 * after the miss; its cache root stays. */
struct seen {
	struct of_pid of;
	struct user *user;
	struct seen *older, *newer;	/* the user's paths, by age */
	size_t b;			/* its bucket */
	char *path;
};

/* A user with paths remembered. */
struct user {
	uid_t uid;
	size_t n;			/* its paths, > 0 */
	struct seen *oldest, *newest;
	struct user *next;
};

/* A process that probed, with its command name. */
struct proc {
	struct of_pid of;
	char comm[sizeof(((struct tcfs_event *)0)->comm)];
};

/* Key dirs probed lately, by inode number (a slot each, the last one
 * probed in it): a kernel probed is being loaded, and must not be evicted
 * meanwhile (fs_probe_recent). */
#define RECENT_SLOTS 16384

struct recent {
	_Atomic uint64_t ino;
	_Atomic int64_t at_ns;
};

struct fs_probes {
	/* Probes hold it shared from finding the group file to noting the
	 * probe; a removal of kernels (evict.c) holds it alone. */
	pthread_rwlock_t evict_lock;
	struct recent recent[RECENT_SLOTS];
	pthread_mutex_t mu;
	struct of_pid *bucket[PROBE_BUCKETS];	/* struct seen */
	size_t nseen;				/* in bucket, <= SEEN_MAX */
	struct user *users[USER_BUCKETS];	/* those with a path */
	struct of_pid *procs[PROC_BUCKETS];	/* struct proc */
};

enum tcfs_probe fs_probe_kind(struct tcfs_fs *fs,
			      const struct tcfs_node *parent,
			      const struct fs_name *nm)
{
	return nm->entry ? tcfs_entry_kind(fs->store, parent, nm->s) : 0;
}

/* uid's entry, made if need be (NULL: out of memory).  Under p->mu. */
static struct user *user_of(struct fs_probes *p, uid_t uid)
{
	struct user **head = &p->users[uid % USER_BUCKETS];
	struct user *u;

	for (u = *head; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = *head;
	*head = u;
	return u;
}

/* Drops u once it has no path.  Under p->mu. */
static void user_drop(struct fs_probes *p, struct user *u)
{
	struct user **link = &p->users[u->uid % USER_BUCKETS];

	if (u->n)
		return;
	while (*link != u)
		link = &(*link)->next;
	*link = u->next;
	free(u);
}

/* Forgets s, unlinked from its bucket already.  Under p->mu. */
static void forget(struct fs_probes *p, struct seen *s)
{
	struct user *u = s->user;

	assert(u->n > 0 && p->nseen > 0);
	*(s->older ? &s->older->newer : &u->oldest) = s->newer;
	*(s->newer ? &s->newer->older : &u->newest) = s->older;
	u->n--;
	p->nseen--;
	user_drop(p, u);
	free(s->path);
	free(s);
}

/* The user holding the most paths.  Under p->mu, the table not empty. */
static struct user *most(struct fs_probes *p)
{
	struct user *big = NULL;

	for (size_t i = 0; i < USER_BUCKETS; i++)
		for (struct user *u = p->users[i]; u; u = u->next)
			if (!big || u->n > big->n)
				big = u;
	assert(big);
	return big;
}

/* With the table full, frees a path for u: the oldest of the user holding
 * the most, unless u holds as many, less one (its own flood).  1 if
 * freed.  Under p->mu. */
static int make_room(struct fs_probes *p, const struct user *u)
{
	struct user *big = most(p);
	struct seen *s = big->oldest;
	struct of_pid **link;

	if (big == u || big->n <= u->n + 1)
		return 0;
	for (link = &p->bucket[s->b]; *link != &s->of;)
		link = &(*link)->next;
	*link = s->of.next;
	forget(p, s);
	return 1;
}

/* Remembers path for pid, of uid, if there is room; under p->mu. */
static void remember(struct fs_probes *p, size_t b, pid_t pid, uid_t uid,
		     const char *path)
{
	struct user *u = user_of(p, uid);
	struct seen *s = NULL;

	if (u && u->n < SEEN_PER_USER &&
	    (p->nseen < SEEN_MAX || make_room(p, u)))
		s = calloc(1, sizeof(*s));
	if (s && !(s->path = strdup(path))) {
		free(s);
		s = NULL;
	}
	if (!s) {	/* no room, or out of memory: count it again */
		if (u)
			user_drop(p, u);
		return;
	}
	s->of.pid = pid;
	s->user = u;
	s->b = b;
	s->of.next = p->bucket[b];
	p->bucket[b] = &s->of;
	s->older = u->newest;
	*(u->newest ? &u->newest->newer : &u->oldest) = s;
	u->newest = s;
	u->n++;
	p->nseen++;
}

/* parent/name's path as the process memory keys it, and its bucket. */
static size_t path_of(pid_t pid, uint64_t root, const char *key,
		      const char *name, char *path, size_t size)
{
	size_t len = (size_t)snprintf(path, size, "%llu/%s/%s",
				      (unsigned long long)root, key, name);

	return XXH3_64bits_withSeed(path, len < size ? len : size - 1,
				    (uint64_t)pid) % PROBE_BUCKETS;
}

/* Whether the process had probed path before (p->mu held). */
static int seen_in(struct fs_probes *p, size_t b, pid_t pid, const char *path)
{
	int seen = 0;

	FS_ASSERT_HELD(&p->mu);
	for (struct of_pid *o = p->bucket[b]; o && !seen; o = o->next)
		seen = o->pid == pid &&
		       strcmp(((struct seen *)o)->path, path) == 0;
	return seen;
}

/* 1 if the process had probed this path before; else remembers it. */
static int already_seen(struct fs_probes *p, pid_t pid, uid_t uid,
			uint64_t root, const char *key, const char *name)
{
	char path[2 * TCFS_NAME_MAX + 24];
	size_t b = path_of(pid, root, key, name, path, sizeof(path));
	int seen;

	pthread_mutex_lock(&p->mu);
	seen = seen_in(p, b, pid, path);
	if (!seen)
		remember(p, b, pid, uid, path);
	pthread_mutex_unlock(&p->mu);
	return seen;
}

int fs_probe_folded(struct tcfs_fs *fs, fuse_req_t req,
		    const struct tcfs_node *parent, const struct fs_name *nm)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[2 * TCFS_NAME_MAX + 24];
	size_t b;
	int seen;

	if (ctx->pid <= 0)
		return 0;
	b = path_of(ctx->pid, parent->parent, parent->name, nm->s, path,
		    sizeof(path));
	pthread_mutex_lock(&fs->probes->mu);
	seen = seen_in(fs->probes, b, ctx->pid, path);
	pthread_mutex_unlock(&fs->probes->mu);
	return seen;
}

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* pid's command name, read once and kept until the process exits. */
static void comm_of(struct fs_probes *p, pid_t pid, char *buf, size_t len)
{
	struct of_pid **head = &p->procs[(unsigned)pid % PROC_BUCKETS];
	struct of_pid *o;
	struct proc *r;

	pthread_mutex_lock(&p->mu);
	for (o = *head; o && o->pid != pid;)
		o = o->next;
	if (o)
		snprintf(buf, len, "%s", ((struct proc *)o)->comm);
	pthread_mutex_unlock(&p->mu);
	if (o)
		return;
	read_comm(pid, buf, len);
	r = malloc(sizeof(*r));
	if (!r)
		return;		/* out of memory: read it again next time */
	r->of.pid = pid;
	snprintf(r->comm, sizeof(r->comm), "%s", buf);
	pthread_mutex_lock(&p->mu);
	r->of.next = *head;
	*head = &r->of;
	pthread_mutex_unlock(&p->mu);
}

void fs_probe_seen(struct tcfs_fs *fs, fuse_req_t req,
		   const struct tcfs_node *parent, const struct fs_name *nm,
		   enum tcfs_probe kind, int hit, enum fs_kind view)
{
	const char *name = nm->s;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct tcfs_event ev = { 0 };
	struct timespec ts;

	struct recent *r = &fs->probes->recent[parent->ino % RECENT_SLOTS];

	clock_gettime(CLOCK_REALTIME, &ts);
	atomic_store(&r->ino, parent->ino);
	atomic_store(&r->at_ns, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	if (ctx->pid <= 0 ||
	    already_seen(fs->probes, ctx->pid, ctx->uid, parent->parent,
			 parent->name, name))
		return;
	ev.time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ev.pid = ctx->pid;
	ev.uid = ctx->uid;
	comm_of(fs->probes, ctx->pid, ev.comm, sizeof(ev.comm));
	snprintf(ev.key, sizeof(ev.key), "%s", parent->name);
	snprintf(ev.name, sizeof(ev.name), "%s",
		 kind == TCFS_PROBE_KERNEL && nm->group ? nm->kernel : name);
	ev.kind = kind;
	ev.hit = hit != 0;
	ev.remote = hit == FS_HIT_REMOTE;
	if (fs_shows_binary_only(fs, view))
		snprintf(ev.view, sizeof(ev.view), "binary-only");
	fs_events_add(fs, &ev);
}

void fs_probe_lock(struct tcfs_fs *fs, int alone)
{
	if (alone)
		pthread_rwlock_wrlock(&fs->probes->evict_lock);
	else
		pthread_rwlock_rdlock(&fs->probes->evict_lock);
}

void fs_probe_unlock(struct tcfs_fs *fs)
{
	pthread_rwlock_unlock(&fs->probes->evict_lock);
}

int fs_probe_recent(struct tcfs_fs *fs, uint64_t dir, int64_t since_ns)
{
	struct recent *r = &fs->probes->recent[dir % RECENT_SLOTS];

	return atomic_load(&r->ino) == dir && atomic_load(&r->at_ns) >= since_ns;
}

int fs_probes_new(struct fs_probes **out)
{
	struct fs_probes *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_rwlock_init(&p->evict_lock, NULL);
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

/* Whether pid has exited, asked of the kernel once per pruning for the
 * first PIDS_ASKED processes met: the lock that lookups wait on is held
 * meanwhile, and one process has a path for every kernel it probed. */
#define PIDS_ASKED 64

struct pids_asked {
	size_t n;
	pid_t pid[PIDS_ASKED];
	char dead[PIDS_ASKED];
};

static int exited(struct pids_asked *a, pid_t pid)
{
	int dead;

	for (size_t i = 0; i < a->n; i++)
		if (a->pid[i] == pid)
			return a->dead[i];
	dead = kill(pid, 0) < 0 && errno == ESRCH;
	if (a->n < PIDS_ASKED) {
		a->pid[a->n] = pid;
		a->dead[a->n++] = (char)dead;
	}
	return dead;
}

static void free_seen(struct fs_probes *p, struct of_pid *o)
{
	forget(p, (struct seen *)o);
}

static void free_proc(struct fs_probes *p, struct of_pid *o)
{
	(void)p;
	free(o);
}

/* Frees the entries of every process that has exited, or of all. */
static void drop_from(struct fs_probes *p, struct of_pid **bucket, size_t n,
		      struct pids_asked *asked, int only_dead,
		      void (*drop)(struct fs_probes *, struct of_pid *))
{
	for (size_t b = 0; b < n; b++) {
		struct of_pid **link = &bucket[b];

		while (*link) {
			struct of_pid *o = *link;

			if (only_dead && !exited(asked, o->pid)) {
				link = &o->next;
				continue;
			}
			*link = o->next;
			drop(p, o);
		}
	}
}

static void drop_if(struct fs_probes *p, int only_dead)
{
	struct pids_asked asked = { 0 };

	pthread_mutex_lock(&p->mu);
	drop_from(p, p->bucket, PROBE_BUCKETS, &asked, only_dead, free_seen);
	drop_from(p, p->procs, PROC_BUCKETS, &asked, only_dead, free_proc);
	pthread_mutex_unlock(&p->mu);
}

void fs_probes_tick(struct tcfs_fs *fs)
{
	struct fs_probes *p = fs->probes;

	drop_if(p, 1);
}

void fs_probes_free(struct fs_probes *p)
{
	if (!p)
		return;
	drop_if(p, 0);
	pthread_mutex_destroy(&p->mu);
	pthread_rwlock_destroy(&p->evict_lock);
	free(p);
}
