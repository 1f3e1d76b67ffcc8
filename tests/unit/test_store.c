/* store: where it lives, creating it, the writer lock, batches. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/tree/ns.h"
#include "index/maint/recover.h"
#include "index/store/db.h"
#include "index/store/store.h"
#include "tap.h"

/* The value of a pragma on the store's connection. */
static int64_t pragma(struct tcfs_store *s, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(tcfs_db_handle(tcfs_store_db(s)), sql, -1, &st,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int open_as(const char *dir, int create, int writer, double wait,
		   struct tcfs_store **s)
{
	struct tcfs_store_opts o = { dir, create, writer, wait,
				     .recover = tcfs_recover };

	tcfs_err_clear();
	return tcfs_store_open(&o, s);
}

static void default_dirs(void)
{
	char buf[256];

	setenv("TCFS_STORE", "/srv/tcfs", 1);
	setenv("XDG_DATA_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	tap_ok(tcfs_store_default_dir(buf, sizeof(buf)) == 0 &&
		       !strcmp(buf, "/srv/tcfs"),
	       "default store: $TCFS_STORE first");
	unsetenv("TCFS_STORE");
	tap_ok(tcfs_store_default_dir(buf, sizeof(buf)) == 0 &&
		       !strcmp(buf, "/xdg/tcfs"),
	       "then $XDG_DATA_HOME/tcfs");
	unsetenv("XDG_DATA_HOME");
	tap_ok(tcfs_store_default_dir(buf, sizeof(buf)) == 0 &&
		       !strcmp(buf, "/home/u/.local/share/tcfs"),
	       "then ~/.local/share/tcfs");
	unsetenv("HOME");
	tap_eq(tcfs_store_default_dir(buf, sizeof(buf)), -ENOENT,
	       "no variable at all: ENOENT");
}

static void check_private(const char *dir, const char *name, const char *what)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "%s",
		    what))
		printf("#   %s: mode %o\n", path, st.st_mode & 0777);
}

int main(void)
{
	char *tmp = tap_tmpdir(), dir[512], path[600];
	struct tcfs_store *a, *b, *r;
	struct tcfs_node n;
	struct stat st;
	int pipefd[2];
	pid_t child;
	char c;

	umask(022);

	default_dirs();
	snprintf(dir, sizeof(dir), "%s/deep/er/store", tmp);
	tap_eq(open_as(dir, 0, 0, 0, &a), -ENOENT,
	       "a store that does not exist: ENOENT");
	tap_ok(strstr(tcfs_err_msg(), "no tcfs store") != NULL,
	       "with a message saying so");
	tap_eq(open_as(dir, 1, 1, 0, &a), 0, "create a store, parents too");
	tap_ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
	       "store dir is mode 0700");
	snprintf(path, sizeof(path), "%s/objects", dir);
	tap_ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "objects/ exists");

	tap_eq(open_as(dir, 0, 1, 0.3, &b), -EBUSY,
	       "a second writer waits, then EBUSY");
	snprintf(path, sizeof(path), "pid %ld", (long)getpid());
	tap_ok(strstr(tcfs_err_msg(), "another writer") &&
		       strstr(tcfs_err_msg(), path + 4),
	       "the message names the holder: %s", tcfs_err_msg());
	tap_eq(open_as(dir, 0, 0, 0, &r), 0, "a reader opens meanwhile");
	tcfs_store_close(r);

	/* A batch is one transaction: all or nothing. */
	tap_eq(tcfs_store_begin(a), 0, "begin a batch");
	tcfs_ns_mkdir(a, TCFS_ROOT_INO, "one", 0755, 0, NULL, NULL);
	tcfs_ns_mkdir(a, TCFS_ROOT_INO, "two", 0755, 0, NULL, NULL);
	tap_eq(tcfs_store_end(a, -EIO), -EIO, "end it with a failure");
	tap_eq(tcfs_ns_lookup(a, TCFS_ROOT_INO, "one", &n), -ENOENT,
	       "nothing of the failed batch is left");
	tcfs_store_begin(a);
	tcfs_ns_mkdir(a, TCFS_ROOT_INO, "one", 0755, 0, NULL, NULL);
	tap_eq(tcfs_store_end(a, 0), 0, "a good batch commits");
	tap_eq(tcfs_ns_lookup(a, TCFS_ROOT_INO, "one", &n), 0,
	       "and its entry is there");

	/* A bulk writer's batches fit its page cache (import.c). */
	tap_eq(tcfs_store_bulk(a), 0, "set up for bulk writes");
	tap_ok(pragma(a, "PRAGMA cache_size") == -131072 &&
		       pragma(a, "PRAGMA wal_autocheckpoint") == 16384,
	       "a page cache of 128 MiB, checkpoints past 64 MiB of WAL");
	tcfs_store_close(a);

	/* A writer that dies leaves neither a lock nor staging files. */
	snprintf(path, sizeof(path), "%s/staging/123.4", dir);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	if (pipe(pipefd) < 0)
		return 2;
	child = fork();
	if (child == 0) {
		if (open_as(dir, 0, 1, 1, &a) == 0 && write(pipefd[1], "x", 1))
			pause();
		_exit(1);
	}
	tap_ok(read(pipefd[0], &c, 1) == 1, "a child holds the writer lock");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	tap_eq(open_as(dir, 0, 1, 1, &a), 0,
	       "after kill -9 of the holder a writer gets in");
	tap_ok(stat(path, &st) < 0, "and the dead writer's staging file is gone");
	tcfs_store_close(a);

	/* The index is private whatever the umask: SQLite gives its WAL and
	 * shm files the database's mode. */
	check_private(dir, "index.db", "a new index.db is 0600 under umask 022");
	snprintf(path, sizeof(path), "%s/index.db", dir);
	chmod(path, 0644);
	tap_eq(open_as(dir, 0, 1, 1, &a), 0, "a writer opens an index made 0644");
	tcfs_ns_mkdir(a, TCFS_ROOT_INO, "three", 0755, 0, NULL, NULL);
	check_private(dir, "index.db", "the writer made it 0600 again");
	check_private(dir, "index.db-wal", "its WAL is 0600");
	check_private(dir, "index.db-shm", "its shm is 0600");
	tcfs_store_close(a);
	tap_rmtree(tmp);
	return tap_done();
}
