/*
 * The mount's shared state and the helpers its modules share.  Private to
 * fs/.  From the top down: no file calls one of a group above its own;
 * within a group some call sideways (doc/ARCHITECTURE.md lists them), and
 * only dirty.c and evict.c call each other back:
 *   fs.c (mount, serve), ctl.c (the control socket), flusher.c (new
 *     blobs made durable), busypoll.c (fast answers in bursts)
 *   ops.c: the dispatch layer, libfuse's entry points (kind.h)
 *   the kinds: rows.c (the tables of the store, binary-only/ and the
 *     browse tree),
 *     lookup.c (lookup, getattr, readlink), dir.c (mkdir, rmdir, unlink,
 *     rename, readdir, symlink, link, mknod), file.c (create, read,
 *     write, fsync, setattr); view.c (by-name/, by-arch/, .tcfs/),
 *     report.c (.tcfs/ files' bytes)
 *   attr.c (attributes and entries replied, for every kind), owner.c
 *     (owners, and the POSIX rules on changing them and modes)
 *   dirty.c (writes not committed yet) and evict.c (the size limit, and
 *     kernels removed while mounted), which call each other; group.c
 *     (group files rendered), redirect.c (-o redirect: a kernel's
 *     metadata and binary named in a dir of the user's), damage.c (a bad
 *     blob found as it is read), probe.c (hit/miss per probe), remote.c
 *     (the fleet tier: asked on a local miss, fed what lands)
 *   base.c (names classified, what a kind shows, fs_changed),
 *     users.c (many users: trusted writers, each user's own key dirs),
 *     inode.c (the kernel's lookup counts), events.c (the log writer),
 *     thread.c (the mount's own threads); ino.h (the inode numbers)
 */
#ifndef TCFS_FS_PRIV_H
#define TCFS_FS_PRIV_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "index/model/event.h"
#include "index/model/group.h"
#include "index/base/name.h"
#include "index/tree/ns.h"
#include "ino.h"

/* Everything behind a name changes only through this mount, which keeps
 * the kernel's caches in step itself: they may keep what they learn. */
#define FS_TTL 86400.0

struct fs_probes;
struct fs_events;
struct fs_inodes;
struct fs_groups;
struct fs_dirties;
struct fs_flusher;
struct fs_busypoll;
struct fs_checked;
struct fs_views;
struct fs_evict;
struct fs_ctl;
struct fs_http;
struct tcfs_addr;
struct fs_redirects;
struct fs_redirect;
struct fs_remote;
struct tcfs_remote_cfg;
struct tcfs_prune_victim;
struct tcfs_prune_report;

struct tcfs_fs {
	struct tcfs_store *store;
	char root[4096];	/* the mount point: group files name it */
	struct fuse_session *se;
	uid_t uid;		/* whoever mounted: the owner of rows that
				 * name none (TCFS_OWNER_MOUNT) */
	gid_t gid;
	struct tcfs_hash empty;	/* the blob of a new, empty file */
	struct fs_inodes *inodes;
	struct fs_groups *groups;
	struct fs_probes *probes;
	struct fs_events *events;
	struct fs_dirties *dirties;	/* writes not committed yet */
	struct fs_flusher *flusher;
	struct fs_busypoll *busypoll;
	struct fs_checked *checked;	/* key dirs whose blobs are checked */
	struct fs_views *views;		/* inodes that are not rows */
	struct fs_evict *evict;		/* the size limit, and prunes */
	struct fs_ctl *ctl;		/* the control socket */
	struct fs_http *http;		/* -o metrics; NULL: none */
	struct fs_redirects *redirects;	/* -o redirect; NULL: none */
	struct fs_users *users;		/* -o allow_other: many users;
					 * NULL: only the owner gets in */
	struct fs_remote *remote;	/* -o remote; NULL: none */
	int binary_only;		/* -o binary_only: the root is the
					 * binary-only view */
	int store_binary_only;		/* -o store_binary_only: IR written
					 * is never stored */
	char bin_root[4096 + 16];	/* MOUNT/binary-only */
	atomic_int bin_used;		/* binary-only/ was looked in */
	atomic_ullong requests;		/* requests served */
	int64_t start_ns;		/* when the mount started */
	int failed;		/* the index lost changes: fs.c (read
				 * after the threads that set it are joined) */
	pthread_t loop;		/* the thread in libfuse's session loop */
	atomic_int looping;	/* 1 while it is there */
};

/* thread.c: starts a thread of the mount's own (events, flusher,
 * busypoll), one that the signals that stop the mount never go to.  0 or
 * -errno. */
int fs_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
/* thread.c: CLOCK_MONOTONIC in ms, for the deadlines of the mount's
 * socket servers (ctl.c, metrics_http.c). */
int64_t fs_now_ms(void);
/* poll's timeout for deadline (fs_now_ms's): 0 when past, -1 for -1
 * (none). */
int fs_ms_until(int64_t deadline);
/* thread.c: serves requests until *done, once the session loop has returned:
 * for stopping a thread that may wait in the kernel for a directory which
 * a request holds, while that request waits for an answer. */
void fs_serve_until(struct tcfs_fs *fs, atomic_int *done);

/* ops.c: libfuse's entry points, which dispatch to the kinds (kind.h). */
extern const struct fuse_lowlevel_ops fs_fuse_ops;

static inline struct tcfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * The binary-only view (binary-only/ at the root, or the root itself with
 * -o binary_only): the store's rows again, under inode numbers of their
 * own (FS_KIND_BIN, ino.h), with the IR files (.ttir .ttgir .llir .ptx
 * .amdgcn) hidden and group files rendered for MOUNT/binary-only listing
 * only what is left.  Writes land in the one tree both views show.
 *
 * The browse tree (FS_KIND_BROWSE), where by-name/ and by-arch/ lead:
 * the store's rows again, read-only, under numbers of their own, whose
 * lookups are never probes.  Its path from the mount root:
 */
#define FS_BROWSE_DIR ".tcfs/kernels"

/* A name as a request gives it, classified once (base.c) where the
 * request comes in (ops.c) and passed down, never parsed again. */
struct fs_name {
	const char *s;		/* the request's; not owned */
	int temp;		/* a temp of a write (tcfs_name_is_temp) */
	enum tcfs_artifact art;	/* what a file so named holds */
	enum tcfs_artifact landing;	/* what it holds once it lands */
	int group;		/* a group file: of the kernel named kernel */
	enum tcfs_probe entry;	/* the kind of probe it may be, by the name
				 * alone (entry.h); 0: none */
	char kernel[TCFS_NAME_MAX + 1];
	int apart;		/* means something else for each user
				 * (users.c): never cached */
};
/* base.c: fills *nm for s (which must outlive it). */
void fs_name_of(struct fs_name *nm, const char *s);
/* Whether a name would be a probe in a key dir, or may be renamed onto
 * one (a temp name): such entries are never cached by the kernel,
 * wherever they are created or moved to. */
int fs_name_uncached(const struct fs_name *nm);
int fs_probe_name(const char *name);	/* the same, of a bare name */
/* Whether a kind shows the binary-only view, and the root its group
 * files name (MOUNT or MOUNT/binary-only). */
int fs_shows_binary_only(const struct tcfs_fs *fs, enum fs_kind kind);
const char *fs_root_of(const struct tcfs_fs *fs, enum fs_kind kind);
/* How long the kernel may keep the names and attributes a kind of rows
 * shows (a probe's name aside: fs_name_uncached). */
double fs_kind_ttl(enum fs_kind kind);
/* Whether a kind hides the file named nm (its IR); and what its group
 * files show. */
int fs_hides(const struct tcfs_fs *fs, enum fs_kind kind,
	     const struct fs_name *nm);
enum tcfs_group_filter fs_filter(const struct tcfs_fs *fs, enum fs_kind kind);
/* Whether bytes written to a file named so are dropped (-o
 * store_binary_only and an IR file, or a temp one that becomes one). */
int fs_drops(const struct tcfs_fs *fs, const struct fs_name *nm);
/* What group files written through the mount are stored listing. */
enum tcfs_group_filter fs_store_filter(const struct tcfs_fs *fs);
/* After the row parent's name changed through one kind of rows: the
 * other forgets what it cached of the name (once binary-only/ has been
 * used). */
void fs_changed(struct tcfs_fs *fs, uint64_t parent, enum fs_kind kind,
		const char *name);
/* The file type bits of a kind of node. */
mode_t fs_type(enum tcfs_kind kind);
/* Whether path, which need not exist yet, is root or lies below it (its
 * nearest existing ancestor resolved). */
int fs_lies_within(const char *path, const char *root);

/* A function that requires mu held asserts it (held by some thread: a
 * default mutex says no more). */
#define FS_ASSERT_HELD(mu) assert(pthread_mutex_trylock(mu) == EBUSY)

/* inode.c: the kernel's lookup counts.  ref for every entry replied,
 * forget as FORGET says; at zero a node in limbo is deleted. */
int fs_inodes_new(struct fs_inodes **out);
void fs_inodes_free(struct fs_inodes *t);
void fs_inode_ref(struct tcfs_fs *fs, uint64_t ino);
void fs_inode_forget(struct tcfs_fs *fs, uint64_t ino, uint64_t n);
/* Whether the kernel holds ino (a row's number). */
int fs_inode_known(struct tcfs_fs *fs, uint64_t ino);

/* attr.c: attributes as the kernel sees them, of n shown in kind (STORE
 * or BIN).  size is the rendered size for a group template (fs_render),
 * the stored size otherwise. */
int fs_stat(struct tcfs_fs *fs, const struct tcfs_node *n, enum fs_kind kind,
	    struct stat *st);
/* Replies to a request with the attributes of row in kind. */
void fs_reply_attr(fuse_req_t req, enum fs_kind kind, uint64_t row);
/* Replies to a lookup-like request with n's entry in kind, cached for
 * ttl; the kernel's lookup of it is counted (inode.c).  0, or the error
 * replied (-errno). */
int fs_reply_entry(fuse_req_t req, const struct tcfs_node *n,
		   enum fs_kind kind, double ttl);
/* The same for CREATE, with its open file fi. */
int fs_reply_create(fuse_req_t req, const struct tcfs_node *n,
		    enum fs_kind kind, double ttl, struct fuse_file_info *fi);

/* owner.c: owners, and who may change them and modes (POSIX, as ext4).
 * The uid and gid n shows: its own, or the mount's for TCFS_OWNER_MOUNT. */
uid_t fs_uid_of(const struct tcfs_fs *fs, const struct tcfs_node *n);
gid_t fs_gid_of(const struct tcfs_fs *fs, const struct tcfs_node *n);
/* The owner of a node req makes in the dir parent, and its *mode as a
 * setgid dir leaves it.  0 or -errno. */
int fs_new_owner(fuse_req_t req, uint64_t parent, int is_dir, unsigned *mode,
		 struct tcfs_owner *own);
/* What a setattr of n (to_set, FUSE_SET_ATTR_*) by req sets of its owner
 * and mode: *mask (TCFS_SET_*) and *a filled; -EPERM when req may not. */
int fs_owner_setattr(fuse_req_t req, const struct tcfs_node *n,
		     const struct stat *attr, int to_set, int *mask,
		     struct tcfs_attrs *a);
/* After req wrote to row: a writer other than root clears its setuid
 * (and setgid, when group-executable).  0 or -errno. */
int fs_owner_wrote(fuse_req_t req, uint64_t row);

/* group.c: a group template rendered for this mount (*out: caller frees),
 * and the name of the key dir a node lies in (its ancestor under the
 * root), which renderings are relative to. */
int fs_groups_new(struct fs_groups **out);
void fs_groups_free(struct fs_groups *g);
int fs_render(struct tcfs_fs *fs, const struct tcfs_node *n,
	      enum fs_kind kind, char **out, size_t *len);
/* The same as a reader is shown it: with -o redirect, a kernel's
 * children that DIR has are named there, and *mtime_ns (optional; the
 * stored time on entry) is then the rendering's own (redirect.c).  Such
 * renderings are made anew each time, never kept.  fs_render is the
 * stored bytes, for what is written back to the store. */
int fs_render_shown(struct tcfs_fs *fs, const struct tcfs_node *n,
		    enum fs_kind kind, char **out, size_t *len,
		    int64_t *mtime_ns);
/* The size of fs_render_shown's rendering (*mtime_ns as there), without
 * its bytes: kept for many more inodes than the bytes are. */
int fs_render_size(struct tcfs_fs *fs, const struct tcfs_node *n,
		   enum fs_kind kind, uint64_t *size, int64_t *mtime_ns);
/* The key dir a node lies in (itself, for a key dir), for rendering its
 * group files: the nearest by tcfs_kernel_key_dir_at, else the node's own
 * dir. */
struct fs_keydir {
	uint64_t ino;
	int found;		/* a key dir, not the node's own dir */
	const char *key;	/* its name: the last part of path */
	char path[PATH_MAX];	/* from the mount root: "triton/0/KEY" */
};
int fs_key_of(struct tcfs_fs *fs, const struct tcfs_node *n,
	      struct fs_keydir *k);
/* A group template's bytes as they render now, stored raw, before a
 * rename would render them for another key dir. */
struct fs_pin {
	uint64_t ino;
	struct tcfs_content c;
	int64_t mtime_ns;
};
/* Appends to *pins (n of them; caller frees) a pin for every template at
 * or below moved whose key dir changes if moved goes to newparent/newname
 * (its blob written already). */
int fs_groups_pins(struct tcfs_fs *fs, const struct tcfs_node *moved,
		   uint64_t newparent, const char *newname,
		   struct fs_pin **pins, size_t *n);
/* Gives the pinned rows their bytes: within the rename's transaction. */
int fs_groups_pin(struct tcfs_fs *fs, const struct fs_pin *pins, size_t n);

/* dirty.c: writes are kept per inode until something needs them. */
int fs_dirties_new(struct fs_dirties **out);
void fs_dirties_free(struct fs_dirties *t);
/* Commits every inode's pending writes (unmount, a directory's rename). */
void fs_files_flush_all(struct tcfs_fs *fs);
/* Writes to a file idle this long are committed. */
#define FS_DIRTY_IDLE_S 0.2
/* Commits the writes of inodes idle for idle_s seconds: those whose
 * commit is costly (a big file written out of order, cas.h) only with
 * costly, from a thread that may wait (the flusher), the others from the
 * events thread, which must not. */
void fs_dirty_sweep(struct tcfs_fs *fs, double idle_s, int costly);
/* The events thread's sweep of the cheap ones (a tick). */
void fs_dirty_tick(struct tcfs_fs *fs);
/* While ino has uncommitted writes, their size and time are the file's:
 * 1 with them, or 0 when there are none. */
int fs_files_size(struct tcfs_fs *fs, uint64_t ino, uint64_t *size,
		  int64_t *mtime_ns);
/* Commits ino's pending writes (before it is renamed, say). */
int fs_files_commit(struct tcfs_fs *fs, uint64_t ino);
/* 1 when blob h may be a file's stored writes that its row does not name
 * yet (a commit to be tried again): no orphan.  Never waits for a
 * file. */
int fs_files_hold(struct tcfs_fs *fs, const struct tcfs_hash *h);
/* Writes size bytes at off to ino's pending writes (made from its
 * stored bytes first if it has none). */
int fs_files_write(struct tcfs_fs *fs, uint64_t ino, const char *buf,
		   size_t size, off_t off);
/* Truncates (or extends) n's bytes to size, as a write. */
int fs_files_truncate(struct tcfs_fs *fs, const struct tcfs_node *n,
		      uint64_t size);
/* For a read of ino: 1 with up to size bytes from off of its pending
 * writes in *bytes (*got of them; owned by the caller), or 0 with its row
 * in *n, its content the one stored for it if its row lags. */
int fs_files_read(struct tcfs_fs *fs, uint64_t ino, size_t size, off_t off,
		  char **bytes, size_t *got, struct tcfs_node *n);


/* damage.c: what an error from tcfs_cas_open_checked or _read_checked
 * means for the reader (returned): a blob that the check found bad is
 * taken out of the tree with its files and their kernels (-EIO); any
 * other error is returned as it is. */
int fs_blob_failed(struct tcfs_fs *fs, const struct tcfs_hash *h, int rc);
/* Before a probe of n in dir is answered as a hit: 0 when the blobs its
 * reader will load are whole (checked once per key dir), -ENOENT when
 * one was not and the kernel is out (the probe misses). */
int fs_probe_whole(struct tcfs_fs *fs, const struct tcfs_node *dir,
		   const struct tcfs_node *n, enum tcfs_probe kind);
int fs_checked_new(struct fs_checked **out);
void fs_checked_free(struct fs_checked *c);

/* probe.c: whether looking up nm in parent is a cache probe, and
 * recording one (at most one event per process and path) seen through
 * the rows of kind view. */
enum tcfs_probe fs_probe_kind(struct tcfs_fs *fs,
			      const struct tcfs_node *parent,
			      const struct fs_name *nm);
#define FS_HIT_REMOTE 2	/* hit: a hit the remote served */
void fs_probe_seen(struct tcfs_fs *fs, fuse_req_t req,
		   const struct tcfs_node *parent, const struct fs_name *nm,
		   enum tcfs_probe kind, int hit, enum fs_kind view);
/* Whether the request's process probed nm in parent before: a later
 * lookup of its own (the rename of what it compiled into place) is no
 * probe, and the remote, asked at the probe, is not asked again. */
int fs_probe_folded(struct tcfs_fs *fs, fuse_req_t req,
		    const struct tcfs_node *parent, const struct fs_name *nm);
/* A probe holds the lock shared from finding its file to noting it; a
 * removal of kernels holds it alone (alone 1), so that no kernel goes
 * between a probe's hit and the note that it is in use. */
void fs_probe_lock(struct tcfs_fs *fs, int alone);
void fs_probe_unlock(struct tcfs_fs *fs);
/* Whether the key dir dir was probed since since_ns. */
int fs_probe_recent(struct tcfs_fs *fs, uint64_t dir, int64_t since_ns);
int fs_probes_new(struct fs_probes **out);
void fs_probes_free(struct fs_probes *p);
/* Forgets processes that have exited (a tick). */
void fs_probes_tick(struct tcfs_fs *fs);

/* remote.c: the fleet tier (index/remote/), when -o remote names one.
 * Starts its publisher thread; the remote itself is reached lazily. */
int fs_remote_start(struct tcfs_fs *fs, const struct tcfs_remote_cfg *cfg);
/* Once the events thread is stopped: the publisher stopped, what is
 * queued dropped, the last figures saved. */
void fs_remote_stop(struct tcfs_fs *fs);
/* On a probe's local miss of nm in the key dir dir: asks the remote and
 * lands what it has.  0 when the probe's name is here now, in the key
 * dir *to (dir, or for a user's own key dir the shared one: users.c),
 * else why not (-ENOENT: a miss; -EBUSY, -EAGAIN: not asked).  Call
 * without the probe lock: it may wait on the network, within the probe
 * budget. */
int fs_remote_fetch(struct tcfs_fs *fs, const struct tcfs_node *dir,
		    const struct fs_name *nm, enum tcfs_probe kind,
		    struct tcfs_node *to);
/* A lookup's local miss of nm in parent, when nm is a dir that Inductor
 * or vLLM looks up on the way to an entry (entry.h: tcfs_entry_above) and
 * the remote may hold entries below it (remote_inductor): the dir is
 * made, into *n, so that a fresh node's lookups go on to the entry's key,
 * where the remote is asked; when nm is a vLLM rank dir, the remote is
 * asked for it, whole.  0; 1 when nm is such a name but is not here even
 * so (a miss the kernel must not cache); -ENOENT for any other name. */
int fs_remote_above(struct tcfs_fs *fs, uint64_t parent,
		    const struct fs_name *nm, struct tcfs_node *n);
/* After a rename that landed nm in dir: a kernel, module or key dir to
 * publish is queued (never waits; a full queue drops it, counted). */
void fs_remote_landed(struct tcfs_fs *fs, uint64_t dir,
		      const struct fs_name *nm);
/* After a file's writes were committed (dirty.c): a vLLM rank dir it
 * lies in is queued to publish, whole (vLLM may write its files in
 * place, with no rename). */
void fs_remote_written(struct tcfs_fs *fs, uint64_t ino);
/* tcfs remote pull through the mount (ctl.c): kernel name of cache key
 * key, fetched into the key dir key at the mount's root (made if need
 * be).  1 when it landed, 0 when it was here, -ENOENT when the remote has
 * none, else -errno with a message. */
int fs_remote_pull(struct tcfs_fs *fs, const char *key, const char *name);
/* The figures into the store's counters (a tick of the events thread). */
void fs_remote_tick(struct tcfs_fs *fs);
/* tcfs remote status and pull through the mount (ctl.c), of its own
 * remote: tcfs_remote_survey_status's object, and {"url", "items":
 * [{"key", "name"}, ...]} of tcfs_remote_survey_list's kernels; either
 * {"url": null} when the mount has none.  *out owned by the caller
 * (cJSON_Delete). */
struct tcfs_kernel_filter;
struct cJSON;
int fs_remote_status(struct tcfs_fs *fs, const struct tcfs_kernel_filter *f,
		     struct cJSON **out);
int fs_remote_list(struct tcfs_fs *fs, const struct tcfs_kernel_filter *f,
		   struct cJSON **out);

/* events.c: the probe log goes to the store in batches, off the request
 * path, from one thread.  That thread also runs ticks, the housekeeping
 * other modules own, after each batch (every 100 ms at most), so that it
 * need know none of them: fs.c passes them (at most FS_EVENTS_TICKS). */
typedef void fs_tick_fn(struct tcfs_fs *fs);
#define FS_EVENTS_TICKS 4
int fs_events_start(struct tcfs_fs *fs, fs_tick_fn *const *ticks, size_t n);
void fs_events_add(struct tcfs_fs *fs, const struct tcfs_event *ev);
/* Waits (a second at most) until the events queued before the call are
 * in the store: a report made then counts every probe answered before. */
void fs_events_sync(struct tcfs_fs *fs);
/* Has the kernel drop parent/name from its cache, soon, from the events
 * thread (never from a request handler: it may deadlock there). */
void fs_events_inval(struct tcfs_fs *fs, uint64_t parent, const char *name);
/* Stops the thread and writes what is queued.  Call it once the session
 * loop has returned: it serves requests until the thread is out of the
 * kernel (fs_serve_until). */
void fs_events_stop(struct tcfs_fs *fs);

/* flusher.c: a thread runs tcfs_durable_flush every every_s seconds (0:
 * every second).  Stopping it does not flush: closing the store does,
 * after the unmount. */
int fs_flusher_start(struct tcfs_fs *fs, double every_s);
void fs_flusher_stop(struct tcfs_fs *fs);

/* busypoll.c: a reader of the session's descriptor that goes on polling
 * for window_us after each request it serves (0: no such reader).  Start
 * it before the session loop, stop it once the loop has returned. */
int fs_busypoll_start(struct tcfs_fs *fs, long window_us);
void fs_busypoll_stop(struct tcfs_fs *fs);

/* view.c: the inodes that are not rows of the store (by-name/, by-arch/,
 * .tcfs/ at the root), served through fs_view_ops (kind.h). */
enum fs_view_file { FS_VIEW_STATS, FS_VIEW_STATS_JSON, FS_VIEW_METRICS };
/* browse: by-name/ and by-arch/ are there (not -o noviews). */
int fs_views_new(int browse, struct fs_views **out);
void fs_views_free(struct fs_views *v);
/* The root's view entries, after its store entries: readdir cookies from
 * FS_VIEW_COOKIE(0) on, above every store entry's (inode + 2).  Fills
 * buf from entry *k on, advancing *k; returns the bytes used. */
#define FS_VIEW_COOKIE(k) ((off_t)(1ll << 62) + (off_t)(k))
size_t fs_view_root_entries(fuse_req_t req, char *buf, size_t size,
			    uint64_t *k);

/* report.c: the .tcfs/ files' bytes (index/model/report.h), for view.c, as
 * viewer sees them (fs_report_viewer): *bytes owned by the caller
 * (free()). */
int fs_report_render(struct tcfs_fs *fs, enum fs_view_file f, int64_t viewer,
		     char **bytes, size_t *len);
/* Whose processes the requester of req may see in the reports: every
 * user's (TCFS_EVENT_ALL_USERS) for root and the mount's owner, else only
 * the requester's own (its uid). */
int64_t fs_report_viewer(fuse_req_t req);

/* evict.c: the size limit, and each user's share of it.  Each of lim is
 * as -o says, or -1 to follow the store's setting (config max-size,
 * user-max-size).  0 or -errno. */
struct fs_limits {
	int64_t max_size;	/* -o max_size */
	int64_t user_max_size;	/* -o user_max_size */
};
int fs_evict_start(struct tcfs_fs *fs, const struct fs_limits *lim);
/* Whether a write of uid's that ends at end (a file's size after it) is
 * refused (EDQUOT): uid is past its share with none of its kernels that
 * could be evicted (all in use), or its bytes that cannot be evicted
 * (files no kernel holds), less counted (the file's bytes they may hold
 * already), and end are past it, as the evictor's last pass found. */
int fs_evict_over_share(struct tcfs_fs *fs, uid_t uid, uint64_t end,
			uint64_t counted);
/* Stops the thread; fs_evict_free, once every write is committed, frees
 * what evictions left for later, and the state. */
void fs_evict_stop(struct tcfs_fs *fs);
void fs_evict_free(struct tcfs_fs *fs);
/* Removes kernels while mounted (index/maint/prune.h), telling the kernel's
 * caches; *r as tcfs_prune_run fills it. */
int fs_evict_prune(struct tcfs_fs *fs, const struct tcfs_prune_victim *v,
		   size_t n, int how, struct tcfs_prune_report *r);
/* tcfs gc while mounted (ctl.c): commits what the mount holds, then
 * frees every blob that no row names and no pending write holds, once
 * its bytes are older than the put grace (cas.h); dry: only counts.
 * orphan (optional) hears of each by its path under objects/. */
struct tcfs_gc_result;
int fs_evict_gc(struct tcfs_fs *fs, int dry,
		void (*orphan)(void *ctx, const char *relpath, uint64_t size),
		void *ctx, struct tcfs_gc_result *res);
/* A file rewritten in place no longer names old: freed once no file
 * does, after the put grace.  Never waits for the evictor. */
void fs_evict_rewritten(struct tcfs_fs *fs, const struct tcfs_hash *old);

/* users.c: one cache for many users (-o allow_other).  trust: -o trust's
 * value (USER:...:@GROUP), or NULL; root and owner are always trusted.
 * 0, or -EINVAL with a message naming the user or group. */
int fs_users_new(const char *trust, uid_t owner, struct fs_users **out);
void fs_users_free(struct fs_users *u);
/* Whether uid (of group gid) writes shared kernels. */
int fs_trusted(struct tcfs_fs *fs, uid_t uid, gid_t gid);
/* Where a request's name is, for its user: FS_LOAD to look an entry up
 * (what a reader then loads), FS_FIND to reach one otherwise (unlink,
 * rmdir, a rename's source), FS_MKDIR to make a dir, FS_PLACE to make
 * anything else (create, symlink, link, a rename's target).  May move
 * parent->row to the user's own dir, and sets nm->apart; -ENOENT for a
 * name this user may not see or make. */
enum fs_route { FS_LOAD, FS_FIND, FS_MKDIR, FS_PLACE };
int fs_users_route(fuse_req_t req, struct fs_ino *parent, struct fs_name *nm,
		   enum fs_route how);
/* 0 when src (found in dir from) may move, or be linked, to dir to;
 * -EPERM when it would take a user's own dir, a dir that holds one, or
 * anything in one out of it: what an untrusted user wrote never becomes
 * anyone else's. */
int fs_users_may_move(struct tcfs_fs *fs, uint64_t from,
		      const struct tcfs_node *src, uint64_t to);
/* The store's trust hook (tcfs_store_set_trust): ctx is the mount. */
int fs_users_trust(void *ctx, int64_t uid, int64_t gid);
/* 1 and *own when the requester has an own dir in dir (readdir shows its
 * entries with dir's). */
int fs_users_own_dir(fuse_req_t req, uint64_t dir, uint64_t *own);
/* tcfs trust promote (ctl.c): users' own key dirs named key (NULL: any)
 * of user uid (-1: any user) made shared; *moved says how many.  0 or
 * -errno. */
int fs_users_promote(struct tcfs_fs *fs, const char *key, int64_t uid,
		     size_t *moved);
/* The mode an entry name in parent gets (made, or chmod): a trusted
 * writer's key dirs and what they hold never writable by others,
 * whatever its umask. */
unsigned fs_users_mode(fuse_req_t req, uint64_t parent, const char *name,
		       unsigned mode, int dir);

/* redirect.c: -o redirect=NAME:DIR.  Adds one to *r (created on first
 * use; owned by the caller, fs_redirects_free): DIR made absolute from
 * the working directory, and checked to be a directory outside the
 * mount point root.  0, or -errno with a message naming the option. */
int fs_redirects_add(struct fs_redirects **r, const char *spec,
		     const char *root);
void fs_redirects_free(struct fs_redirects *r);
size_t fs_redirects_count(const struct fs_redirects *r);
/* Whether redirect i of r moves nothing now, its DIR holding none of
 * NAME's files: 1 with why (len bytes) saying so and what to give
 * instead (a KEY dir below DIR that holds them), else 0.  A mount warns
 * of it: the files may yet be put there, and are looked for at each
 * read. */
int fs_redirect_unmatched(const struct fs_redirects *r, size_t i, char *why,
			  size_t len);
/* The redirect of the kernel named kernel, or NULL (owned by r). */
const struct fs_redirect *fs_redirect_of(const struct fs_redirects *r,
					 const char *kernel);
/* Renders a template as tcfs_group_render does, with NAME.json and
 * NAME.hsaco or NAME.cubin named in DIR when DIR has them now.  *out is
 * owned by the caller; *mtime_ns (optional, the stored time on entry)
 * becomes one that changes whenever what is named in DIR does. */
int fs_redirect_render(const struct fs_redirect *rd, const char *tmpl,
		       size_t len, const char *root, const char *key,
		       enum tcfs_group_filter f, char **out, size_t *olen,
		       int64_t *mtime_ns);

/* ctl.c: STORE/ctl.sock, where tcfs commands ask the mount to do what
 * only the store's writer may (tcfs prune).  0 or -errno. */
int fs_ctl_start(struct tcfs_fs *fs);
void fs_ctl_stop(struct tcfs_fs *fs);

/* metrics_http.c: GET /metrics over HTTP (-o metrics).  listen binds a
 * (before the mount, so that a port in use refuses it): 0, or -errno with
 * a message naming the address.  start serves it (0 with none), stop ends
 * and frees it, started or not. */
int fs_http_listen(struct tcfs_fs *fs, const struct tcfs_addr *a);
int fs_http_start(struct tcfs_fs *fs);
void fs_http_stop(struct tcfs_fs *fs);

#endif
