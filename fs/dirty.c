/*
 * dirty: the writes to files, kept per inode until something needs them.
 *
 * Opening a file costs the kernel nothing: OPEN and FLUSH are answered
 * ENOSYS once, after which the kernel sends neither (no-open mode), keeps
 * file pages in its page cache and asks for a page by inode only when it
 * lacks it.  Removed inodes stay readable while the kernel holds them
 * (ns.h), so an open or mapped file keeps its bytes after a replace or
 * unlink, as dlopen of a replaced .so needs.
 *
 * In that mode no request says a file was closed (not even RELEASE for
 * files made by CREATE), so what is written is kept per inode, not per
 * open: the writes to an inode go to one stage (cas.h), a "dirty" file,
 * which becomes the inode's content (a blob named in one transaction) when
 * something needs it: a rename of the file or of its directory (Triton
 * renames right after close), fsync, a truncate or utime by path, unmount,
 * or else once it has been idle for a while (fs_dirty_sweep).  Until then
 * reads and sizes come from the stage.  A group file is stored
 * key-relative when its children lie in its key dir.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/base/err.h"
#include "index/model/group.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "priv.h"

#define DIRTY_BUCKETS 1024
/* Each pending file holds a stage (cas.h: memory, or a descriptor once
 * big): past this many, all are committed before another starts (a burst
 * of creates, say). */
#define DIRTY_MAX 256

/* An inode with writes not yet committed.  refs counts who holds it; gone
 * says it was committed and left the table (a holder then lets it go).
 * A commit that fails (a disk full despite the room its writes took, an
 * I/O error) leaves the entry as it was, with its error, to be tried
 * again: until one succeeds the file's bytes are the entry's, and a
 * rename or fsync of the file fails with that error, so its writer
 * learns of it and no name ever points at bytes other than those
 * written.  A commit stores the bytes first (the stage becomes a blob,
 * stored) and then gives the row that blob: should the row fail, the
 * blob is the file's bytes until it succeeds. */
struct dirty {
	uint64_t ino;
	pthread_mutex_t mu;	/* held while the entry is used */
	struct tcfs_cas_stage *stage;	/* NULL once stored */
	struct tcfs_content stored;	/* the blob, once stored */
	int err;		/* the last commit's error, or 0 */
	int64_t last_write_ns;
	int refs;
	int gone;
	struct dirty *next;
};

/* Lock order: the table's mutex is never held while waiting for an
 * entry's; a commit holds its entry's and takes the table's briefly. */
struct fs_dirties {
	pthread_mutex_t mu;
	struct dirty *bucket[DIRTY_BUCKETS];
	size_t n;		/* entries in the table */
};

int fs_dirties_new(struct fs_dirties **out)
{
	struct fs_dirties *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

static void dirty_free(struct dirty *d)
{
	tcfs_cas_stage_abort(d->stage);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

void fs_dirties_free(struct fs_dirties *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < DIRTY_BUCKETS; b++)
		while (t->bucket[b]) {
			struct dirty *d = t->bucket[b];

			t->bucket[b] = d->next;
			dirty_free(d);
		}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* Takes a hold on ino's entry (not its lock); NULL when there is none. */
static struct dirty *hold(struct fs_dirties *t, uint64_t ino)
{
	struct dirty *d;

	pthread_mutex_lock(&t->mu);
	for (d = t->bucket[ino % DIRTY_BUCKETS]; d && d->ino != ino;)
		d = d->next;
	if (d)
		d->refs++;
	pthread_mutex_unlock(&t->mu);
	return d;
}

static void let_go(struct fs_dirties *t, struct dirty *d)
{
	int last;

	pthread_mutex_lock(&t->mu);
	last = --d->refs == 0 && d->gone;
	pthread_mutex_unlock(&t->mu);
	if (last)
		dirty_free(d);
}

/* Locks ino's entry if it has one that is still live; else NULL. */
static struct dirty *lock_dirty(struct tcfs_fs *fs, uint64_t ino)
{
	struct dirty *d = hold(fs->dirties, ino);

	if (!d)
		return NULL;
	pthread_mutex_lock(&d->mu);
	if (!d->gone)
		return d;
	pthread_mutex_unlock(&d->mu);
	let_go(fs->dirties, d);
	return NULL;
}

static void unlock_dirty(struct tcfs_fs *fs, struct dirty *d)
{
	pthread_mutex_unlock(&d->mu);
	let_go(fs->dirties, d);
}

/* A new stage holding the inode's current bytes. */
static int stage_from(struct tcfs_fs *fs, const struct tcfs_node *n,
		      struct tcfs_cas_stage **out)
{
	char buf[1 << 16], *bytes = NULL;
	uint64_t off = 0;
	size_t len = 0;
	int fd, rc;

	rc = tcfs_cas_stage_new(tcfs_store_cas(fs->store), out);
	if (rc < 0 || n->size == 0)
		return rc;
	if (n->fmt == TCFS_FMT_GROUP) {
		rc = fs_render(fs, n, FS_KIND_STORE, &bytes, &len);
		if (rc == 0)
			rc = tcfs_cas_stage_write(*out, bytes, len, 0);
		free(bytes);
	} else {
		/* Checked: a damaged blob copied into a new one would pass
		 * for whole from then on. */
		fd = tcfs_cas_open_checked(tcfs_store_cas(fs->store), &n->blob);
		rc = fd < 0 ? fs_blob_failed(fs, &n->blob, fd) : 0;
		while (rc == 0) {
			ssize_t got = pread(fd, buf, sizeof(buf), (off_t)off);

			if (got <= 0) {
				rc = got < 0 ? -errno : 0;
				break;
			}
			rc = tcfs_cas_stage_write(*out, buf, (size_t)got, off);
			off += (uint64_t)got;
		}
		if (fd >= 0)
			close(fd);
	}
	if (rc < 0) {
		tcfs_cas_stage_abort(*out);
		*out = NULL;
	}
	return rc;
}

static void commit_idle(struct tcfs_fs *fs, int64_t cutoff, int costly);

static int too_many(struct fs_dirties *t)
{
	int full;

	pthread_mutex_lock(&t->mu);
	full = t->n >= DIRTY_MAX;
	pthread_mutex_unlock(&t->mu);
	return full;
}

/* The node's content as the entry has it stored (its row may lag). */
static void with_stored(struct tcfs_node *n, const struct dirty *d)
{
	n->blob = d->stored.blob;
	n->size = d->stored.size;
	n->fmt = d->stored.fmt;
}

/* An entry whose bytes are stored but not yet its row's takes writes
 * again: its stage is made anew from the stored blob. */
static int restage(struct tcfs_fs *fs, struct dirty *d)
{
	struct tcfs_node n;
	int rc = tcfs_ns_get(fs->store, d->ino, &n);

	if (rc < 0)
		return rc;
	with_stored(&n, d);
	return stage_from(fs, &n, &d->stage);
}

/* ino's entry, made from the inode's bytes if it has none; locked. */
static int dirty_get(struct tcfs_fs *fs, uint64_t ino, struct dirty **out)
{
	struct fs_dirties *t = fs->dirties;
	struct dirty *d, *other;
	struct tcfs_node n;
	int rc;

	for (;;) {
		d = lock_dirty(fs, ino);
		if (d && !d->stage && (rc = restage(fs, d)) < 0) {
			unlock_dirty(fs, d);
			return rc;
		}
		if (d) {
			*out = d;
			return 0;
		}
		/* Holding no entry's lock here, so committing others is safe. */
		if (too_many(t))
			commit_idle(fs, INT64_MAX, 0);
		rc = tcfs_ns_get(fs->store, ino, &n);
		if (rc == 0 && n.kind != TCFS_FILE)
			rc = -EISDIR;
		d = rc == 0 ? calloc(1, sizeof(*d)) : NULL;
		if (rc == 0 && !d)
			rc = -ENOMEM;
		if (rc == 0 && (rc = stage_from(fs, &n, &d->stage)) < 0)
			free(d);
		if (rc < 0)
			return rc;
		d->ino = ino;
		d->refs = 1;
		pthread_mutex_init(&d->mu, NULL);
		pthread_mutex_lock(&t->mu);
		for (other = t->bucket[ino % DIRTY_BUCKETS];
		     other && other->ino != ino;)
			other = other->next;
		if (!other) {
			d->next = t->bucket[ino % DIRTY_BUCKETS];
			t->bucket[ino % DIRTY_BUCKETS] = d;
			t->n++;
			pthread_mutex_lock(&d->mu);
			pthread_mutex_unlock(&t->mu);
			*out = d;
			return 0;
		}
		/* Another writer made one meanwhile: use that one. */
		pthread_mutex_unlock(&t->mu);
		d->refs = 0;
		dirty_free(d);
	}
}

static void unhook(struct fs_dirties *t, struct dirty *d)
{
	struct dirty **link;

	pthread_mutex_lock(&t->mu);
	for (link = &t->bucket[d->ino % DIRTY_BUCKETS]; *link != d;)
		link = &(*link)->next;
	*link = d->next;
	d->gone = 1;
	t->n--;
	pthread_mutex_unlock(&t->mu);
}

/* A copy of a stage of size bytes (*out: caller frees). */
static int stage_bytes(const struct tcfs_cas_stage *stage, uint64_t size,
		       char **out, size_t *len)
{
	ssize_t got;

	*out = malloc(size ? size : 1);
	if (!*out)
		return -ENOMEM;
	got = tcfs_cas_stage_pread(stage, *out, size, 0);
	if (got != (ssize_t)size) {
		free(*out);
		*out = NULL;
		return got < 0 ? (int)got : -EIO;
	}
	*len = size;
	return 0;
}

/* Stores the staged bytes as the group policy says (index/model/group.h).  The
 * stage is used up, unless this fails: then it is left as it was. */
static int store_stage(struct tcfs_fs *fs, const struct tcfs_node *n,
		       struct tcfs_cas_stage *stage, struct tcfs_content *c)
{
	struct tcfs_cas *cas = tcfs_store_cas(fs->store);
	struct fs_keydir k;
	struct fs_name nm;
	char *raw = NULL;
	uint64_t size = 0;
	size_t len = 0;
	int rc;

	c->fmt = TCFS_FMT_RAW;
	fs_name_of(&nm, n->name);
	if (fs_drops(fs, &nm)) {
		/* Accepted, never stored: the rename drops the name too. */
		tcfs_cas_stage_abort(stage);
		c->blob = fs->empty;
		c->size = 0;
		return 0;
	}
	if (tcfs_cas_stage_size(stage, &size) == 0 &&
	    tcfs_group_candidate(n->name, size) &&
	    fs_key_of(fs, n, &k) == 0 &&
	    stage_bytes(stage, size, &raw, &len) == 0) {
		rc = tcfs_group_put(cas, k.key, raw, len, fs_store_filter(fs), c,
				    NULL);
		if (rc == 0)
			tcfs_cas_stage_abort(stage);
	} else {
		rc = tcfs_cas_stage_commit(stage, &c->blob, &c->size, NULL);
	}
	free(raw);
	return rc;
}

/* Makes an entry's writes the inode's content.  Called with the entry
 * locked; it leaves the table only once the store has the content, so
 * that whoever finds no entry finds the new bytes in the store (anyone
 * who finds it meanwhile waits for its lock).  A failure leaves it in
 * the table, with its bytes and the error. */
static int commit(struct tcfs_fs *fs, struct dirty *d)
{
	struct tcfs_node n;
	int rc;

	rc = tcfs_ns_get(fs->store, d->ino, &n);
	if (rc == 0 && d->stage) {
		rc = store_stage(fs, &n, d->stage, &d->stored);
		if (rc == 0)
			d->stage = NULL;
	}
	if (rc == 0)
		rc = tcfs_ns_set_content(fs->store, d->ino, &d->stored,
					 d->last_write_ns);
	if (rc == 0 && !tcfs_hash_equal(&n.blob, &d->stored.blob))
		fs_evict_rewritten(fs, &n.blob);
	if (rc == -ENOENT) {	/* removed, and forgotten: nothing to keep */
		tcfs_cas_stage_abort(d->stage);
		d->stage = NULL;
		rc = 0;
	}
	if (rc == 0) {
		if (d->err)
			syslog(LOG_NOTICE, "tcfs: inode %llu: its writes are "
			       "stored now", (unsigned long long)d->ino);
		fs_remote_written(fs, d->ino);
		unhook(fs->dirties, d);
		return 0;
	}
	if (!d->err)
		syslog(LOG_ERR, "tcfs: inode %llu: writes not stored (%s): "
		       "kept, and tried again; until then its rename and "
		       "fsync fail", (unsigned long long)d->ino,
		       tcfs_err_msg()[0] ? tcfs_err_msg() : strerror(-rc));
	d->err = rc;
	return rc;
}

int fs_files_commit(struct tcfs_fs *fs, uint64_t ino)
{
	struct dirty *d = lock_dirty(fs, ino);
	int rc;

	if (!d)
		return 0;
	rc = commit(fs, d);
	unlock_dirty(fs, d);
	return rc;
}

/* Commits every entry idle since before cutoff (all: INT64_MAX); those
 * whose commit must read them back to hash them (costly, cas.h) only
 * when costly is set. */
static void commit_idle(struct tcfs_fs *fs, int64_t cutoff, int costly)
{
	struct fs_dirties *t = fs->dirties;
	struct dirty **due = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&t->mu);
	for (size_t b = 0; b < DIRTY_BUCKETS; b++)
		for (struct dirty *d = t->bucket[b]; d; d = d->next) {
			struct dirty **slot;

			if (d->last_write_ns >= cutoff)
				continue;
			slot = tcfs_vec_push(&due, &n, &cap, sizeof(*slot));
			if (!slot)
				break;
			d->refs++;
			*slot = d;
		}
	pthread_mutex_unlock(&t->mu);
	for (size_t i = 0; i < n; i++) {
		struct dirty *d = due[i];

		pthread_mutex_lock(&d->mu);
		if (!d->gone &&
		    (costly || !d->stage || !tcfs_cas_stage_costly(d->stage)))
			commit(fs, d);
		unlock_dirty(fs, d);
	}
	free(due);
}

void fs_dirty_tick(struct tcfs_fs *fs)
{
	fs_dirty_sweep(fs, FS_DIRTY_IDLE_S, 0);
}

void fs_dirty_sweep(struct tcfs_fs *fs, double idle_s, int costly)
{
	commit_idle(fs, tcfs_ns_now() - (int64_t)(idle_s * 1e9), costly);
}

void fs_files_flush_all(struct tcfs_fs *fs)
{
	commit_idle(fs, INT64_MAX, 1);
}

int fs_files_hold(struct tcfs_fs *fs, const struct tcfs_hash *h)
{
	struct fs_dirties *t = fs->dirties;
	int yes = 0;

	pthread_mutex_lock(&t->mu);
	for (size_t b = 0; !yes && b < DIRTY_BUCKETS; b++)
		for (struct dirty *d = t->bucket[b]; !yes && d; d = d->next) {
			/* Busy: it may be storing h this moment. */
			if (pthread_mutex_trylock(&d->mu) != 0) {
				yes = 1;
				break;
			}
			yes = !d->stage && tcfs_hash_equal(&d->stored.blob, h);
			pthread_mutex_unlock(&d->mu);
		}
	pthread_mutex_unlock(&t->mu);
	return yes;
}

int fs_files_size(struct tcfs_fs *fs, uint64_t ino, uint64_t *size,
		  int64_t *mtime_ns)
{
	struct dirty *d = lock_dirty(fs, ino);
	int found = 0;

	if (!d)
		return 0;
	if (!d->stage) {
		*size = d->stored.size;
		found = 1;
	} else if (tcfs_cas_stage_size(d->stage, size) == 0) {
		found = 1;
	}
	*mtime_ns = d->last_write_ns;
	unlock_dirty(fs, d);
	return found;
}

int fs_files_write(struct tcfs_fs *fs, uint64_t ino, const char *buf,
		   size_t size, off_t off)
{
	struct dirty *d;
	int rc = dirty_get(fs, ino, &d);

	if (rc < 0)
		return rc;
	rc = tcfs_cas_stage_write(d->stage, buf, size, (uint64_t)off);
	d->last_write_ns = tcfs_ns_now();
	unlock_dirty(fs, d);
	return rc;
}

/* A truncate is a write like any other: it goes to the stage. */
int fs_files_truncate(struct tcfs_fs *fs, const struct tcfs_node *n,
		      uint64_t size)
{
	struct dirty *d;
	int rc;

	if (n->kind == TCFS_DIR)
		return -EISDIR;
	rc = dirty_get(fs, n->ino, &d);
	if (rc < 0)
		return rc;
	rc = tcfs_cas_stage_truncate(d->stage, size);
	d->last_write_ns = tcfs_ns_now();
	unlock_dirty(fs, d);
	return rc;
}

/* Up to size bytes of a stage from off (*out: caller frees). */
static int read_stage(const struct tcfs_cas_stage *stage, size_t size,
		      off_t off, char **out, size_t *got)
{
	ssize_t n;

	*out = malloc(size ? size : 1);
	if (!*out)
		return -ENOMEM;
	n = tcfs_cas_stage_pread(stage, *out, size, (uint64_t)off);
	if (n < 0) {
		free(*out);
		*out = NULL;
		return (int)n;
	}
	*got = (size_t)n;
	return 1;
}

int fs_files_read(struct tcfs_fs *fs, uint64_t ino, size_t size, off_t off,
		  char **bytes, size_t *got, struct tcfs_node *n)
{
	struct dirty *d = lock_dirty(fs, ino);
	int rc;

	if (d && d->stage) {	/* writes not committed are the bytes */
		rc = read_stage(d->stage, size, off, bytes, got);
		unlock_dirty(fs, d);
		return rc;
	}
	rc = tcfs_ns_get(fs->store, ino, n);
	if (d) {		/* stored, but not yet the row's */
		with_stored(n, d);
		unlock_dirty(fs, d);
	}
	return rc;
}
