/* cas: blobs are stored once, read-only, verified, healed, never wrong. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/base/err.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

static struct tcfs_store *open_store(const char *dir)
{
	struct tcfs_store_opts o = { dir, 1, 1, 1.0, .recover = tcfs_recover };
	struct tcfs_store *s = NULL;

	if (tcfs_store_open(&o, &s) < 0) {
		printf("Bail out! cannot open store %s\n", dir);
		exit(1);
	}
	return s;
}

static void blob_path(const char *dir, const struct tcfs_hash *h, char *out,
		      size_t len)
{
	char hex[TCFS_HASH_HEXLEN];

	tcfs_hash_hex(h, hex);
	snprintf(out, len, "%s/objects/%.2s/%s", dir, hex, hex);
}

static void flip_byte(const char *path, off_t off)
{
	unsigned char c;
	int fd;

	chmod(path, 0644);
	fd = open(path, O_RDWR);
	if (fd < 0 || pread(fd, &c, 1, off) != 1)
		return;
	c ^= 0x5a;
	if (pwrite(fd, &c, 1, off) != 1)
		perror("pwrite");
	close(fd);
}

struct racer {
	struct tcfs_cas *cas;
	int rc;
	enum tcfs_cas_put put;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct tcfs_hash h;

	r->rc = tcfs_cas_put_buf(r->cas, "same bytes from every thread", 28,
				 &h, &r->put);
	return NULL;
}

/* Entries in a directory, not counting . and .. */
static int dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* This process's open files: a stage moved to a file holds one, named
 * under staging/ or not (cas.c: newfile_how). */
static int open_files(void)
{
	return dir_entries("/proc/self/fd");
}

/* Whether the file system of dir makes unnamed files (O_TMPFILE). */
static int tmpfile_ok(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int count_entries(void *ctx, const struct tcfs_cas_entry *e)
{
	int *n = ctx;

	n[e->h ? 0 : 1]++;
	return 0;
}

/* A walk in steps of one sees what foreach sees, two at once apart; a
 * symlink at the top is a stray, not followed. */
static void test_walk(struct tcfs_cas *cas, const char *dir)
{
	struct tcfs_cas_walk *a, *b;
	char path[4096];
	int n[2] = { 0, 0 }, m[2] = { 0, 0 }, steps = 0;

	snprintf(path, sizeof(path), "%s/objects/ln", dir);
	tap_eq(symlink("/", path), 0, "a symlink to / at the top of objects/");
	tap_eq(tcfs_cas_walk_begin(cas, &a), 0, "begin one walk");
	tap_eq(tcfs_cas_walk_begin(cas, &b), 0, "and another");
	while (!tcfs_cas_walk_done(a) && steps < 1000) {
		tcfs_cas_walk_step(a, 1, count_entries, n);
		tcfs_cas_walk_step(b, 1, count_entries, m);
		steps++;
	}
	while (!tcfs_cas_walk_done(b) && steps < 2000) {
		tcfs_cas_walk_step(b, 1, count_entries, m);
		steps++;
	}
	tap_eq(n[0], 4, "steps of one see the 4 blobs");
	tap_eq(n[1], 2, "and the stray file and the symlink, as strays");
	tap_ok(m[0] == 4 && m[1] == 2, "the other walk, meanwhile, the same");
	tcfs_cas_walk_end(a);
	tcfs_cas_walk_end(b);
	unlink(path);
}

/* Stages live in memory while small (cas.c: 1 MiB each, 64 MiB in all),
 * in a file under staging/ past that; either way they read back and commit
 * as the bytes written. */
static void test_stages(struct tcfs_cas *cas, const char *dir)
{
	const size_t mib = 1u << 20;
	struct tcfs_cas_stage *st, *many[80];
	struct tcfs_hash h, want;
	enum tcfs_cas_put put;
	char staging[512], buf[16], *big = malloc(mib + 1);
	uint64_t size;
	int files, ok, base = open_files();

	snprintf(staging, sizeof(staging), "%s/staging", dir);

	tap_eq(tcfs_cas_stage_new(cas, &st), 0, "a small stage");
	tcfs_cas_stage_write(st, "abc", 3, 5);
	tcfs_cas_stage_write(st, "xyz", 3, 0);
	tap_ok(tcfs_cas_stage_size(st, &size) == 0 && size == 8,
	       "a write past the end leaves a gap: size 8");
	tap_eq(tcfs_cas_stage_pread(st, buf, sizeof(buf), 0), 8,
	       "pread gives all 8 bytes");
	tap_ok(memcmp(buf, "xyz\0\0abc", 8) == 0, "the gap reads as zeros");
	tap_eq(tcfs_cas_stage_pread(st, buf, sizeof(buf), 8), 0,
	       "pread at the end gives 0");
	tap_eq(open_files(), base, "a small stage makes no file");
	tap_eq(tcfs_cas_stage_truncate(st, 10), 0, "truncate up, in memory");
	tcfs_cas_stage_pread(st, buf, sizeof(buf), 0);
	tap_ok(memcmp(buf, "xyz\0\0abc\0\0", 10) == 0,
	       "the growth reads as zeros");
	tap_eq(tcfs_cas_stage_commit(st, &h, &size, &put), 0, "commit it");
	tcfs_hash_buf("xyz\0\0abc\0\0", 10, &want);
	tap_ok(tcfs_hash_equal(&h, &want) && size == 10 &&
		       put == TCFS_CAS_CREATED,
	       "it is named by its bytes, a new blob");

	tcfs_cas_stage_new(cas, &st);
	tcfs_cas_stage_write(st, "xyz\0\0abc\0\0", 10, 0);
	tap_eq(tcfs_cas_stage_commit(st, &h, &size, &put), 0,
	       "commit the same bytes again");
	tap_ok(put == TCFS_CAS_SHARED && dir_entries(staging) == 0,
	       "shared, and staging/ never saw them");

	for (size_t i = 0; i <= mib; i++)
		big[i] = (char)(i * 2654435761u >> 11);
	tcfs_cas_stage_new(cas, &st);
	tcfs_cas_stage_write(st, big, mib, 0);
	tap_eq(open_files(), base, "1 MiB stays in memory");
	tcfs_cas_stage_write(st, big + mib, 1, mib);
	tap_eq(open_files(), base + 1, "one byte more moves it to a file");
	tap_eq(dir_entries(staging), tmpfile_ok(dir) ? 0 : 1,
	       "named under staging/ only where O_TMPFILE is not had");
	tap_ok(tcfs_cas_stage_pread(st, buf, 4, mib - 2) == 3 &&
		       memcmp(buf, big + mib - 2, 3) == 0,
	       "the file holds what was in memory, and the new byte");
	tap_eq(tcfs_cas_stage_commit(st, &h, &size, &put), 0,
	       "commit the moved stage");
	tcfs_hash_buf(big, mib + 1, &want);
	tap_ok(tcfs_hash_equal(&h, &want) && size == mib + 1,
	       "it is named by all its bytes");

	ok = 1;
	for (int i = 0; i < 80; i++) {
		memset(big, i, mib);
		ok &= tcfs_cas_stage_new(cas, &many[i]) == 0 &&
		      tcfs_cas_stage_write(many[i], big, mib, 0) == 0;
	}
	files = open_files() - base;
	tap_ok(ok && files > 0 && files < 80,
	       "80 stages of 1 MiB: memory holds some, files the rest (%d)",
	       files);
	for (int i = 0; i < 80; i++) {
		memset(big, i, mib);
		tcfs_hash_buf(big, mib, &want);
		ok &= tcfs_cas_stage_commit(many[i], &h, &size, &put) == 0 &&
		      tcfs_hash_equal(&h, &want);
	}
	tap_ok(ok, "every one commits under the name of its bytes");
	tcfs_cas_stage_new(cas, &st);
	tcfs_cas_stage_write(st, big, mib, 0);
	tap_eq(open_files(), base,
	       "memory is given back: the next 1 MiB stage is in memory");
	tcfs_cas_stage_abort(st);
	free(big);

	/* An empty stage has no buffer; the second one shares the first's
	 * blob by comparing no bytes with it. */
	ok = 1;
	for (int i = 0; i < 2; i++) {
		ok &= tcfs_cas_stage_new(cas, &st) == 0 &&
		      tcfs_cas_stage_commit(st, &h, &size, &put) == 0 &&
		      size == 0 && put == (i ? TCFS_CAS_SHARED : TCFS_CAS_CREATED);
	}
	tap_ok(ok, "an empty file commits, and again shares its blob");

	/* Holes are hashed as they come: a commit never reads them back. */
	big = calloc(1, 8 * mib);
	big[0] = 'x';
	big[3 * mib] = 'y';
	tcfs_cas_stage_new(cas, &st);
	tcfs_cas_stage_write(st, "x", 1, 0);
	tcfs_cas_stage_write(st, "y", 1, 3 * mib);
	tap_eq(tcfs_cas_stage_truncate(st, 8 * mib), 0,
	       "a file made of writes past its end and a truncate up");
	tap_eq(tcfs_cas_stage_costly(st), 0,
	       "its commit need not read it back");
	tap_eq(tcfs_cas_stage_commit(st, &h, &size, &put), 0, "commit it");
	tcfs_hash_buf(big, 8 * mib, &want);
	tap_ok(tcfs_hash_equal(&h, &want) && size == 8 * mib,
	       "named by its bytes, zeros and all");
	tcfs_cas_stage_new(cas, &st);
	tcfs_cas_stage_truncate(st, 8 * mib);
	tcfs_cas_stage_write(st, "y", 1, 3 * mib);
	tcfs_cas_stage_write(st, "x", 1, 0);
	tap_eq(tcfs_cas_stage_costly(st), 1,
	       "written out of order, its commit must read it back");
	tap_eq(tcfs_cas_stage_commit(st, &h, &size, &put), 0,
	       "commit it (holes hashed, not read)");
	tap_ok(tcfs_hash_equal(&h, &want) && put == TCFS_CAS_SHARED,
	       "the same bytes, the same blob");
	free(big);
}

/* What is served is checked once per handle; bad blobs never again. */
static void test_checked(const char *dir)
{
	struct tcfs_store *s = open_store(dir);
	struct tcfs_cas *cas = tcfs_store_cas(s), *other;
	struct tcfs_hash good, bad, gone;
	char path[512], *buf = NULL;
	size_t len = 0;
	int fd;

	tcfs_cas_put_buf(cas, "whole bytes", 11, &good, NULL);
	tcfs_cas_put_buf(cas, "bytes to spoil", 14, &bad, NULL);
	tcfs_cas_put_buf(cas, "bytes to lose", 13, &gone, NULL);
	tcfs_store_close(s);
	blob_path(dir, &bad, path, sizeof(path));
	flip_byte(path, 3);
	blob_path(dir, &gone, path, sizeof(path));
	unlink(path);

	s = open_store(dir);
	other = tcfs_store_cas(s);
	fd = tcfs_cas_open_checked(other, &good);
	tap_ok(fd >= 0, "a whole blob is served by a new handle");
	if (fd >= 0)
		close(fd);
	tap_eq(tcfs_cas_open_checked(other, &bad), -EBADMSG,
	       "a damaged one: EBADMSG to the open that finds it");
	tap_ok(strstr(tcfs_err_msg(), "damaged") != NULL,
	       "with a message: %s", tcfs_err_msg());
	tap_eq(tcfs_cas_open_checked(other, &bad), -EIO,
	       "EIO to every open after that");
	tap_eq(tcfs_cas_read_checked(other, &bad, 1024, &buf, &len), -EIO,
	       "and to a read of it whole");
	tap_eq(tcfs_cas_read_checked(other, &gone, 1024, &buf, &len), -ENOENT,
	       "a missing one: ENOENT to the read that finds it");
	tap_eq(tcfs_cas_open_checked(other, &gone), -EIO, "then EIO");
	tap_eq(tcfs_cas_read_checked(other, &good, 1024, &buf, &len), 0,
	       "a whole blob read whole");
	tap_ok(len == 11 && memcmp(buf, "whole bytes", 11) == 0,
	       "with its bytes");
	free(buf);
	tap_eq(tcfs_cas_put_buf(other, "bytes to spoil", 14, &bad, NULL), 0,
	       "the damaged blob is healed by a put of its bytes");
	fd = tcfs_cas_open_checked(other, &bad);
	tap_ok(fd >= 0, "and is served again");
	if (fd >= 0)
		close(fd);
	tcfs_store_close(s);
}

/* A file put at a blob's path after the blob was checked (by whoever can
 * write objects/) is checked in turn, never served on the first one's
 * verdict; the descriptor the check gave reads the bytes it checked. */
static void test_swapped(const char *dir)
{
	struct tcfs_store *s = open_store(dir);
	struct tcfs_cas *cas = tcfs_store_cas(s);
	char path[512], tmp[600], got[16] = { 0 };
	struct tcfs_hash h;
	int fd, out;

	tap_eq(tcfs_cas_put_buf(cas, "checked bytes", 13, &h, NULL), 0,
	       "a blob put");
	fd = tcfs_cas_open_checked(cas, &h);
	tap_ok(fd >= 0, "and opened checked");
	blob_path(dir, &h, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.swap", path);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0444);
	tap_ok(out >= 0 && write(out, "swapped bytes", 13) == 13 &&
	       close(out) == 0 && rename(tmp, path) == 0,
	       "another file put at its path");
	tap_ok(fd >= 0 && pread(fd, got, 13, 0) == 13 &&
	       memcmp(got, "checked bytes", 13) == 0,
	       "the checked descriptor reads the bytes checked");
	if (fd >= 0)
		close(fd);
	tap_eq(tcfs_cas_open_checked(cas, &h), -EBADMSG,
	       "an open after the swap checks the new file: EBADMSG");
	tcfs_store_close(s);
}

int main(void)
{
	char *dir = tap_tmpdir(), path[512];
	struct tcfs_store *s = open_store(dir);
	struct tcfs_cas *cas = tcfs_store_cas(s);
	struct tcfs_cas_stage *st;
	struct tcfs_hash h, h2, h3;
	enum tcfs_cas_put put;
	uint64_t size;
	struct stat sb;
	char *big;
	int fd, n[2] = { 0, 0 };
	size_t bigsz = 9u << 20;

	tap_eq(tcfs_cas_put_buf(cas, "hello", 5, &h, &put), 0, "put a blob");
	tap_eq(put, TCFS_CAS_CREATED, "first put creates it");
	blob_path(dir, &h, path, sizeof(path));
	tap_ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0444,
	       "blob is at objects/ab/<hex>, mode 0444");
	tap_eq(tcfs_cas_put_buf(cas, "hello", 5, &h2, &put), 0, "put again");
	tap_ok(put == TCFS_CAS_SHARED && tcfs_hash_equal(&h, &h2),
	       "same bytes share the blob");
	tap_eq(tcfs_cas_verify(cas, &h), 0, "blob verifies");

	/* A damaged copy is healed by the next put of the right bytes. */
	flip_byte(path, 1);
	tap_eq(tcfs_cas_verify(cas, &h), -EBADMSG, "flipped byte: EBADMSG");
	tap_eq(tcfs_cas_put_buf(cas, "hello", 5, &h2, &put), 0,
	       "put over a damaged copy");
	tap_eq(put, TCFS_CAS_HEALED, "damaged copy is healed");
	tap_eq(tcfs_cas_verify(cas, &h), 0, "healed blob verifies");
	tap_ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0444,
	       "healed blob is read-only (0444), as a new one is");

	/* Big files stream through staging, same name as from memory. */
	big = malloc(bigsz);
	for (size_t i = 0; i < bigsz; i++)
		big[i] = (char)(i * 2654435761u >> 13);
	snprintf(path, sizeof(path), "%s/big.src", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	tap_ok(fd >= 0 && write(fd, big, bigsz) == (ssize_t)bigsz &&
		       lseek(fd, 0, SEEK_SET) == 0,
	       "wrote a 9 MiB source file");
	tap_eq(tcfs_cas_put_fd(cas, fd, &h2, &size, &put), 0,
	       "put_fd of 9 MiB (streamed)");
	close(fd);
	tcfs_hash_buf(big, bigsz, &h3);
	tap_ok(tcfs_hash_equal(&h2, &h3) && size == bigsz &&
		       put == TCFS_CAS_CREATED,
	       "streamed blob is named by its bytes");
	tap_eq(tcfs_cas_put_buf(cas, big, bigsz, &h3, &put), 0,
	       "same 9 MiB from memory");
	tap_eq(put, TCFS_CAS_SHARED, "is shared");

	/* Writes out of order still commit under the right name. */
	tap_eq(tcfs_cas_stage_new(cas, &st), 0, "new stage");
	tcfs_cas_stage_write(st, "world", 5, 5);
	tcfs_cas_stage_write(st, "hello", 5, 0);
	tap_eq(tcfs_cas_stage_commit(st, &h2, &size, &put), 0,
	       "commit an out-of-order stage");
	tcfs_hash_buf("helloworld", 10, &h3);
	tap_ok(tcfs_hash_equal(&h2, &h3) && size == 10,
	       "out-of-order stage is named by its final bytes");
	tap_eq(tcfs_cas_stage_new(cas, &st), 0, "another stage");
	tcfs_cas_stage_write(st, "helloworld", 10, 0);
	tcfs_cas_stage_truncate(st, 5);
	tap_eq(tcfs_cas_stage_commit(st, &h2, &size, &put), 0,
	       "commit a truncated stage");
	tap_ok(tcfs_hash_equal(&h2, &h) && put == TCFS_CAS_SHARED,
	       "truncated to 'hello': shares the first blob");
	tap_eq(tcfs_cas_stage_new(cas, &st), 0, "a stage to abort");
	tcfs_cas_stage_write(st, "x", 1, 0);
	tcfs_cas_stage_abort(st);
	snprintf(path, sizeof(path), "%s/staging", dir);
	tap_eq(dir_entries(path), 0, "abort leaves staging/ empty");

	/* Many threads storing the same bytes at once: one creates. */
	{
		struct racer r[8];
		pthread_t t[8];
		int created = 0, ok = 1;

		for (int i = 0; i < 8; i++) {
			r[i].cas = cas;
			pthread_create(&t[i], NULL, race, &r[i]);
		}
		for (int i = 0; i < 8; i++) {
			pthread_join(t[i], NULL);
			ok &= r[i].rc == 0;
			created += r[i].put == TCFS_CAS_CREATED;
		}
		tap_ok(ok, "8 racing puts all succeed");
		tap_eq(created, 1, "exactly one of them created the blob");
	}

	snprintf(path, sizeof(path), "%s/objects/zz", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/objects/zz/not-a-blob", dir);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	tcfs_cas_foreach(cas, count_entries, n);
	tap_eq(n[0], 4, "foreach sees the 4 blobs");
	tap_eq(n[1], 1, "and one stray file");
	test_walk(cas, dir);

	tap_eq(tcfs_cas_quarantine(cas, &h), 0, "quarantine a blob");
	snprintf(path, sizeof(path), "%s/quarantine", dir);
	tap_ok(stat(path, &sb) == 0, "it is under quarantine/");
	tap_eq(tcfs_cas_verify(cas, &h), -ENOENT, "and gone from objects/");
	tap_eq(tcfs_cas_remove(cas, &h3), 0, "remove a blob");
	tap_eq(tcfs_cas_verify(cas, &h3), -ENOENT, "removed blob is ENOENT");

	test_stages(cas, dir);
	free(big);
	tcfs_store_close(s);
	test_checked(dir);
	test_swapped(dir);
	tap_rmtree(dir);
	return tap_done();
}
