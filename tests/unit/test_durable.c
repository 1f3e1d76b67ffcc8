/* durable: new blobs noted with their rows, flushed in batches, and checked
 * after an unclean stop, the lost ones dropped with their files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/base/err.h"
#include "index/maint/fsck.h"
#include "index/base/hash.h"
#include "index/tree/ns.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

static const char *dir;
static int sync_fails;	/* the disk's next syncs report lost writes */

/* Stands in for libc's: the store's syncs come here. */
int syncfs(int fd)
{
	if (sync_fails) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_syncfs, fd);
}

static struct tcfs_store *open_store(int writer, enum tcfs_durability d)
{
	struct tcfs_store_opts o = { dir, 1, writer, 0, 0, d, tcfs_recover };
	struct tcfs_store *s = NULL;

	tcfs_err_clear();
	if (tcfs_store_open(&o, &s) < 0) {
		printf("# open: %s\n", tcfs_err_msg());
		exit(2);
	}
	return s;
}

static long long sql_count(struct tcfs_store *s, const char *sql)
{
	sqlite3_stmt *st;
	long long n = -1;

	if (sqlite3_prepare_v2(tcfs_db_handle(tcfs_store_db(s)), sql, -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static long long noted(struct tcfs_store *s)
{
	return sql_count(s, "SELECT count(*) FROM unsynced");
}

/* A file named name in dir with the given bytes; returns its blob. */
static struct tcfs_hash put_file(struct tcfs_store *s, uint64_t parent,
				 const char *name, const char *bytes)
{
	struct tcfs_content c = { 0 };

	c.size = strlen(bytes);
	if (tcfs_cas_put_buf(tcfs_store_cas(s), bytes, c.size, &c.blob, NULL) < 0 ||
	    tcfs_ns_create(s, parent, name, 0644, 1, &c, NULL, NULL) < 0) {
		printf("# put %s: %s\n", name, tcfs_err_msg());
		exit(2);
	}
	return c.blob;
}

static void blob_path(const struct tcfs_hash *h, char *buf, size_t len)
{
	char hex[TCFS_HASH_HEXLEN];

	tcfs_hash_hex(h, hex);
	snprintf(buf, len, "%s/objects/%.2s/%s", dir, hex, hex);
}

static int exists(struct tcfs_store *s, uint64_t parent, const char *name)
{
	struct tcfs_node n;

	return tcfs_ns_lookup(s, parent, name, &n) == 0;
}

static void note_raw(struct tcfs_store *s, const struct tcfs_hash *h)
{
	char hex[TCFS_HASH_HEXLEN], sql[128];

	tcfs_hash_hex(h, hex);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO unsynced (blob, gen) VALUES ('%s', 0)", hex);
	sqlite3_exec(tcfs_db_handle(tcfs_store_db(s)), sql, NULL, NULL, NULL);
}

/* A writer that syncs before each commit notes nothing. */
static void sync_first(void)
{
	struct tcfs_store *s = open_store(1, TCFS_DURABLE_BATCH);
	struct tcfs_node k;

	tcfs_durable_sync_first(tcfs_store_durable(s));
	tcfs_ns_mkdir(s, TCFS_ROOT_INO, "sf", 0755, 1, NULL, &k);
	put_file(s, k.ino, "sf.bin", "synced first");
	tap_eq(noted(s), 0, "syncing before each commit: no note");
	tcfs_store_close(s);
	s = open_store(1, TCFS_DURABLE_BATCH);
	tap_eq(tcfs_ns_lookup(s, k.ino, "sf.bin", &k), 0, "its file committed");
	tcfs_store_close(s);
}

int main(void)
{
	char *tmp = tap_tmpdir(), path[700];
	struct tcfs_hash ha, hb, hc, hg, hn;
	struct tcfs_fsck_result fr = { 0 };
	const struct tcfs_durable_report *r;
	struct tcfs_content c = { 0 };
	struct tcfs_node key, key2, an;
	struct tcfs_store *s;

	dir = tmp;

	/* Batching: every row that names a blob notes it. */
	s = open_store(1, TCFS_DURABLE_BATCH);
	tap_ok(tcfs_store_durable(s) != NULL, "a batching writer has batch state");
	tap_eq(noted(s), 0, "a new store has no notes");
	tcfs_ns_mkdir(s, TCFS_ROOT_INO, "key", 0755, 1, NULL, &key);
	tcfs_ns_mkdir(s, TCFS_ROOT_INO, "key2", 0755, 1, NULL, &key2);
	tap_eq(noted(s), 0, "a directory notes nothing");
	ha = put_file(s, key.ino, "a.bin", "alpha");
	tap_eq(noted(s), 1, "a new file notes its blob");
	hb = put_file(s, key.ino, "b.bin", "beta");
	hg = put_file(s, key.ino, "__grp__k.json", "{\"child_paths\": {}}");
	hc = put_file(s, key2.ino, "c.bin", "gamma");
	put_file(s, key2.ino, "c2.bin", "gamma");
	tap_eq(noted(s), 4, "a blob two files share is noted once");
	tap_eq(tcfs_durable_flush(tcfs_store_durable(s)), 0, "flush");
	tap_eq(noted(s), 0, "a flush forgets the notes taken before it");
	tap_eq(tcfs_durable_flush(tcfs_store_durable(s)), 0, "a flush with nothing noted is fine");

	c.size = 5;
	tcfs_cas_put_buf(tcfs_store_cas(s), "delta", 5, &c.blob, NULL);
	hn = c.blob;
	tcfs_ns_lookup(s, key.ino, "a.bin", &an);
	tap_eq(tcfs_ns_set_content(s, an.ino, &c, 2), 0,
	       "new content for an existing file");
	tap_eq(noted(s), 1, "notes its new blob");
	tcfs_store_close(s);

	s = open_store(0, TCFS_DURABLE_BATCH);
	tap_eq(noted(s), 0, "a clean close leaves no notes behind");
	tap_ok(tcfs_store_durable(s) == NULL, "a reader has no batch state");
	tcfs_store_close(s);

	s = open_store(1, TCFS_DURABLE_NONE);
	tap_ok(tcfs_store_durable(s) == NULL, "nor a writer that never syncs");
	put_file(s, key.ino, "e.bin", "epsilon");
	tap_eq(noted(s), 0, "which notes nothing");
	tap_eq(tcfs_durable_flush(tcfs_store_durable(s)), 0, "and whose flush does nothing");

	/* The state a power cut leaves: rows whose blobs were noted but
	 * are short or gone. */
	tcfs_ns_unlink(s, key.ino, "a.bin");
	put_file(s, key.ino, "a.bin", "alpha");
	note_raw(s, &ha);
	note_raw(s, &hb);
	note_raw(s, &hc);
	note_raw(s, &hg);
	note_raw(s, &hn);
	sqlite3_exec(tcfs_db_handle(tcfs_store_db(s)),
		     "INSERT INTO unsynced VALUES ('not a blob name', 0)", NULL,
		     NULL, NULL);
	tcfs_store_close(s);
	blob_path(&hb, path, sizeof(path));
	tap_ok(chmod(path, 0644) == 0 && truncate(path, 0) == 0,
	       "b.bin's blob left empty, as after a power cut");
	blob_path(&hc, path, sizeof(path));
	tap_ok(unlink(path) == 0, "c.bin's blob gone");

	s = open_store(0, TCFS_DURABLE_BATCH);
	tap_eq(noted(s), 6, "a reader leaves the notes alone");
	tap_eq(tcfs_store_recovery(s)->checked, 0, "and checks nothing");
	tcfs_store_close(s);

	s = open_store(1, TCFS_DURABLE_NONE);
	r = tcfs_store_recovery(s);
	tap_eq(r->checked, 5, "a writer checks every noted blob, "
	       "passing over a note that names none");
	tap_eq(r->lost, 2, "finds the two lost");
	tap_eq(r->dropped, 3, "and drops the three files that named them");
	tap_ok(!exists(s, key.ino, "b.bin") && !exists(s, key2.ino, "c.bin") &&
		       !exists(s, key2.ino, "c2.bin"),
	       "b.bin, c.bin and c2.bin are gone");
	tap_ok(!exists(s, key.ino, "__grp__k.json"),
	       "and so is the group file beside b.bin: its kernel is a miss");
	tap_ok(exists(s, key.ino, "a.bin") && exists(s, key.ino, "e.bin"),
	       "the files whose blobs are whole stay");
	blob_path(&hb, path, sizeof(path));
	tap_ok(access(path, F_OK) < 0 && errno == ENOENT,
	       "the damaged blob is removed");
	tap_eq(noted(s), 0, "the notes are forgotten");
	tap_eq(tcfs_fsck_run(s, 0, NULL, NULL, NULL, &fr), 0, "fsck runs");
	tap_eq(fr.problems, 0, "and finds nothing wrong");
	tcfs_store_close(s);

	s = open_store(1, TCFS_DURABLE_BATCH);
	tap_eq(tcfs_store_recovery(s)->checked, 0,
	       "the next writer has nothing to check");
	hc = put_file(s, key2.ino, "u.bin", "unreadable");
	tcfs_store_close(s);

	/* A noted blob that cannot be read gives no verdict: nothing is
	 * dropped, the note stays for the next writer, and the store opens. */
	s = open_store(1, TCFS_DURABLE_NONE);
	note_raw(s, &hc);
	tcfs_store_close(s);
	blob_path(&hc, path, sizeof(path));
	tap_ok(unlink(path) == 0 && mkdir(path, 0700) == 0,
	       "u.bin's blob made a directory: reading it fails (EISDIR)");
	s = open_store(1, TCFS_DURABLE_BATCH);
	r = tcfs_store_recovery(s);
	tap_ok(r->checked == 1 && r->unreadable == 1 && r->lost == 0,
	       "a writer still opens the store, and counts it unreadable");
	tap_ok(exists(s, key2.ino, "u.bin"), "the file that names it stays");
	tap_eq(noted(s), 1, "and so does its note");
	tcfs_store_close(s);
	s = open_store(0, TCFS_DURABLE_BATCH);
	tap_eq(noted(s), 1, "which no flush forgets, not even at close");
	tcfs_store_close(s);
	rmdir(path);
	s = open_store(1, TCFS_DURABLE_BATCH);
	r = tcfs_store_recovery(s);
	tap_ok(r->checked == 1 && r->lost == 1 && r->dropped == 1 &&
		       noted(s) == 0,
	       "once the blob is plainly missing, the next writer drops u.bin");
	tcfs_store_close(s);

	/* A sync that fails: the disk lost writes of which the kernel tells
	 * once.  No note may go after it, though later syncs succeed. */
	s = open_store(1, TCFS_DURABLE_BATCH);
	put_file(s, key2.ino, "f.bin", "phi");
	sync_fails = 1;
	tap_eq(tcfs_durable_flush(tcfs_store_durable(s)), -EIO, "a flush whose sync fails: EIO");
	tap_ok(strstr(tcfs_err_msg(), "syncfs") && strstr(tcfs_err_msg(), dir),
	       "naming the store: %s", tcfs_err_msg());
	sync_fails = 0;
	put_file(s, key2.ino, "g.bin", "chi");
	tap_eq(tcfs_durable_flush(tcfs_store_durable(s)), -EIO,
	       "every flush after it fails too, though the disk syncs again");
	tap_eq(noted(s), 2, "and every note stays for the next writer");
	tcfs_store_close(s);
	s = open_store(0, TCFS_DURABLE_BATCH);
	tap_eq(noted(s), 2, "even after close");
	tcfs_store_close(s);
	sync_fails = 1;
	{
		struct tcfs_store_opts o = { dir, 0, 1, 0, 0, 0, tcfs_recover };

		tcfs_err_clear();
		tap_eq(tcfs_store_open(&o, &s), -EIO,
		       "a writer that cannot sync the checked blobs fails to open");
	}
	sync_fails = 0;
	s = open_store(1, TCFS_DURABLE_BATCH);
	r = tcfs_store_recovery(s);
	tap_ok(r->checked == 2 && r->lost == 0 && noted(s) == 0,
	       "the next one checks both, keeps them, forgets the notes");
	tcfs_store_close(s);

	sync_first();
	tap_rmtree(tmp);
	return tap_done();
}
