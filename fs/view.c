/*
 * view: the inodes that are not rows of the store, browsing views at the
 * mount root: by-name/NAME/KEY and by-arch/TARGET/NAME/KEY (symlinks to
 * the key dirs, at whatever depth, as in /dev/disk/by-*), and .tcfs/
 * (reports, each lookup of one rendering it anew under an inode of its
 * own): the kind FS_KIND_VIEW, served through fs_view_ops (kind.h), which
 * claims its names at the root.  It has no write operations: writes on
 * these inodes, and on its names at the root, get EROFS (ops.c).
 *
 * The links lead into .tcfs/kernels/, the root's row in the browse kind
 * (rows.c), not to the root's own key dirs: a lookup there is no probe,
 * so browsing the views never counts as Triton's hits.  That tree, and
 * binary-only/, are looked up but never listed: du, tar and rsync of the
 * mount, which do not follow links, see each file once, under the root.
 *
 * The tag of an inode number (ino.h: one of the view kind's) says what it
 * is (TAG_*), the row bits which one:
 * a key dir's own inode for a link, or an id this module hands out for a
 * kernel name or a target, kept for the daemon's life (there are few).
 * Nothing here is on Triton's path, so no name is cached by the kernel:
 * a kernel shows as soon as its group file lands, and goes with it.  The
 * lists come from indexed queries (index/model/kernel.h), page by page.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <xxhash.h>

#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "kind.h"

#define TAG_MASK FS_INO_ROW_MAX

enum tag {
	TAG_FIXED = FS_INO_TAG_VIEW_MIN,	/* the view roots and .tcfs/
						 * files (enum fixed) */
	TAG_NAME,	/* by-name/NAME: a name id */
	TAG_NAMELINK,	/* by-name/NAME/KEY: the key dir's inode */
	TAG_ARCH,	/* by-arch/TARGET: a target id */
	TAG_ARCHNAME,	/* by-arch/TARGET/NAME: target id << 32 | name id */
	TAG_ARCHLINK,	/* by-arch/TARGET/NAME/KEY: the key dir's inode */
};
_Static_assert(TAG_ARCHLINK <= FS_INO_TAG_VIEW_MAX,
	       "the view's tags are the view kind's (ino.h)");

enum fixed {
	FIX_BINARY_ONLY = 0,	/* the root's row in the binary-only view */
	FIX_BY_NAME = 1,
	FIX_BY_ARCH,
	FIX_TCFS,
	FIX_STATS,
	FIX_STATS_JSON,
	FIX_METRICS,
	FIX_SYNC,	/* empty: a stat of it commits what the mount holds */
	FIX_KERNELS,	/* the root's row in the browse tree */
};

/* The entries at the root and in .tcfs/, in listing order. */
static const struct {
	const char *name;
	enum fixed id;
	int in_tcfs;		/* in .tcfs/, else at the root */
	int browse;		/* hidden by -o noviews */
	enum fs_kind rows;	/* the root's row in that kind, or a view's */
} fixed_names[] = {
	{ "binary-only", FIX_BINARY_ONLY, 0, 1, FS_KIND_BIN },
	{ "by-name", FIX_BY_NAME, 0, 1, FS_KIND_VIEW },
	{ "by-arch", FIX_BY_ARCH, 0, 1, FS_KIND_VIEW },
	{ ".tcfs", FIX_TCFS, 0, 0, FS_KIND_VIEW },
	{ "stats", FIX_STATS, 1, 0, FS_KIND_VIEW },
	{ "stats.json", FIX_STATS_JSON, 1, 0, FS_KIND_VIEW },
	{ "metrics.prom", FIX_METRICS, 1, 0, FS_KIND_VIEW },
	{ "sync", FIX_SYNC, 1, 0, FS_KIND_VIEW },
	{ "kernels", FIX_KERNELS, 1, 1, FS_KIND_BROWSE },	/* FS_BROWSE_DIR */
};
#define NFIXED (sizeof(fixed_names) / sizeof(fixed_names[0]))

/* Names and targets seen, by id (index + 1); found again by their hash. */
struct intern {
	char **s;
	size_t n, cap;
	uint32_t *slot;		/* open addressing: id, or 0 */
	size_t nslot;
};

/*
 * A .tcfs/ file as one lookup rendered it, under a node id of its own
 * (TAG_FIXED, the file's id and a sequence number): a rendering's
 * size and bytes never part, however many are made meanwhile, and with
 * no open in no-open mode the inode is all a reader holds.  Kept until
 * the kernel forgets the inode, or, past SNAPS_PER_VIEWER of its
 * viewer's or past SNAPS_MAX or SNAPS_BYTES, the oldest goes (a reader
 * that still holds it gets ESTALE; snaps_trim says which).  A rendering
 * is for the user whose lookup made it (fs_report_viewer): it shows other
 * users' processes only to root and the mount's owner, and no other user
 * reads it (a descriptor handed over gets EACCES).
 */
struct snap {
	uint64_t ino;
	int64_t viewer;		/* whose processes it shows, or everyone's */
	char *bytes;
	size_t len;
	int64_t at_ns;
	uint64_t nlookup;	/* the kernel's lookups of ino */
	struct snap *next;	/* an older one */
};
#define SNAPS_MAX 256
#define SNAPS_BYTES (64u << 20)
#define SNAPS_PER_VIEWER 32	/* readers at once, each holding one */
#define SNAP_SHIFT 4		/* below: the file's enum fixed */
_Static_assert(FIX_KERNELS < 1 << SNAP_SHIFT,
	       "a snapshot's number holds its file's enum fixed");

struct fs_views {
	pthread_mutex_t mu;
	struct intern names, targets;	/* targets: as target_name shows */
	struct snap *snaps;		/* the newest first */
	size_t nsnaps, snap_bytes;
	uint64_t snap_seq;		/* the last snapshot's number */
	int browse;			/* by-name/ and by-arch/ shown */
	atomic_int too_long;		/* a name was left out (said once) */
	int64_t start_ns;		/* the views' times */
};

static uint64_t ino_of(enum tag t, uint64_t v)
{
	assert(v <= TAG_MASK);
	return FS_INO_MAKE(t, v);
}

static enum tag tag_of(uint64_t ino)
{
	return (enum tag)FS_INO_TAG(ino);
}

int fs_views_new(int browse, struct fs_views **out)
{
	struct fs_views *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->mu, NULL);
	v->browse = browse;
	v->start_ns = tcfs_ns_now();
	*out = v;
	return 0;
}

static void intern_free(struct intern *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->s[i]);
	free(in->s);
	free(in->slot);
}

void fs_views_free(struct fs_views *v)
{
	if (!v)
		return;
	intern_free(&v->names);
	intern_free(&v->targets);
	while (v->snaps) {
		struct snap *sn = v->snaps;

		v->snaps = sn->next;
		free(sn->bytes);
		free(sn);
	}
	pthread_mutex_destroy(&v->mu);
	free(v);
}

static int intern_grow(struct intern *in)
{
	size_t nslot = in->nslot ? in->nslot * 2 : 64;
	uint32_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		size_t h = XXH3_64bits(in->s[i], strlen(in->s[i])) % nslot;

		while (slot[h])
			h = (h + 1) % nslot;
		slot[h] = (uint32_t)(i + 1);
	}
	free(in->slot);
	in->slot = slot;
	in->nslot = nslot;
	return 0;
}

/* The id of s, handed out now if it has none; 0 when out of memory.
 * Called with the views' lock held. */
static uint32_t intern(struct intern *in, const char *s)
{
	size_t h;
	char **sp;

	if (in->nslot == 0 && intern_grow(in) < 0)
		return 0;
	h = XXH3_64bits(s, strlen(s)) % in->nslot;
	for (; in->slot[h]; h = (h + 1) % in->nslot)
		if (strcmp(in->s[in->slot[h] - 1], s) == 0)
			return in->slot[h];
	if ((in->n + 1) * 2 > in->nslot || in->n >= UINT32_MAX - 1) {
		if (in->n >= UINT32_MAX - 1 || intern_grow(in) < 0)
			return 0;
		return intern(in, s);
	}
	sp = tcfs_vec_push(&in->s, &in->n, &in->cap, sizeof(*sp));
	if (!sp || !(*sp = strdup(s))) {
		in->n -= sp != NULL;
		return 0;
	}
	in->slot[h] = (uint32_t)in->n;
	return (uint32_t)in->n;
}

static uint32_t intern_locked(struct fs_views *v, struct intern *in,
			      const char *s)
{
	uint32_t id;

	pthread_mutex_lock(&v->mu);
	id = intern(in, s);
	pthread_mutex_unlock(&v->mu);
	return id;
}

/* Copies the string of id into buf; -ESTALE for an id never handed out. */
static int named(struct fs_views *v, struct intern *in, uint64_t id,
		 char *buf, size_t len)
{
	int rc = -ESTALE;

	pthread_mutex_lock(&v->mu);
	if (id >= 1 && id <= in->n) {
		snprintf(buf, len, "%s", in->s[id - 1]);
		rc = 0;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/*
 * Names in a view are strings from the store (a kernel's name, its
 * metadata's backend and arch), which may hold what no file name may: a
 * '/', or be "." or "..".  Such characters are shown as %XX, and so is
 * '%' itself (and each '-' of a backend, which ends the backend in a
 * target's name), so that every string is one entry that a path can name
 * and that names it alone.  A string too long to show even so is left
 * out of the listing.
 */
static int shown_name(const char *s, const char *also, char *out, size_t len)
{
	int dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
	size_t o = 0;

	assert(len > 0);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int esc = c == '%' || c == '/' || (dots && c == '.') ||
			  (also && strchr(also, c));

		if (o + (esc ? 3 : 1) >= len || o + (esc ? 3 : 1) > NAME_MAX)
			return -ENAMETOOLONG;
		if (esc)
			o += (size_t)snprintf(out + o, 4, "%%%02X", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The string a shown name stands for; -ENOENT for any name that
 * shown_name never gives (each string has one entry, not several). */
static int real_name(const char *shown, const char *also, char *out,
		     size_t len)
{
	char again[NAME_MAX + 1];
	const char *p = shown;
	size_t o = 0;

	for (; *p; o++) {
		int hi = p[0] == '%' ? hex_digit(p[1]) : 0;
		int lo = p[0] == '%' && hi >= 0 ? hex_digit(p[2]) : 0;

		if (o + 1 >= len || hi < 0 || lo < 0 ||
		    (p[0] == '%' && hi == 0 && lo == 0))
			return -ENOENT;
		out[o] = p[0] == '%' ? (char)(hi << 4 | lo) : p[0];
		p += p[0] == '%' ? 3 : 1;
	}
	out[o] = '\0';
	if (shown_name(out, also, again, sizeof(again)) < 0 ||
	    strcmp(again, shown) != 0)
		return -ENOENT;
	return 0;
}

/* A target's name in by-arch/: BACKEND-ARCH, each shown as above. */
static int target_name(const struct tcfs_kernel_target *t, char *out,
		       size_t len)
{
	char arch[NAME_MAX + 1];
	size_t n;
	int rc = shown_name(t->backend, "-", out, len);

	if (rc == 0)
		rc = shown_name(t->arch, NULL, arch, sizeof(arch));
	n = rc == 0 ? strlen(out) : 0;
	if (rc == 0 && (n + 1 + strlen(arch) >= len ||
			n + 1 + strlen(arch) > NAME_MAX))
		rc = -ENAMETOOLONG;
	if (rc == 0)
		snprintf(out + n, len - n, "-%s", arch);
	return rc;
}

/* A target's name into its backend and arch: -ENOENT when it is none
 * that target_name gives. */
static int split_target(const char *t, struct tcfs_kernel_target *out)
{
	const char *dash = strchr(t, '-');
	char backend[NAME_MAX + 1];
	int rc;

	if (!dash || dash == t || !dash[1] ||
	    (size_t)(dash - t) >= sizeof(backend))
		return -ENOENT;
	memcpy(backend, t, (size_t)(dash - t));
	backend[dash - t] = '\0';
	rc = real_name(backend, "-", out->backend, sizeof(out->backend));
	if (rc == 0)
		rc = real_name(dash + 1, NULL, out->arch, sizeof(out->arch));
	return rc;
}

static int target_of(struct fs_views *v, uint64_t id,
		     struct tcfs_kernel_target *t)
{
	char buf[NAME_MAX + 1];
	int rc = named(v, &v->targets, id, buf, sizeof(buf));

	return rc < 0 ? rc : split_target(buf, t);
}

/* What an inode of a view is: its name id, target and key dir, as its
 * tag has them. */
struct vnode {
	enum tag tag;
	uint64_t ino;
	char name[TCFS_NAME_MAX + 1];		/* TAG_NAME, TAG_ARCHNAME */
	struct tcfs_kernel_target target;	/* TAG_ARCH, TAG_ARCHNAME */
	struct tcfs_node keydir;		/* the links */
};

static int resolve(struct tcfs_fs *fs, uint64_t ino, struct vnode *vn)
{
	struct fs_views *v = fs->views;
	uint64_t val = ino & TAG_MASK;
	int rc = 0, key;

	memset(vn, 0, sizeof(*vn));
	vn->tag = tag_of(ino);
	vn->ino = ino;
	switch (vn->tag) {
	case TAG_FIXED:
		rc = val >= 1 && val <= FIX_SYNC ? 0 : -ESTALE;
		break;
	case TAG_NAME:
		rc = named(v, &v->names, val, vn->name, sizeof(vn->name));
		break;
	case TAG_ARCH:
		rc = target_of(v, val, &vn->target);
		break;
	case TAG_ARCHNAME:
		rc = target_of(v, val >> 32, &vn->target);
		if (rc == 0)
			rc = named(v, &v->names, val & 0xffffffffu, vn->name,
				   sizeof(vn->name));
		break;
	case TAG_NAMELINK:
	case TAG_ARCHLINK:
		/* A key dir that went, or moved where it is none, is no
		 * kernel's now. */
		rc = tcfs_ns_get(fs->store, val, &vn->keydir);
		if (rc == 0)
			rc = tcfs_kernel_is_key_dir(fs->store, val, &key);
		if (rc == 0 && !key)
			rc = -ENOENT;
		break;
	default:
		rc = -ESTALE;
	}
	return rc;
}

/* The link's target: the key dir in the browse tree, by its path from
 * the mount root, which the view's entry is two (by-name/NAME/) or three
 * levels below. */
static int link_target(struct tcfs_fs *fs, const struct vnode *vn, char *buf,
		       size_t len)
{
	const char *up = vn->tag == TAG_ARCHLINK ? "../../../" FS_BROWSE_DIR "/"
						 : "../../" FS_BROWSE_DIR "/";
	size_t n = strlen(up);

	assert(len > n);
	memcpy(buf, up, n);
	return tcfs_ns_path(fs->store, vn->keydir.ino, buf + n, len - n);
}

/* Renders a .tcfs/ file for viewer (*bytes: caller frees). */
static int render_file(struct tcfs_fs *fs, enum fixed id, int64_t viewer,
		       char **bytes, size_t *len)
{
	/* Exact: the probes of every process that asked are in, and so are
	 * files written in place and closed (tools that read the store next
	 * see their bytes). */
	fs_files_flush_all(fs);
	fs_events_sync(fs);
	return fs_report_render(fs, id == FIX_STATS ? FS_VIEW_STATS
				: id == FIX_STATS_JSON ? FS_VIEW_STATS_JSON
						       : FS_VIEW_METRICS,
				viewer, bytes, len);
}

static int is_snap(uint64_t ino)
{
	return tag_of(ino) == TAG_FIXED &&
	       (ino & TAG_MASK) >> SNAP_SHIFT != 0;
}

static void snap_free(struct fs_views *v, struct snap **link)
{
	struct snap *sn = *link;

	*link = sn->next;
	v->nsnaps--;
	v->snap_bytes -= sn->len;
	free(sn->bytes);
	free(sn);
}

/* The link to the oldest snapshot but the newest (the one just made)
 * of viewer (any viewer: ANY_VIEWER; any but root's and the owner's:
 * OTHER_VIEWERS), or NULL; *n counts viewer's.  The views' lock held. */
#define ANY_VIEWER INT64_MIN
#define OTHER_VIEWERS (INT64_MIN + 1)
static struct snap **oldest_of(struct fs_views *v, int64_t viewer, size_t *n)
{
	struct snap **found = NULL;

	*n = 0;
	for (struct snap **link = &v->snaps; *link; link = &(*link)->next) {
		int64_t w = (*link)->viewer;

		if (viewer == ANY_VIEWER || w == viewer ||
		    (viewer == OTHER_VIEWERS && w != TCFS_EVENT_ALL_USERS)) {
			++*n;
			found = link == &v->snaps ? NULL : link;
		}
	}
	return found;
}

/* Drops snapshots past the bounds, the views' lock held: first the
 * oldest of the viewer of the one just made, past its share, so that no
 * user's lookups in a loop push out another's rendering while it is
 * read; past the bounds of all, others' before root's and the owner's. */
static void snaps_trim(struct fs_views *v)
{
	size_t n;
	struct snap **link;

	FS_ASSERT_HELD(&v->mu);
	assert(v->snaps);
	while ((link = oldest_of(v, v->snaps->viewer, &n)) &&
	       n > SNAPS_PER_VIEWER)
		snap_free(v, link);
	while (v->nsnaps > SNAPS_MAX || v->snap_bytes > SNAPS_BYTES) {
		link = oldest_of(v, OTHER_VIEWERS, &n);
		if (!link)
			link = oldest_of(v, ANY_VIEWER, &n);
		if (!link)
			break;	/* the one just made stays, whatever its size */
		snap_free(v, link);
	}
}

static void snap_stat(struct tcfs_fs *fs, const struct snap *sn,
		      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	/* The file's own number, as readdir lists it, whichever rendering:
	 * a stat and the open after it (cp, say, checks) see one file. */
	st->st_ino = ino_of(TAG_FIXED, sn->ino & ((1u << SNAP_SHIFT) - 1));
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)sn->len;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((sn->len + 511) / 512);
	st->st_mtim.tv_sec = sn->at_ns / 1000000000;
	st->st_mtim.tv_nsec = sn->at_ns % 1000000000;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* A new rendering of file id under a new inode (*ino), looked up once:
 * *st its attributes. */
static int snap_new(struct tcfs_fs *fs, enum fixed id, int64_t viewer,
		    uint64_t *ino, struct stat *st)
{
	struct fs_views *v = fs->views;
	struct snap *sn = calloc(1, sizeof(*sn));
	int rc = sn ? render_file(fs, id, viewer, &sn->bytes, &sn->len)
		    : -ENOMEM;

	if (rc < 0) {
		free(sn);
		return rc;
	}
	sn->at_ns = tcfs_ns_now();
	sn->viewer = viewer;
	sn->nlookup = 1;
	pthread_mutex_lock(&v->mu);
	sn->ino = ino_of(TAG_FIXED, ++v->snap_seq << SNAP_SHIFT | id);
	sn->next = v->snaps;
	v->snaps = sn;
	v->nsnaps++;
	v->snap_bytes += sn->len;
	*ino = sn->ino;
	snap_stat(fs, sn, st);
	snaps_trim(v);
	pthread_mutex_unlock(&v->mu);
	return 0;
}

/* The link to snapshot ino, or to NULL; the views' lock held. */
static struct snap **snap_find(struct fs_views *v, uint64_t ino)
{
	struct snap **link = &v->snaps;

	FS_ASSERT_HELD(&v->mu);
	while (*link && (*link)->ino != ino)
		link = &(*link)->next;
	return link;
}

/* FORGET of a snapshot: its rendering goes with the kernel's last lookup
 * of it. */
static void snap_forget(struct tcfs_fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_views *v = fs->views;
	struct snap **link;

	if (!is_snap(ino))
		return;		/* no other view inode counts lookups */
	pthread_mutex_lock(&v->mu);
	link = snap_find(v, ino);
	/* The kernel never forgets more than it looked up. */
	assert(!*link || (*link)->nlookup >= n);
	if (*link && (*link)->nlookup > n)
		(*link)->nlookup -= n;
	else if (*link)
		snap_free(v, link);
	pthread_mutex_unlock(&v->mu);
}

static void view_forget(struct tcfs_fs *fs, const struct fs_ino *i,
			uint64_t n)
{
	snap_forget(fs, i->ino, n);
}

/* Snapshot ino's attributes (bytes NULL), or a copy of up to len of its
 * bytes from off (*bytes, *got: owned by the caller), for viewer:
 * -EACCES when it is another user's rendering. */
static int snap_get(struct tcfs_fs *fs, uint64_t ino, int64_t viewer,
		    struct stat *st, off_t off, size_t len, char **bytes,
		    size_t *got)
{
	struct fs_views *v = fs->views;
	struct snap *sn;
	int rc = 0;

	pthread_mutex_lock(&v->mu);
	sn = *snap_find(v, ino);
	if (!sn) {
		rc = -ESTALE;
	} else if (viewer != TCFS_EVENT_ALL_USERS && sn->viewer != viewer) {
		rc = -EACCES;
	} else if (!bytes) {
		snap_stat(fs, sn, st);
	} else {
		size_t o = (size_t)off < sn->len ? (size_t)off : sn->len;

		*got = sn->len - o < len ? sn->len - o : len;
		*bytes = malloc(*got ? *got : 1);
		if (*bytes)
			memcpy(*bytes, sn->bytes + o, *got);
		else
			rc = -ENOMEM;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* A lookup of a .tcfs/ file: a new snapshot, never cached as the name's
 * (each lookup renders anew); the inode's attributes never change. */
static void reply_snap(fuse_req_t req, enum fixed id)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fuse_entry_param e = { 0 };
	int rc = snap_new(fs, id, fs_report_viewer(req), &e.ino, &e.attr);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.attr_timeout = FS_TTL;
	if (fuse_reply_entry(req, &e) != 0)
		snap_forget(fs, e.ino, 1);
}

static int vstat(struct tcfs_fs *fs, const struct vnode *vn, struct stat *st)
{
	int64_t t = fs->views->start_ns;
	uint64_t val = vn->ino & TAG_MASK;

	memset(st, 0, sizeof(*st));
	st->st_ino = vn->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
	if (vn->tag == TAG_NAMELINK || vn->tag == TAG_ARCHLINK) {
		char target[PATH_MAX];
		int rc = link_target(fs, vn, target, sizeof(target));

		if (rc < 0)
			return rc;
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = (off_t)strlen(target);
		t = vn->keydir.mtime_ns;
	} else if (vn->tag == TAG_FIXED && val == FIX_SYNC) {
		/* What tools that read the store next must see: the probes
		 * of every process that asked, and files written in place. */
		fs_files_flush_all(fs);
		fs_events_sync(fs);
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
	} else if (vn->tag == TAG_FIXED && val >= FIX_STATS) {
		return -ESTALE;	/* only its snapshots are looked up */
	}
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((st->st_size + 511) / 512);
	st->st_mtim.tv_sec = t / 1000000000;
	st->st_mtim.tv_nsec = t % 1000000000;
	st->st_atim = st->st_ctim = st->st_mtim;
	return 0;
}

/* Nothing in a view is cached: it changes with the tree. */
static void reply_vnode(fuse_req_t req, const struct vnode *vn)
{
	struct fuse_entry_param e = { 0 };
	int rc = vstat(fs_of(req), vn, &e.attr);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = vn->ino;
	fuse_reply_entry(req, &e);
}

static void reply_miss(fuse_req_t req, int rc)
{
	struct fuse_entry_param miss = { 0 };

	if (rc == -ENOENT)
		fuse_reply_entry(req, &miss);
	else
		fuse_reply_err(req, -rc);
}

/* The fixed entry named name in a fixed dir (the root: in_tcfs 0). */
static int fixed_named(const struct fs_views *v, int in_tcfs,
		       const char *name)
{
	for (size_t i = 0; i < NFIXED; i++)
		if (fixed_names[i].in_tcfs == in_tcfs &&
		    strcmp(fixed_names[i].name, name) == 0 &&
		    (v->browse || !fixed_names[i].browse))
			return (int)i + 1;
	return 0;
}

/* The fixed entry's id, given what fixed_named returned. */
static uint64_t fixed_id(int k)
{
	return (uint64_t)fixed_names[k - 1].id;
}

/* The view's names at the store's root (not binary-only/'s). */
static int view_claims(struct tcfs_fs *fs, const struct fs_ino *parent,
		       const struct fs_name *nm)
{
	return parent->ino == TCFS_ROOT_INO &&
	       fixed_named(fs->views, 0, nm->s);
}

/* The key dir of name (of a target) whose view entry is entry (KEY or
 * KEY@N, tcfs_kernel_at): the link's inode. */
static int find_key(struct tcfs_fs *fs, const char *name,
		    const struct tcfs_kernel_target *t, const char *entry,
		    uint64_t *dir)
{
	struct tcfs_kernel_at *at = NULL;
	size_t n = 0;
	int rc = tcfs_kernel_keys(fs->store, name, t ? t->backend : NULL,
				  t ? t->arch : NULL, entry, 0, 1, &at, &n);

	if (rc == 0 && n == 0)
		rc = -ENOENT;
	if (rc == 0)
		*dir = at[0].dir_ino;
	free(at);
	return rc;
}

/* Whether any kernel is named name (of a target): -ENOENT if none. */
static int name_exists(struct tcfs_fs *fs, const char *name,
		       const struct tcfs_kernel_target *t)
{
	uint64_t dir;

	return find_key(fs, name, t, NULL, &dir);
}

/* Whether any kernel is of target t: -ENOENT if none. */
static int target_exists(struct tcfs_fs *fs, const struct tcfs_kernel_target *t)
{
	struct tcfs_kernel_name *names = NULL;
	size_t n = 0;
	int rc = tcfs_kernel_names(fs->store, t->backend, t->arch, 0, 1, &names,
				   &n);

	free(names);
	return rc < 0 ? rc : n ? 0 : -ENOENT;
}

/* The inode of the dir of kernel name id: by-name/NAME, or with a target
 * (its id tid) by-arch/TARGET/NAME. */
static uint64_t name_ino(const struct tcfs_kernel_target *t, uint64_t tid,
			 uint32_t id)
{
	return t ? ino_of(TAG_ARCHNAME, tid << 32 | id) : ino_of(TAG_NAME, id);
}

/* by-name/NAME, or by-arch/TARGET/NAME (shown: NAME as listed):
 * -ENOENT when no kernel has it. */
static int name_dir(struct tcfs_fs *fs, const char *shown,
		    const struct tcfs_kernel_target *t, uint64_t tid,
		    struct vnode *out)
{
	char name[TCFS_NAME_MAX + 1];
	uint32_t id;
	int rc = real_name(shown, NULL, name, sizeof(name));

	if (rc == 0)
		rc = name_exists(fs, name, t);

	if (rc < 0)
		return rc;
	id = intern_locked(fs->views, &fs->views->names, name);
	return id ? resolve(fs, name_ino(t, tid, id), out) : -ENOMEM;
}

/* parent/name's vnode, or -ENOENT. */
static int vlookup(struct tcfs_fs *fs, uint64_t parent, const char *name,
		   struct vnode *out)
{
	struct fs_views *v = fs->views;
	struct tcfs_kernel_target t;
	struct vnode p;
	uint64_t id, dir = 0;
	int rc;

	if (parent == TCFS_ROOT_INO) {
		int k = fixed_named(v, 0, name);

		return k ? resolve(fs, ino_of(TAG_FIXED, fixed_id(k)), out)
			 : -ENOENT;
	}
	rc = resolve(fs, parent, &p);
	if (rc < 0)
		return rc;
	switch (p.tag) {
	case TAG_FIXED:
		if ((p.ino & TAG_MASK) == FIX_TCFS) {
			int k = fixed_named(v, 1, name);

			return k ? resolve(fs, ino_of(TAG_FIXED, fixed_id(k)),
					   out)
				 : -ENOENT;
		}
		if ((p.ino & TAG_MASK) == FIX_BY_NAME)
			return name_dir(fs, name, NULL, 0, out);
		if ((p.ino & TAG_MASK) == FIX_BY_ARCH) {
			rc = split_target(name, &t);
			if (rc == 0)
				rc = target_exists(fs, &t);
			id = rc == 0 ? intern_locked(v, &v->targets, name) : 0;
			if (rc == 0 && !id)
				rc = -ENOMEM;
			return rc < 0 ? rc
				      : resolve(fs, ino_of(TAG_ARCH, id), out);
		}
		return -ENOTDIR;
	case TAG_NAME:
		rc = find_key(fs, p.name, NULL, name, &dir);
		return rc < 0 ? rc : resolve(fs, ino_of(TAG_NAMELINK, dir), out);
	case TAG_ARCH:
		return name_dir(fs, name, &p.target, p.ino & TAG_MASK, out);
	case TAG_ARCHNAME:
		rc = find_key(fs, p.name, &p.target, name, &dir);
		return rc < 0 ? rc : resolve(fs, ino_of(TAG_ARCHLINK, dir), out);
	default:
		return -ENOTDIR;
	}
}

/* The kind of rows whose root the fixed entry parent/name is
 * (binary-only/, .tcfs/kernels/), or FS_KIND_VIEW. */
static enum fs_kind row_root_named(const struct fs_views *v, uint64_t parent,
				   const char *name)
{
	int in_tcfs = parent == ino_of(TAG_FIXED, FIX_TCFS), k;

	if (parent != TCFS_ROOT_INO && !in_tcfs)
		return FS_KIND_VIEW;
	k = fixed_named(v, in_tcfs, name);
	return k ? fixed_names[k - 1].rows : FS_KIND_VIEW;
}

/* The root's row in kind: binary-only/ or .tcfs/kernels/. */
static void reply_row_root(fuse_req_t req, enum fs_kind kind)
{
	struct tcfs_node root;
	int rc = tcfs_ns_get(fs_of(req)->store, TCFS_ROOT_INO, &root);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fs_reply_entry(req, &root, kind, FS_TTL);
}

static void view_lookup(fuse_req_t req, const struct fs_ino *parent,
			const struct fs_name *nm)
{
	enum fs_kind rows = row_root_named(fs_of(req)->views, parent->ino,
					   nm->s);
	struct vnode vn;
	int rc;

	if (rows != FS_KIND_VIEW) {
		reply_row_root(req, rows);
		return;
	}
	rc = vlookup(fs_of(req), parent->ino, nm->s, &vn);
	if (rc < 0)
		reply_miss(req, rc);
	else if (vn.tag == TAG_FIXED && (vn.ino & TAG_MASK) >= FIX_STATS &&
		 (vn.ino & TAG_MASK) <= FIX_METRICS)
		reply_snap(req, (enum fixed)(vn.ino & TAG_MASK));
	else
		reply_vnode(req, &vn);
}

static void view_getattr(fuse_req_t req, const struct fs_ino *i)
{
	struct tcfs_fs *fs = fs_of(req);
	uint64_t ino = i->ino;
	struct vnode vn;
	struct stat st;
	int rc;

	if (is_snap(ino)) {
		rc = snap_get(fs, ino, fs_report_viewer(req), &st, 0, 0, NULL,
			      NULL);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_attr(req, &st, FS_TTL);
		return;
	}
	rc = resolve(fs, ino, &vn);
	if (rc == 0)
		rc = vstat(fs, &vn, &st);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, 0);
}

static void view_readlink(fuse_req_t req, const struct fs_ino *i)
{
	char target[PATH_MAX];
	struct vnode vn;
	int rc = resolve(fs_of(req), i->ino, &vn);

	if (rc == 0 && vn.tag != TAG_NAMELINK && vn.tag != TAG_ARCHLINK)
		rc = -EINVAL;
	if (rc == 0)
		rc = link_target(fs_of(req), &vn, target, sizeof(target));
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_readlink(req, target);
}

static void view_read(fuse_req_t req, const struct fs_ino *i, size_t size,
		      off_t off)
{
	uint64_t ino = i->ino, val = ino & TAG_MASK;
	char *bytes = NULL;
	size_t len = 0;
	int rc;

	if (tag_of(ino) == TAG_FIXED && val == FIX_SYNC) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (!is_snap(ino)) {
		fuse_reply_err(req, tag_of(ino) == TAG_FIXED && val >= FIX_STATS
					    ? ESTALE
					    : EISDIR);
		return;
	}
	rc = snap_get(fs_of(req), ino, fs_report_viewer(req), NULL, off, size,
		      &bytes, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, bytes, len);
	free(bytes);
}

/* A page of directory entries being filled. */
struct page {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	int full;
};

/* Adds an entry whose cookie (the next one's offset) is next. */
static void add(struct page *pg, const char *name, uint64_t ino, int dir,
		off_t next)
{
	struct stat st = { .st_ino = ino, .st_mode = dir ? S_IFDIR : S_IFLNK };
	size_t len;

	if (pg->full)
		return;
	len = fuse_add_direntry(pg->req, pg->buf + pg->used,
				pg->size - pg->used, name, &st, next);
	if (len > pg->size - pg->used)
		pg->full = 1;
	else
		pg->used += len;
}

/* rc, from shown_name or target_name: a name too long to show is left
 * out, said once per mount. */
static int listable(struct fs_views *v, int rc)
{
	if (rc < 0 && !atomic_exchange(&v->too_long, 1))
		syslog(LOG_NOTICE, "tcfs: a kernel whose name or target is "
		       "too long to show escaped is left out of by-name/ or "
		       "by-arch/");
	return rc;
}

/* by-name/, or by-arch/TARGET/ (nt): kernel names, as list says. */
static int list_names(struct tcfs_fs *fs, const struct vnode *d,
		      const struct tcfs_kernel_target *nt, off_t off,
		      size_t want, struct page *pg)
{
	struct fs_views *v = fs->views;
	struct tcfs_kernel_name *names = NULL;
	size_t n = 0;
	int rc = tcfs_kernel_names(fs->store, nt ? nt->backend : NULL,
				   nt ? nt->arch : NULL, (uint64_t)off - 2,
				   want, &names, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		char s[NAME_MAX + 1];
		uint32_t id = intern_locked(v, &v->names, names[i].s);

		if (id && listable(v, shown_name(names[i].s, NULL, s,
					      sizeof(s))) == 0)
			add(pg, s, name_ino(nt, d->ino & TAG_MASK, id), 1,
			    off + (off_t)i + 1);
	}
	free(names);
	return rc;
}

/* by-arch/: the targets, as list says. */
static int list_targets(struct tcfs_fs *fs, off_t off, size_t want,
			struct page *pg)
{
	struct fs_views *v = fs->views;
	struct tcfs_kernel_target *ts = NULL;
	size_t n = 0;
	int rc = tcfs_kernel_targets(fs->store, (uint64_t)off - 2, want, &ts,
				     &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		char s[NAME_MAX + 1];
		uint32_t id = 0;

		if (listable(v, target_name(&ts[i], s, sizeof(s))) == 0)
			id = intern_locked(v, &v->targets, s);
		if (id)
			add(pg, s, ino_of(TAG_ARCH, id), 1, off + (off_t)i + 1);
	}
	free(ts);
	return rc;
}

/* by-name/NAME/ or by-arch/TARGET/NAME/: the links to its key dirs. */
static int list_keys(struct tcfs_fs *fs, const struct vnode *d, off_t off,
		     size_t want, struct page *pg)
{
	const struct tcfs_kernel_target *t =
		d->tag == TAG_ARCHNAME ? &d->target : NULL;
	struct tcfs_kernel_at *at = NULL;
	size_t n = 0;
	int rc = tcfs_kernel_keys(fs->store, d->name, t ? t->backend : NULL,
				  t ? t->arch : NULL, NULL, (uint64_t)off - 2,
				  want, &at, &n);

	for (size_t i = 0; rc == 0 && i < n; i++)
		add(pg, at[i].entry,
		    ino_of(t ? TAG_ARCHLINK : TAG_NAMELINK, at[i].dir_ino), 0,
		    off + (off_t)i + 1);
	free(at);
	return rc;
}

/* Entries from offset off on (the query's rows from off - 2). */
static int list(struct tcfs_fs *fs, const struct vnode *d, off_t off,
		struct page *pg)
{
	uint64_t val = d->ino & TAG_MASK;
	size_t want = pg->size / 32 + 1;

	if (d->tag == TAG_FIXED && val == FIX_BY_NAME)
		return list_names(fs, d, NULL, off, want, pg);
	if (d->tag == TAG_ARCH)
		return list_names(fs, d, &d->target, off, want, pg);
	if (d->tag == TAG_FIXED && val == FIX_BY_ARCH)
		return list_targets(fs, off, want, pg);
	if (d->tag == TAG_FIXED && val == FIX_TCFS) {
		for (size_t i = (size_t)off - 2; i < NFIXED; i++)
			if (fixed_names[i].in_tcfs &&
			    fixed_names[i].rows == FS_KIND_VIEW)
				add(pg, fixed_names[i].name,
				    ino_of(TAG_FIXED, fixed_names[i].id), 0,
				    (off_t)i + 3);
		return 0;
	}
	if (d->tag == TAG_NAME || d->tag == TAG_ARCHNAME)
		return list_keys(fs, d, off, want, pg);
	return -ENOTDIR;
}

static void view_readdir(fuse_req_t req, const struct fs_ino *i, size_t size,
			 off_t off)
{
	struct tcfs_fs *fs = fs_of(req);
	struct page pg = { req, malloc(size), size, 0, 0 };
	uint64_t ino = i->ino;
	struct vnode d;
	int rc = resolve(fs, ino, &d);

	if (rc == 0 && !pg.buf)
		rc = -ENOMEM;
	for (; rc == 0 && off < 2; off++)
		add(&pg, off ? ".." : ".", off ? TCFS_ROOT_INO : ino, 1,
		    off + 1);
	if (rc == 0 && !pg.full)
		rc = list(fs, &d, off, &pg);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, pg.buf, pg.used);
	free(pg.buf);
}

size_t fs_view_root_entries(fuse_req_t req, char *buf, size_t size,
			    uint64_t *k)
{
	struct tcfs_fs *fs = fs_of(req);
	struct page pg = { req, buf, size, 0, 0 };

	/* -o noviews: only key dirs are listed (.tcfs still resolves). */
	if (!fs->views->browse)
		return 0;
	for (; *k < NFIXED; ++*k) {
		/* The trees of rows again are not listed: see the top. */
		if (fixed_names[*k].in_tcfs ||
		    fixed_names[*k].rows != FS_KIND_VIEW)
			continue;
		add(&pg, fixed_names[*k].name,
		    ino_of(TAG_FIXED, fixed_names[*k].id), 1,
		    (off_t)FS_VIEW_COOKIE(*k + 1));
		if (pg.full)
			break;
	}
	return pg.used;
}

/* No writes: EROFS (ops.c). */
const struct fs_kind_ops fs_view_ops = {
	.claims = view_claims,
	.lookup = view_lookup,
	.forget = view_forget,
	.getattr = view_getattr,
	.readlink = view_readlink,
	.readdir = view_readdir,
	.read = view_read,
};
