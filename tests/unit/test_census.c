/* census: objects/ counted by several threads, as tcfs_cas_foreach does. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/blob/census.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

static int add(void *ctx, const struct tcfs_cas_entry *e)
{
	struct tcfs_census *c = ctx;

	c->files++;
	c->bytes += e->size;
	return 0;
}

/* The census with threads threads says what the one-thread walk does. */
static void same(struct tcfs_store *s, unsigned threads, const char *what)
{
	struct tcfs_census walk = { 0 }, got;

	tap_eq(tcfs_cas_foreach(tcfs_store_cas(s), add, &walk), 0, "walk");
	tap_eq(tcfs_census_objects(tcfs_store_path(s), threads, &got), 0,
	       "census, %u threads", threads);
	tap_ok(got.files == walk.files && got.bytes == walk.bytes,
	       "%s, %u threads: %llu files of %llu bytes (the walk: %llu, "
	       "%llu)", what, threads, (unsigned long long)got.files,
	       (unsigned long long)got.bytes, (unsigned long long)walk.files,
	       (unsigned long long)walk.bytes);
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			tap_ok(0, "write %s", path);
		close(fd);
	}
}

int main(void)
{
	char *tmp = tap_tmpdir(), dir[512], path[1024];
	struct tcfs_store_opts o = { .dir = dir, .create = 1, .writer = 1,
				     .recover = tcfs_recover };
	struct tcfs_store *s;
	struct tcfs_census got;
	struct tcfs_hash h;

	snprintf(dir, sizeof(dir), "%s/store", tmp);
	tap_eq(tcfs_store_open(&o, &s), 0, "open a store");
	same(s, 0, "an empty store");
	for (int i = 0; i < 3000; i++) {
		char buf[64];
		int len = snprintf(buf, sizeof(buf), "blob %d %*s", i, i % 50,
				   "");

		tcfs_cas_put_buf(tcfs_store_cas(s), buf, (size_t)len, &h,
				 NULL);
	}
	same(s, 0, "3000 blobs");
	same(s, 1, "3000 blobs");
	same(s, 7, "3000 blobs");
	/* Strays count as the walk counts them: a file at the top (0
	 * bytes), a file and a link in a fan-out dir; dot names never. */
	snprintf(path, sizeof(path), "%s/objects/stray", dir);
	put_file(path, "at the top");
	snprintf(path, sizeof(path), "%s/objects/ab/not-a-blob", dir);
	put_file(path, "in a fan-out dir");
	snprintf(path, sizeof(path), "%s/objects/ab/.hidden", dir);
	put_file(path, "a dot name");
	snprintf(path, sizeof(path), "%s/objects/ab/link", dir);
	tap_eq(symlink("/etc/passwd", path), 0, "a stray link");
	snprintf(path, sizeof(path), "%s/objects/linkdir", dir);
	tap_eq(symlink("/etc", path), 0, "a link at the top, never followed");
	same(s, 0, "with strays");
	same(s, 3, "with strays");
	tcfs_store_close(s);

	snprintf(path, sizeof(path), "%s/nothing", tmp);
	tap_eq(tcfs_census_objects(path, 0, &got), -ENOENT,
	       "a store without objects/: ENOENT");
	tap_rmtree(tmp);
	return tap_done();
}
