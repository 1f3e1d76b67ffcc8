/* cas: the content-addressed blobs, and the check of what is served. */
#include "index/blob/cas.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/blob/blobset.h"
#include "index/base/err.h"
#include "index/base/io.h"
#include "index/blob/space.h"

/* Blobs put lately, and when.  The row that names a blob is committed
 * after its put (a batch, a retry after a full disk), so a blob put
 * within the put grace is never freed (tcfs_cas_free), referenced or
 * not. */
#define CAS_FRESH_N 4096

struct cas_fresh {
	uint64_t h;	/* the hash's first 8 bytes */
	int64_t at_ns;
};

/* What this handle knows of a blob's bytes (tcfs_cas_open_checked). */
enum cas_verdict {
	CAS_UNCHECKED = 0,
	CAS_GOOD,		/* read back, written or compared: they match */
	CAS_BAD,		/* damaged or gone: never served again */
};

struct tcfs_cas {
	int objfd;	/* STORE/objects */
	int stagefd;	/* STORE/staging */
	int storefd;	/* STORE, for quarantine/ (not owned) */
	char *path;	/* STORE, for messages */
	atomic_ulong seq;
	atomic_int newfile;	/* enum cas_newfile */
	atomic_size_t mem;	/* memory that stages hold */
	_Atomic uint64_t pending;	/* bytes promised room (take_room) */
	pthread_mutex_t verdict_mu;	/* guards: */
	struct tcfs_blobset verdicts;	/* enum cas_verdict by blob */
	/* Puts hold it shared, tcfs_cas_free exclusive: a blob a put found
	 * or made is in fresh[] before a free can look. */
	pthread_rwlock_t free_lock;
	struct cas_fresh fresh[CAS_FRESH_N];
	atomic_size_t fresh_next;
	_Atomic uint64_t created_bytes;	/* blobs this handle added */
	_Atomic uint64_t freed_bytes;	/* and freed */
	_Atomic uint64_t opens;		/* blobs opened to read */
	atomic_int write_early;		/* tcfs_cas_write_early */
};

struct tcfs_cas_stage {
	struct tcfs_cas *cas;
	int fd;			/* -1 while the bytes are in mem */
	char name[64];		/* under staging/, once there is a file;
				 * "" while it has no name (newfile_how) */
	char *mem;
	size_t len, cap;	/* of mem; cap is counted in cas->mem */
	struct tcfs_hasher *hasher;
	uint64_t hashed;	/* bytes hashed so far, all in order */
	int in_order;		/* every write so far was an append */
};

/* "ab/<32 hex>": the fan-out keeps directories small on big stores. */
struct blob_path {
	char s[3 + TCFS_HASH_HEXLEN];
};

static struct blob_path blob_path(const struct tcfs_hash *h)
{
	struct blob_path p;

	tcfs_hash_hex(h, p.s + 3);
	p.s[0] = p.s[3];
	p.s[1] = p.s[4];
	p.s[2] = '/';
	return p;
}

static enum cas_verdict verdict(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	int v;

	pthread_mutex_lock(&cas->verdict_mu);
	v = tcfs_blobset_get(&cas->verdicts, h);
	pthread_mutex_unlock(&cas->verdict_mu);
	return (enum cas_verdict)v;
}

/* Records a verdict; returns the one it replaced.  Out of memory, the
 * blob is only checked again next time. */
static enum cas_verdict judge(struct tcfs_cas *cas, const struct tcfs_hash *h,
			      enum cas_verdict v)
{
	int old;

	pthread_mutex_lock(&cas->verdict_mu);
	old = tcfs_blobset_get(&cas->verdicts, h);
	tcfs_blobset_set(&cas->verdicts, h, (int)v);
	pthread_mutex_unlock(&cas->verdict_mu);
	return (enum cas_verdict)old;
}

/* The key of a verdict on the file fd has open as blob h: h with the
 * file's identity (device, inode, size, change time).  Bytes are served
 * unread only from the very file that was checked: another put at h's
 * path later (by whoever can write objects/) is a file of its own, and
 * is checked before it is served.  0, or -errno. */
static int file_key(const struct tcfs_hash *h, int fd, struct tcfs_hash *k)
{
	struct {
		struct tcfs_hash h;
		uint64_t dev, ino, size;
		int64_t ctime_s, ctime_ns;
	} id;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	memset(&id, 0, sizeof(id));
	id.h = *h;
	id.dev = (uint64_t)st.st_dev;
	id.ino = (uint64_t)st.st_ino;
	id.size = (uint64_t)st.st_size;
	id.ctime_s = (int64_t)st.st_ctim.tv_sec;
	id.ctime_ns = (int64_t)st.st_ctim.tv_nsec;
	tcfs_hash_buf(&id, sizeof(id), k);
	return 0;
}

/* Blob h is whole and not judged bad, and fd is the file of it whose
 * bytes were read or written and matched. */
static void judge_file(struct tcfs_cas *cas, const struct tcfs_hash *h, int fd)
{
	struct tcfs_hash k;

	judge(cas, h, CAS_GOOD);
	if (file_key(h, fd, &k) == 0)
		judge(cas, &k, CAS_GOOD);
}

/* Whether fd is a file of blob h already checked (judge_file). */
static int file_checked(struct tcfs_cas *cas, const struct tcfs_hash *h,
			int fd)
{
	struct tcfs_hash k;

	return file_key(h, fd, &k) == 0 && verdict(cas, &k) == CAS_GOOD;
}

/* How a stage's file is made (newfile_how). */
enum cas_newfile {
	CAS_NEWFILE_UNKNOWN = 0,
	CAS_NEWFILE_NAMED,	/* staging/NAME, renamed to its blob name */
	CAS_NEWFILE_FLINK,	/* O_TMPFILE, linked by linkat(AT_EMPTY_PATH) */
	CAS_NEWFILE_PROC,	/* O_TMPFILE, linked by /proc/self/fd/N */
};

static int open_subdir(int storefd, const char *storepath, const char *name,
		       int create)
{
	int fd;

	if (create && mkdirat(storefd, name, 0700) < 0 && errno != EEXIST)
		return tcfs_err_errno(-errno, "%s/%s", storepath, name);
	fd = openat(storefd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s/%s", storepath, name);
	return fd;
}

int tcfs_cas_open(int storefd, const char *storepath, int create,
		  struct tcfs_cas **out)
{
	struct tcfs_cas *cas = calloc(1, sizeof(*cas));
	int rc;

	if (!cas)
		return -ENOMEM;
	cas->objfd = cas->stagefd = -1;
	cas->storefd = storefd;
	pthread_mutex_init(&cas->verdict_mu, NULL);
	pthread_rwlock_init(&cas->free_lock, NULL);
	cas->path = strdup(storepath);
	if (!cas->path) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = open_subdir(storefd, storepath, "objects", create);
	if (rc < 0)
		goto fail;
	cas->objfd = rc;
	rc = open_subdir(storefd, storepath, "staging", create);
	if (rc < 0)
		goto fail;
	cas->stagefd = rc;
	*out = cas;
	return 0;
fail:
	tcfs_cas_close(cas);
	return rc;
}

void tcfs_cas_close(struct tcfs_cas *cas)
{
	if (!cas)
		return;
	if (cas->objfd >= 0)
		close(cas->objfd);
	if (cas->stagefd >= 0)
		close(cas->stagefd);
	tcfs_blobset_free(&cas->verdicts);
	pthread_mutex_destroy(&cas->verdict_mu);
	pthread_rwlock_destroy(&cas->free_lock);
	free(cas->path);
	free(cas);
}

void tcfs_cas_write_early(struct tcfs_cas *cas)
{
	atomic_store(&cas->write_early, 1);
}

/* Stages stay in memory up to this size each and this much in all: most
 * files Triton writes are a few KiB, and a stage that becomes no blob (the
 * store has its bytes already, or it is a group file stored as a template)
 * then never touches the disk, which spares the file system an inode
 * made and removed per file.  Past either limit a stage moves to a file. */
#define STAGE_MEM_MAX (1u << 20)
#define STAGE_MEM_TOTAL (64u << 20)

int tcfs_cas_stage_new(struct tcfs_cas *cas, struct tcfs_cas_stage **out)
{
	struct tcfs_cas_stage *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->cas = cas;
	s->fd = -1;
	s->in_order = 1;
	s->hasher = tcfs_hash_new();
	if (!s->hasher) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

/* Feeds n zero bytes to h: holes, and a file grown by a truncate. */
static void hash_zeros(struct tcfs_hasher *h, uint64_t n)
{
	static const char zeros[1 << 16];

	for (; n > sizeof(zeros); n -= sizeof(zeros))
		tcfs_hash_update(h, zeros, sizeof(zeros));
	tcfs_hash_update(h, zeros, (size_t)n);
}

/* Hashes fd's bytes from *off up to upto (or EOF), moving *off: 0, 1 at
 * EOF, or -errno. */
static int hash_range(int fd, struct tcfs_hasher *h, char *buf, size_t len,
		      uint64_t *off, uint64_t upto)
{
	while (*off < upto) {
		size_t want = upto - *off < len ? (size_t)(upto - *off) : len;
		ssize_t n = pread(fd, buf, want, (off_t)*off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 1;
		tcfs_hash_update(h, buf, (size_t)n);
		*off += (uint64_t)n;
	}
	return 0;
}

/* Takes room for len more bytes on their way to the disk: counted in
 * cas->pending until they are there (give_room), with every byte that a
 * stage holds in memory, so that all the bytes writers were promised fit
 * together and two writers never both take the last room.  -ENOSPC
 * (with a message) when blobs cannot take them (space.h). */
static int take_room(struct tcfs_cas *cas, uint64_t len)
{
	uint64_t pending = atomic_fetch_add(&cas->pending, len) + len;
	struct tcfs_space sp;
	int rc;

	if (tcfs_space_read(cas->stagefd, &sp) < 0)
		return 0;	/* the write itself will tell */
	rc = tcfs_space_blobs_fit(&sp, 0, pending, cas->path);
	if (rc < 0)
		atomic_fetch_sub(&cas->pending, len);
	return rc;
}

static void give_room(struct tcfs_cas *cas, uint64_t len)
{
	uint64_t was = atomic_fetch_sub(&cas->pending, len);

	assert(was >= len);
	(void)was;
}

/* A stage in memory holds room for its len bytes (take_room). */
static void mem_free(struct tcfs_cas_stage *s)
{
	if (s->fd < 0)
		give_room(s->cas, s->len);
	atomic_fetch_sub(&s->cas->mem, s->cap);
	free(s->mem);
	s->mem = NULL;
	s->len = s->cap = 0;
}

/* Makes mem hold size bytes, zero-filling any growth; -1 when the stage
 * must go to a file instead (too big, or memory is short).  Room for the
 * growth must be taken already; room for a shrink is given back. */
static int mem_resize(struct tcfs_cas_stage *s, uint64_t size)
{
	size_t cap = s->cap ? s->cap : 4096, more;
	char *p;

	if (size > STAGE_MEM_MAX)
		return -1;
	while (cap < size)
		cap *= 2;
	if (cap > STAGE_MEM_MAX)
		cap = STAGE_MEM_MAX;
	if (cap > s->cap) {
		more = cap - s->cap;
		if (atomic_fetch_add(&s->cas->mem, more) + more >
		    STAGE_MEM_TOTAL) {
			atomic_fetch_sub(&s->cas->mem, more);
			return -1;
		}
		p = realloc(s->mem, cap);
		if (!p) {
			atomic_fetch_sub(&s->cas->mem, more);
			return -1;
		}
		s->mem = p;
		s->cap = cap;
	}
	if (size > s->len)
		memset(s->mem + s->len, 0, size - s->len);
	else
		give_room(s->cas, s->len - size);
	s->len = size;
	return 0;
}

/* Makes a stage in memory len bytes long (growing or shrinking it), its
 * room taken or given back; -ENOSPC, or 1 when it must go to a file. */
static int mem_set_len(struct tcfs_cas_stage *s, uint64_t len)
{
	uint64_t grow = len > s->len ? len - s->len : 0;
	int rc;

	if (len > STAGE_MEM_MAX)
		return 1;	/* its room is taken as it is written */
	rc = grow ? take_room(s->cas, grow) : 0;
	if (rc < 0)
		return rc;
	if (mem_resize(s, len) == 0)
		return 0;
	give_room(s->cas, grow);
	return 1;
}

static int stage_err(const struct tcfs_cas_stage *s, int rc)
{
	if (s->name[0])
		return tcfs_err_errno(rc, "%s/staging/%s", s->cas->path,
				      s->name);
	return tcfs_err_errno(rc, "%s/objects (a new blob)", s->cas->path);
}

/* Gives the unnamed file fd the name dirfd/name, as how says. */
static int link_fd(enum cas_newfile how, int fd, int dirfd, const char *name)
{
	char proc[32];

	assert(how == CAS_NEWFILE_FLINK || how == CAS_NEWFILE_PROC);
	if (how == CAS_NEWFILE_FLINK)
		return linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
}

static void next_stage_name(struct tcfs_cas *cas, char *buf, size_t len)
{
	snprintf(buf, len, "%ld.%lu", (long)getpid(),
		 atomic_fetch_add(&cas->seq, 1));
}

/*
 * How this handle makes a stage's file, found out once by trying.  An
 * unnamed file (O_TMPFILE) in objects/, linked to its blob name once
 * whole, costs the file system one name where a staging/ file costs
 * three (made, then moved): a tenth of an import's time.  A crash leaves
 * it nowhere: the file system frees it.  Linking by descriptor needs
 * CAP_DAC_READ_SEARCH before Linux 6.10, else /proc; file systems
 * without O_TMPFILE (FUSE, vfat, older NFS) stage by name.
 */
static enum cas_newfile newfile_how(struct tcfs_cas *cas)
{
	int how = atomic_load(&cas->newfile), expected;
	char name[64];
	int fd;

	if (how != CAS_NEWFILE_UNKNOWN)
		return how;
	how = CAS_NEWFILE_NAMED;
	fd = openat(cas->objfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		next_stage_name(cas, name, sizeof(name));
		if (link_fd(CAS_NEWFILE_FLINK, fd, cas->stagefd, name) == 0)
			how = CAS_NEWFILE_FLINK;
		else if (link_fd(CAS_NEWFILE_PROC, fd, cas->stagefd,
				 name) == 0)
			how = CAS_NEWFILE_PROC;
		if (how != CAS_NEWFILE_NAMED)
			unlinkat(cas->stagefd, name, 0);
		close(fd);
	}
	/* The first answer stands: stages made by it are placed by it. */
	expected = CAS_NEWFILE_UNKNOWN;
	if (!atomic_compare_exchange_strong(&cas->newfile, &expected, how))
		how = expected;
	return how;
}

/* Opens a new, empty file for the stage: unnamed in objects/ where the
 * file system can, else under staging/. */
static int stage_open(struct tcfs_cas_stage *s)
{
	struct tcfs_cas *cas = s->cas;

	s->name[0] = '\0';
	if (newfile_how(cas) != CAS_NEWFILE_NAMED) {
		s->fd = openat(cas->objfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC,
			       0600);
		return s->fd < 0 ? stage_err(s, -errno) : 0;
	}
	do {
		next_stage_name(cas, s->name, sizeof(s->name));
		s->fd = openat(cas->stagefd, s->name,
			       O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} while (s->fd < 0 && errno == EEXIST);
	if (s->fd < 0)
		return tcfs_err_errno(-errno, "%s/staging", cas->path);
	return 0;
}

/* Closes the stage's file, and removes it where it has a name. */
static void stage_close(struct tcfs_cas_stage *s)
{
	if (s->fd < 0)
		return;
	if (s->name[0])
		unlinkat(s->cas->stagefd, s->name, 0);
	close(s->fd);
	s->fd = -1;
}

/* Moves the bytes from mem to a new file (stage_open); on failure the
 * stage is as it was. */
static int stage_to_file(struct tcfs_cas_stage *s)
{
	struct tcfs_cas *cas = s->cas;
	int rc = 0;

	/* The bytes have their room already: is it still there? */
	if (s->len)
		rc = take_room(cas, 0);
	if (rc == 0)
		rc = stage_open(s);
	if (rc < 0)
		return rc;
	rc = tcfs_io_pwrite_all(s->fd, s->mem, s->len, 0);
	if (rc < 0) {
		rc = stage_err(s, rc);
		stage_close(s);
		return rc;
	}
	give_room(cas, s->len);	/* on the disk now */
	mem_free(s);
	return 0;
}

/* Writes to the stage's file, its room taken for the while. */
static int file_write(struct tcfs_cas_stage *s, const void *buf, size_t len,
		      uint64_t off)
{
	int rc = take_room(s->cas, len);

	if (rc < 0)
		return rc;
	rc = tcfs_io_pwrite_all(s->fd, buf, len, off);
	give_room(s->cas, len);
	if (rc < 0)
		return stage_err(s, rc);
	return 0;
}

int tcfs_cas_stage_write(struct tcfs_cas_stage *s, const void *buf,
			 size_t len, uint64_t off)
{
	uint64_t end = off + len;
	int rc = 1;

	if (s->fd < 0)
		rc = mem_set_len(s, end > s->len ? end : s->len);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		memcpy(s->mem + off, buf, len);
	} else {
		if (s->fd < 0 && (rc = stage_to_file(s)) < 0)
			return rc;
		rc = file_write(s, buf, len, off);
		if (rc < 0)
			return rc;
	}
	/* A write past the end leaves zeros before it: hashed as such, they
	 * keep the stage in order, and its commit needs no read back. */
	if (s->in_order && off >= s->hashed) {
		hash_zeros(s->hasher, off - s->hashed);
		tcfs_hash_update(s->hasher, buf, len);
		s->hashed = off + len;
	} else {
		s->in_order = 0;
	}
	return 0;
}

int tcfs_cas_stage_truncate(struct tcfs_cas_stage *s, uint64_t size)
{
	int rc = 1;

	if (s->fd < 0)
		rc = mem_set_len(s, size);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		if (s->fd < 0 && (rc = stage_to_file(s)) < 0)
			return rc;
		/* A hole takes no room until it is written. */
		if (ftruncate(s->fd, (off_t)size) < 0)
			return stage_err(s, -errno);
	}
	/* Grown, a stage in order is so still: the new bytes are zeros.
	 * Hashed here, in its writer's own request, so that the commit (at
	 * a rename, which holds both directories) has nothing left to do. */
	if (s->in_order && size > s->hashed) {
		hash_zeros(s->hasher, size - s->hashed);
		s->hashed = size;
	} else if (size != s->hashed) {
		s->in_order = 0;
	}
	return 0;
}

int tcfs_cas_stage_costly(const struct tcfs_cas_stage *s)
{
	return s->fd >= 0 && !s->in_order;
}

int tcfs_cas_stage_size(const struct tcfs_cas_stage *s, uint64_t *size)
{
	struct stat st;

	if (s->fd < 0) {
		*size = s->len;
		return 0;
	}
	if (fstat(s->fd, &st) < 0)
		return stage_err(s, -errno);
	*size = (uint64_t)st.st_size;
	return 0;
}

ssize_t tcfs_cas_stage_pread(const struct tcfs_cas_stage *s, void *buf,
			     size_t len, uint64_t off)
{
	ssize_t n;

	if (s->fd < 0) {
		if (off >= s->len)
			return 0;
		if (len > s->len - off)
			len = s->len - off;
		memcpy(buf, s->mem + off, len);
		return (ssize_t)len;
	}
	n = pread(s->fd, buf, len, (off_t)off);
	if (n < 0)
		return stage_err(s, -errno);
	return n;
}

static void stage_free(struct tcfs_cas_stage *s)
{
	if (s->fd >= 0)
		close(s->fd);
	mem_free(s);
	tcfs_hash_free(s->hasher);
	free(s);
}

void tcfs_cas_stage_abort(struct tcfs_cas_stage *s)
{
	if (!s)
		return;
	stage_close(s);
	stage_free(s);
}

/* Hashes fd from offset 0 to EOF.  Holes are hashed as the zeros they
 * read as, without reading them: a sparse file of 50 GiB costs seconds
 * of hashing, not minutes of copying zero pages. */
static int hash_fd(int fd, struct tcfs_hash *out, uint64_t *size)
{
	struct tcfs_hasher *h = tcfs_hash_new();
	char buf[1 << 16];
	uint64_t total = 0, end;
	struct stat st;
	int rc = 0;

	if (!h)
		return -ENOMEM;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	end = (uint64_t)st.st_size;
	while (rc == 0) {
		/* Past the last data (ENXIO), or where holes are not told
		 * (EINVAL), data runs to the end as far as we know. */
		off_t data = lseek(fd, (off_t)total, SEEK_DATA);
		uint64_t upto;

		if (data < 0)
			data = errno == ENXIO ? (off_t)end : (off_t)total;
		if ((uint64_t)data > total && (uint64_t)data <= end) {
			hash_zeros(h, (uint64_t)data - total);
			total = (uint64_t)data;
		}
		data = lseek(fd, (off_t)total, SEEK_HOLE);
		upto = data < 0 ? UINT64_MAX : (uint64_t)data;
		rc = hash_range(fd, h, buf, sizeof(buf), &total, upto);
		if (rc == 1)	/* at EOF */
			rc = 0, end = total;
		if (total >= end)
			break;
	}
out:
	if (rc == 0) {
		tcfs_hash_final(h, out);
		*size = total;
	}
	tcfs_hash_free(h);
	return rc;
}

/* Gives an unnamed stage's file a name under staging/, to be renamed
 * over a damaged blob: a link cannot replace one. */
static int stage_name(struct tcfs_cas_stage *s)
{
	struct tcfs_cas *cas = s->cas;
	enum cas_newfile how = atomic_load(&cas->newfile);
	char name[sizeof(s->name)];
	int rc;

	if (s->name[0])
		return 0;
	do {
		next_stage_name(cas, name, sizeof(name));
		rc = link_fd(how, s->fd, cas->stagefd, name);
	} while (rc < 0 && errno == EEXIST);
	if (rc < 0)
		return tcfs_err_errno(-errno, "%s/staging", cas->path);
	memcpy(s->name, name, sizeof(name));
	return 0;
}

/* An existing blob of the same name: share it if its bytes equal the staged
 * ones, heal it if it is damaged, refuse if it is a genuine collision. */
static int settle_existing(struct tcfs_cas_stage *s, const struct tcfs_hash *h,
			   enum tcfs_cas_put *put)
{
	struct tcfs_cas *cas = s->cas;
	struct blob_path p = blob_path(h);
	int objfd = openat(cas->objfd, p.s, O_RDONLY | O_CLOEXEC);
	int rc;

	if (objfd < 0)
		return -errno;
	rc = tcfs_io_same_bytes(objfd, s->fd);
	if (rc == 1)
		judge_file(cas, h, objfd);
	close(objfd);
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/objects/%s", cas->path, p.s);
	if (rc == 1) {
		*put = TCFS_CAS_SHARED;
		stage_close(s);
		return 0;
	}
	rc = tcfs_cas_verify(cas, h);
	if (rc == 0) {
		return tcfs_err_set(-EIO,
				    "%s/objects/%s: hash collision: different "
				    "bytes with the same XXH3-128; not stored",
				    cas->path, p.s);
	}
	/* The stored copy is damaged (or vanished meanwhile): the staged bytes
	 * hash to the name, so they are the right ones, sealed like any. */
	rc = stage_name(s);
	if (rc < 0)
		return rc;
	if (fchmod(s->fd, 0444) < 0 || fsync(s->fd) < 0 ||
	    renameat(cas->stagefd, s->name, cas->objfd, p.s) < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	s->name[0] = '\0';	/* it is the blob now */
	*put = TCFS_CAS_HEALED;
	judge_file(cas, h, s->fd);
	return 0;
}

/* Gives the stage's file the blob name path, never replacing one. */
static int place(struct tcfs_cas_stage *s, const char *path)
{
	struct tcfs_cas *cas = s->cas;

	if (!s->name[0])
		return link_fd(atomic_load(&cas->newfile), s->fd, cas->objfd,
			       path);
	return renameat2(cas->stagefd, s->name, cas->objfd, path,
			 RENAME_NOREPLACE);
}

/* Gives a fully written stage its blob name.  On success the stage has no
 * name left under staging/; on failure it is left, with its bytes, for the
 * caller to try again or abort. */
static int install(struct tcfs_cas_stage *s, const struct tcfs_hash *h,
		   enum tcfs_cas_put *put)
{
	struct tcfs_cas *cas = s->cas;
	struct blob_path p = blob_path(h);
	char sub[3] = { p.s[0], p.s[1], '\0' };
	struct stat st;
	int rc;

	if (fstatat(cas->objfd, p.s, &st, 0) == 0)
		return settle_existing(s, h, put);
	/* Not fsynced: the store makes blobs durable in batches, and checks
	 * them after a crash (durable.h). */
	if (fchmod(s->fd, 0444) < 0)
		goto fail;
	rc = place(s, p.s);
	if (rc < 0 && errno == ENOENT) {
		if (mkdirat(cas->objfd, sub, 0700) < 0 && errno != EEXIST)
			goto fail;
		rc = place(s, p.s);
	}
	if (rc < 0 && errno == EEXIST)	/* another thread won the race */
		return settle_existing(s, h, put);
	if (rc < 0)
		goto fail;
	s->name[0] = '\0';
	*put = TCFS_CAS_CREATED;
	judge_file(cas, h, s->fd);
	/* A hint: a failed start leaves the bytes to the next sync. */
	if (atomic_load_explicit(&cas->write_early, memory_order_relaxed))
		sync_file_range(s->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	return 0;
fail:
	return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
}

/* Shares an existing blob without writing anything when the bytes match:
 * re-importing a cache costs reads only. */
static int put_buf_existing(struct tcfs_cas *cas, const void *buf, size_t len,
			    const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);
	int fd = openat(cas->objfd, p.s, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = tcfs_io_equals_buf(fd, buf, len);
	if (rc == 1)
		judge_file(cas, h, fd);
	close(fd);
	return rc == 1 ? 0 : -EAGAIN;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t fresh_key(const struct tcfs_hash *h)
{
	uint64_t k;

	memcpy(&k, h->b, sizeof(k));
	return k;
}

/* Ends a put begun with pthread_rwlock_rdlock(&cas->free_lock). */
static int put_done(struct tcfs_cas *cas, const struct tcfs_hash *h,
		    uint64_t size, enum tcfs_cas_put put, int rc)
{
	if (rc == 0) {
		size_t i = atomic_fetch_add(&cas->fresh_next, 1) % CAS_FRESH_N;

		cas->fresh[i].h = fresh_key(h);
		cas->fresh[i].at_ns = now_ns();
		if (put == TCFS_CAS_CREATED)
			atomic_fetch_add(&cas->created_bytes, size);
	}
	pthread_rwlock_unlock(&cas->free_lock);
	return rc;
}

static int stage_commit(struct tcfs_cas_stage *s, struct tcfs_hash *out,
			uint64_t *size, enum tcfs_cas_put *put)
{
	int rc;

	rc = tcfs_cas_stage_size(s, size);
	if (rc < 0)
		return rc;
	if (s->in_order && *size == s->hashed) {
		tcfs_hash_final(s->hasher, out);
	} else if (s->fd < 0) {
		tcfs_hash_buf(s->mem, s->len, out);
	} else if ((rc = hash_fd(s->fd, out, size)) < 0) {
		return stage_err(s, rc);
	}
	if (s->fd < 0) {
		/* Bytes the store has already never touch the disk. */
		if (put_buf_existing(s->cas, s->mem, s->len, out) == 0) {
			*put = TCFS_CAS_SHARED;
			stage_free(s);
			return 0;
		}
		rc = stage_to_file(s);
		if (rc < 0)
			return rc;
	}
	rc = install(s, out, put);
	if (rc == 0)
		stage_free(s);
	return rc;
}

int tcfs_cas_stage_commit(struct tcfs_cas_stage *s, struct tcfs_hash *out,
			  uint64_t *size, enum tcfs_cas_put *put)
{
	struct tcfs_cas *cas = s->cas;
	enum tcfs_cas_put dummy;
	int rc;

	if (!put)
		put = &dummy;
	pthread_rwlock_rdlock(&cas->free_lock);
	rc = stage_commit(s, out, size, put);
	return put_done(cas, out, *size, *put, rc);
}

int tcfs_cas_put_buf(struct tcfs_cas *cas, const void *buf, size_t len,
		     struct tcfs_hash *out, enum tcfs_cas_put *put)
{
	enum tcfs_cas_put dummy;
	struct tcfs_cas_stage *s;
	uint64_t size = len;
	int rc;

	if (!put)
		put = &dummy;
	tcfs_hash_buf(buf, len, out);
	pthread_rwlock_rdlock(&cas->free_lock);
	if (put_buf_existing(cas, buf, len, out) == 0) {
		*put = TCFS_CAS_SHARED;
		return put_done(cas, out, size, *put, 0);
	}
	/* New bytes: straight to a file, not by way of memory, their hash
	 * known already. */
	rc = tcfs_cas_stage_new(cas, &s);
	if (rc == 0) {
		rc = stage_to_file(s);
		if (rc == 0)
			rc = file_write(s, buf, len, 0);
		if (rc == 0)
			rc = install(s, out, put);
		if (rc == 0)
			stage_free(s);
		else
			tcfs_cas_stage_abort(s);
	}
	return put_done(cas, out, size, *put, rc);
}

/* Files up to this size are read whole, so a blob that exists costs no
 * writes at all. */
#define PUT_FD_BUFFERED (8u << 20)

int tcfs_cas_put_fd(struct tcfs_cas *cas, int fd, struct tcfs_hash *out,
		    uint64_t *size, enum tcfs_cas_put *put)
{
	struct tcfs_cas_stage *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tcfs_io_read_small(fd, PUT_FD_BUFFERED, &buf, &len);
	if (rc == 0) {
		rc = tcfs_cas_put_buf(cas, buf, len, out, put);
		free(buf);
		*size = len;
		return rc;
	}
	if (rc != -EFBIG)
		return rc;
	/* Too big to buffer: buf holds the first len bytes already read. */
	rc = tcfs_cas_stage_new(cas, &s);
	if (rc == 0)
		rc = tcfs_cas_stage_write(s, buf, len, 0);
	free(buf);
	if (rc < 0)
		goto fail;
	for (;;) {
		char chunk[1 << 16];
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;	/* the caller names its own file */
			tcfs_err_clear();
			goto fail;
		}
		if (n == 0)
			break;
		rc = tcfs_cas_stage_write(s, chunk, (size_t)n, s->hashed);
		if (rc < 0)
			goto fail;
	}
	rc = tcfs_cas_stage_commit(s, out, size, put);
	if (rc == 0)
		return 0;
fail:
	if (s)
		tcfs_cas_stage_abort(s);
	return rc;
}

int tcfs_cas_open_blob(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);
	int fd = openat(cas->objfd, p.s, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	atomic_fetch_add_explicit(&cas->opens, 1, memory_order_relaxed);
	return fd;
}

/* The check of a blob about to be served, its bytes read by the caller
 * (got, or none when got is NULL: the blob is gone): 0 when they may be
 * served, else the error to give, with a message.  Only the call that
 * finds a blob bad gets -EBADMSG or -ENOENT; later ones get -EIO. */
static int judge_served(struct tcfs_cas *cas, const struct tcfs_hash *h,
			const struct tcfs_hash *got)
{
	struct blob_path p = blob_path(h);
	int good = got && tcfs_hash_equal(got, h);

	if (judge(cas, h, good ? CAS_GOOD : CAS_BAD) == CAS_BAD && !good)
		return tcfs_err_set(-EIO, "%s/objects/%s: damaged or missing, "
				    "not served", cas->path, p.s);
	if (good)
		return 0;
	if (!got)
		return tcfs_err_set(-ENOENT, "%s/objects/%s: missing",
				    cas->path, p.s);
	return tcfs_err_set(-EBADMSG, "%s/objects/%s: damaged (its bytes do "
			    "not match its name; run tcfs fsck)", cas->path,
			    p.s);
}

/* Opens a blob to serve, or answers for one judged bad already. */
static int open_served(struct tcfs_cas *cas, const struct tcfs_hash *h,
		       enum cas_verdict *v)
{
	int fd;

	*v = verdict(cas, h);
	if (*v == CAS_BAD)
		return judge_served(cas, h, NULL);
	fd = tcfs_cas_open_blob(cas, h);
	if (fd == -ENOENT)
		return judge_served(cas, h, NULL);
	return fd;
}

int tcfs_cas_open_checked(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);
	enum cas_verdict v;
	struct tcfs_hash got, k;
	uint64_t size;
	int fd, rc, keyed;

	fd = open_served(cas, h, &v);
	if (fd < 0 || (v == CAS_GOOD && file_checked(cas, h, fd)))
		return fd;
	/* The identity as it was before the bytes were read. */
	keyed = file_key(h, fd, &k) == 0;
	rc = hash_fd(fd, &got, &size);
	if (rc < 0) {	/* no verdict: the read failed, not the bytes */
		close(fd);
		return tcfs_err_errno(rc, "%s/objects/%s", cas->path, p.s);
	}
	rc = judge_served(cas, h, &got);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	assert(tcfs_hash_equal(&got, h));	/* only its own bytes */
	if (keyed)
		judge(cas, &k, CAS_GOOD);
	return fd;
}

int tcfs_cas_check(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	int fd;

	if (verdict(cas, h) == CAS_GOOD)
		return 0;
	fd = tcfs_cas_open_checked(cas, h);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int tcfs_cas_read_checked(struct tcfs_cas *cas, const struct tcfs_hash *h,
			  size_t max, char **buf, size_t *len)
{
	struct blob_path p = blob_path(h);
	enum cas_verdict v;
	struct tcfs_hash got, k;
	int fd, rc, checked, keyed;

	fd = open_served(cas, h, &v);
	if (fd < 0)
		return fd;
	checked = v == CAS_GOOD && file_checked(cas, h, fd);
	keyed = !checked && file_key(h, fd, &k) == 0;
	rc = tcfs_io_read_small(fd, max, buf, len);
	if (rc == -EFBIG)
		free(*buf);
	if (rc < 0) {
		close(fd);
		return tcfs_err_errno(rc, "%s/objects/%s", cas->path, p.s);
	}
	assert(*len <= max);
	if (checked) {
		close(fd);
		return 0;
	}
	tcfs_hash_buf(*buf, *len, &got);
	rc = judge_served(cas, h, &got);
	if (rc == 0 && keyed)
		judge(cas, &k, CAS_GOOD);
	close(fd);
	if (rc < 0)
		free(*buf);
	/* What is served is the blob's bytes, whole, and never more than
	 * the caller can take. */
	assert(rc < 0 || (tcfs_hash_equal(&got, h) && *len <= max));
	return rc;
}

int tcfs_cas_stat(struct tcfs_cas *cas, const struct tcfs_hash *h,
		  uint64_t *size)
{
	struct blob_path p = blob_path(h);
	struct stat st;

	if (fstatat(cas->objfd, p.s, &st, 0) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

int tcfs_cas_verify(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);
	struct tcfs_hash got;
	uint64_t size;
	int fd, rc;

	fd = openat(cas->objfd, p.s, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	rc = hash_fd(fd, &got, &size);
	close(fd);
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/objects/%s", cas->path, p.s);
	return tcfs_hash_equal(&got, h) ? 0 : -EBADMSG;
}

int tcfs_cas_remove(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);

	if (unlinkat(cas->objfd, p.s, 0) < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	return 0;
}

int tcfs_cas_free(struct tcfs_cas *cas, const struct tcfs_hash *h,
		  int (*referenced)(void *ctx, const struct tcfs_hash *h),
		  void *ctx, uint64_t *freed)
{
	uint64_t k = fresh_key(h), size = 0;
	int64_t since;
	int rc;

	*freed = 0;
	/* Asked before the lock, which puts may wait for with the index
	 * locked: a row committed later comes from a put, which fresh[]
	 * shows.  The empty blob is named by every create, put or not. */
	rc = referenced(ctx, h);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	pthread_rwlock_wrlock(&cas->free_lock);
	since = now_ns() - TCFS_CAS_GRACE_NS;
	for (size_t i = 0; i < CAS_FRESH_N; i++)
		if (cas->fresh[i].h == k && cas->fresh[i].at_ns >= since)
			goto out;
	rc = tcfs_cas_stat(cas, h, &size);
	if (rc == 0 && size > 0)
		rc = tcfs_cas_remove(cas, h);
	if (rc == 0 && size > 0) {
		*freed = size;
		atomic_fetch_add(&cas->freed_bytes, size);
	}
out:
	pthread_rwlock_unlock(&cas->free_lock);
	return rc == -ENOENT ? 0 : rc;
}

int tcfs_cas_fresh(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	uint64_t k = fresh_key(h);
	int64_t since;
	int yes = 0;

	pthread_rwlock_rdlock(&cas->free_lock);
	since = now_ns() - TCFS_CAS_GRACE_NS;
	for (size_t i = 0; i < CAS_FRESH_N && !yes; i++)
		yes = cas->fresh[i].h == k && cas->fresh[i].at_ns >= since;
	pthread_rwlock_unlock(&cas->free_lock);
	return yes;
}

void tcfs_cas_settled(struct tcfs_cas *cas)
{
	pthread_rwlock_wrlock(&cas->free_lock);
	memset(cas->fresh, 0, sizeof(cas->fresh));
	pthread_rwlock_unlock(&cas->free_lock);
}

uint64_t tcfs_cas_opens(struct tcfs_cas *cas)
{
	return atomic_load(&cas->opens);
}

int64_t tcfs_cas_growth(struct tcfs_cas *cas)
{
	return (int64_t)atomic_load(&cas->created_bytes) -
	       (int64_t)atomic_load(&cas->freed_bytes);
}

int tcfs_cas_quarantine(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);
	int qfd, rc = 0;

	qfd = open_subdir(cas->storefd, cas->path, "quarantine", 1);
	if (qfd < 0)
		return qfd;
	if (renameat(cas->objfd, p.s, qfd, p.s + 3) < 0)
		rc = tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	close(qfd);
	return rc;
}

int tcfs_cas_seal(struct tcfs_cas *cas, const struct tcfs_hash *h)
{
	struct blob_path p = blob_path(h);

	if (fchmodat(cas->objfd, p.s, 0444, 0) < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path, p.s);
	return 0;
}

/* A walk of objects/: the top directory, and the fan-out dir in it being
 * read (sub, NULL between two). */
struct tcfs_cas_walk {
	struct tcfs_cas *cas;
	DIR *top;
	DIR *sub;
	char subname[256];
	int done;
};

int tcfs_cas_walk_begin(struct tcfs_cas *cas, struct tcfs_cas_walk **out)
{
	struct tcfs_cas_walk *w = calloc(1, sizeof(*w));
	/* Not a dup: two walks at once must not share one offset. */
	int fd = openat(cas->objfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!w || fd < 0) {
		int rc = !w ? -ENOMEM : -errno;

		free(w);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	w->cas = cas;
	w->top = fdopendir(fd);
	if (!w->top) {
		close(fd);
		free(w);
		return -errno;
	}
	*out = w;
	return 0;
}

void tcfs_cas_walk_end(struct tcfs_cas_walk *w)
{
	if (!w)
		return;
	if (w->sub)
		closedir(w->sub);
	closedir(w->top);
	free(w);
}

int tcfs_cas_walk_done(const struct tcfs_cas_walk *w)
{
	return w->done;
}

/* Opens the next fan-out dir into w->sub, or gives cb a stray file at
 * the top (counted in *seen); sets w->done at the end. */
static int walk_next_sub(struct tcfs_cas_walk *w,
			 int (*cb)(void *, const struct tcfs_cas_entry *),
			 void *ctx, size_t *seen)
{
	struct tcfs_cas *cas = w->cas;
	struct dirent *de;
	int fd;

	do
		de = readdir(w->top);
	while (de && de->d_name[0] == '.');
	if (!de) {
		w->done = 1;
		return 0;
	}
	snprintf(w->subname, sizeof(w->subname), "%s", de->d_name);
	fd = openat(cas->objfd, w->subname,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
		struct tcfs_cas_entry e = { .relpath = w->subname };

		(*seen)++;
		return cb(ctx, &e);
	}
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path,
				      w->subname);
	w->sub = fdopendir(fd);
	if (!w->sub) {
		close(fd);
		return -errno;
	}
	return 0;
}

/* Gives cb the next file of w->sub (counted in *seen); at its end,
 * closes w->sub. */
static int walk_next_file(struct tcfs_cas_walk *w,
			  int (*cb)(void *, const struct tcfs_cas_entry *),
			  void *ctx, size_t *seen)
{
	struct tcfs_cas_entry e = { 0 };
	struct dirent *de;
	struct tcfs_hash h;
	char rel[512];
	struct stat st;

	do
		de = readdir(w->sub);
	while (de && de->d_name[0] == '.');
	if (!de) {
		closedir(w->sub);
		w->sub = NULL;
		return 0;
	}
	(*seen)++;
	if (fstatat(dirfd(w->sub), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;	/* removed meanwhile */
	snprintf(rel, sizeof(rel), "%s/%s", w->subname, de->d_name);
	e.relpath = rel;
	e.size = (uint64_t)st.st_size;
	e.mode = st.st_mode;
	e.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
		     st.st_mtim.tv_nsec;
	if (S_ISREG(st.st_mode) && tcfs_hash_parse(de->d_name, &h) == 0 &&
	    strncmp(de->d_name, w->subname, 2) == 0)
		e.h = &h;
	return cb(ctx, &e);
}

int tcfs_cas_walk_step(struct tcfs_cas_walk *w, size_t max,
		       int (*cb)(void *ctx, const struct tcfs_cas_entry *e),
		       void *ctx)
{
	size_t seen = 0;
	int rc = 0;

	while (rc == 0 && seen < max && !w->done)
		rc = w->sub ? walk_next_file(w, cb, ctx, &seen)
			    : walk_next_sub(w, cb, ctx, &seen);
	return rc;
}

int tcfs_cas_foreach(struct tcfs_cas *cas,
		     int (*cb)(void *ctx, const struct tcfs_cas_entry *e),
		     void *ctx)
{
	struct tcfs_cas_walk *w;
	int rc = tcfs_cas_walk_begin(cas, &w);

	if (rc < 0)
		return rc;
	rc = tcfs_cas_walk_step(w, SIZE_MAX, cb, ctx);
	tcfs_cas_walk_end(w);
	return rc;
}

int tcfs_cas_remove_stray(struct tcfs_cas *cas, const char *relpath)
{
	if (unlinkat(cas->objfd, relpath, 0) < 0)
		return tcfs_err_errno(-errno, "%s/objects/%s", cas->path,
				      relpath);
	return 0;
}

int tcfs_cas_clean_staging(struct tcfs_cas *cas, uint64_t *count)
{
	int fd = dup(cas->stagefd);
	uint64_t n = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	if (count)
		*count = n;
	return 0;
}
