/* tcfs mount and tcfs umount, and mount(8)'s helper form (fstab). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "holders.h"
#include "cmds.h"
#include "fs/fs.h"
#include "index/base/err.h"
#include "index/store/store.h"

static void own_opts(FILE *f);

static const struct opt_cmd mount_cmd = {
	"mount", "[MOUNTPOINT]", 0, 1, NULL,
	"Serves the store at MOUNTPOINT (default: $TRITON_CACHE_DIR), to be\n"
	"used as TRITON_CACHE_DIR (or TORCHINDUCTOR_CACHE_DIR/triton/<device>)\n"
	"by Triton, PyTorch Inductor or vLLM, unchanged.  Files are stored\n"
	"content-addressed as with tcfs import; group files name the children\n"
	"under MOUNTPOINT; every cache\n"
	"probe (a lookup of KEY/__grp__NAME.json, KEY/*.so or\n"
	"KEY/*.autotune.json) is logged as a hit or a miss with its process:\n"
	"see tcfs stats and tcfs log.  Returns once the mount serves, leaving\n"
	"the daemon running; unmount with 'tcfs umount MOUNTPOINT' or\n"
	"'fusermount3 -u MOUNTPOINT'.  One mount per store: a second one fails\n"
	"at once, naming where the store is mounted.\n"
	"\n"
	"At the root, read-only views: by-name/NAME/KEY and\n"
	"by-arch/BACKEND-ARCH/NAME/KEY, symlinks to each kernel's key dir\n"
	"in .tcfs/kernels/, where browsing is no probe, counts no hit or\n"
	"miss (a '/' or '%' of a name or target shown as %XX);\n"
	"binary-only/, the cache again without its IR (.ttir .ttgir .llir\n"
	".ptx .amdgcn), writable, for TRITON_CACHE_DIR=MOUNT/binary-only; and\n"
	".tcfs/ with stats, stats.json and metrics.prom, made anew, whole, at\n"
	"each open (other users than root and the owner see their own\n"
	"processes only).  binary-only/ and .tcfs/kernels/ are not listed,\n"
	"so du, tar and rsync of the mount see each file once.\n"
	"\n"
	"As mount(8)'s helper (an fstab line 'STORE MOUNTPOINT fuse.tcfs\n"
	"defaults,allow_other 0 0', run through mount.fuse3), tcfs is called\n"
	"as 'tcfs STORE MOUNTPOINT -o OPT,...' (STORE a path with a '/'),\n"
	"which is 'tcfs mount --store STORE -o OPT,... MOUNTPOINT'.  -o drops\n"
	"the generic options FUSE does not take (defaults, auto, noauto, user,\n"
	"nouser, users, owner, group, nofail, _netdev, x-*, comment=*).  The\n"
	"store is created if missing.\n",
	own_opts,
	"Exit status: 0 mounted (with -f: unmounted cleanly), 1 error, 2 usage\n"
	"error.\n",
};

static const struct opt_cmd umount_cmd = {
	"umount", "MOUNTPOINT", 1, 1, "give one mount point",
	"Unmounts a tcfs mount (fusermount3 -u) and waits until its daemon has\n"
	"committed pending writes, flushed the probe log and exited.  Only a\n"
	"mount of root or of the store's owner counts: another user's mount\n"
	"that names the same store is refused.  A mount in use is left mounted,\n"
	"and the processes that hold it are named (PID COMMAND): those whose\n"
	"working directory, root, open or mapped files are in it.\n",
	NULL,
	"Exit status: 0 unmounted, 1 error (not a tcfs mount, another user's,\n"
	"busy), 2 usage.\n",
};

/* The store's path goes in the mount's fsname, so tcfs umount (and
 * anyone reading /proc/mounts) can tell which store is mounted where.
 * libfuse splits options at commas unless escaped. */
static int fsname_opt(const char *store, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "fsname=");

	for (const char *p = store; *p && used + 3 < len; p++) {
		if (*p == ',' || *p == '\\')
			buf[used++] = '\\';
		buf[used++] = *p;
	}
	buf[used] = '\0';
	return used + 3 < len ? 0 : -ENAMETOOLONG;
}

/* Options that mount(8), fstab lines and mount.fuse3 may hand on and that
 * mean nothing to FUSE: libfuse refuses an option it does not know, so
 * without this an fstab line that works for other file systems fails. */
static int generic_opt(const char *opt, size_t len)
{
	static const char *const generic[] = {
		"defaults", "auto", "noauto", "user", "nouser", "users",
		"owner", "group", "nofail", "_netdev",
	};

	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
		if (strlen(generic[i]) == len && !memcmp(opt, generic[i], len))
			return 1;
	return (len >= 2 && !memcmp(opt, "x-", 2)) ||
	       (len >= 8 && !memcmp(opt, "comment=", 8));
}

/* Appends arg's options, each after a comma, to the string in buf, less
 * the generic ones.  A comma escaped with a backslash (as libfuse reads
 * them) does not end an option. */
static int add_opts(char *buf, size_t size, const char *arg)
{
	size_t used = strlen(buf);

	while (*arg) {
		size_t len = 0;

		while (arg[len] && arg[len] != ',')
			len += arg[len] == '\\' && arg[len + 1] ? 2 : 1;
		if (len && !generic_opt(arg, len)) {
			if (used + 1 + len >= size)
				return -E2BIG;
			buf[used++] = ',';
			memcpy(buf + used, arg, len);
			used += len;
			buf[used] = '\0';
		}
		arg += len + (arg[len] == ',');
	}
	return 0;
}

/* The -o options a mount takes, at most (with their commas). */
#define USER_OPTS_MAX PATH_MAX

/* -o OPT[,OPT...]: appended to the char[USER_OPTS_MAX] at value. */
static const char *fuse_opt(void *value, const char *arg)
{
	return add_opts(value, USER_OPTS_MAX, arg) < 0 ? "too long" : NULL;
}

/* --sync-every SECS: seconds above 0 into a double. */
static const char *sync_opt(void *value, const char *arg)
{
	double v = cli_parse_wait(arg);

	if (v <= 0)
		return "not a number of seconds above 0";
	*(double *)value = v;
	return NULL;
}

/* --busy-poll USEC: a whole number of microseconds up to a second. */
static const char *busy_poll_opt(void *value, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > 1000000)
		return "not a number of microseconds from 0 to 1000000";
	*(long *)value = v;
	return NULL;
}

/* The store's path, absolute, into *out (real, PATH_MAX bytes, or store
 * when it already is): a store not there yet is created by the daemon,
 * which leaves the working directory.  CLI_OK, or the exit code after
 * saying why. */
static int store_path(const struct cli_common *co, char *store, char *real,
		      const char **out)
{
	if (cli_store_named(&co->store))
		snprintf(store, PATH_MAX, "%s", cli_store_named(&co->store));
	else if (tcfs_store_default_dir(store, PATH_MAX) < 0) {
		cli_lib_err("mount", -ENOENT, "store");
		return CLI_FAIL;
	}
	*out = real;
	if (realpath(store, real))
		return CLI_OK;
	*out = store;
	if (store[0] == '/')
		return CLI_OK;
	*out = real;
	if (getcwd(real, PATH_MAX) &&
	    strlen(real) + 1 + strlen(store) < PATH_MAX) {
		strcat(real, "/");
		strcat(real, store);
		return CLI_OK;
	}
	return cli_usage_err("mount", "store path too long");
}

static const char *const o_help =
	"FUSE mount options (allow_other, nonempty, ...: see fuse(8)) and "
	"tcfs's own, listed above; -o may be given more than once; the mount "
	"is always nosuid,nodev: suid and dev are refused";

/* Every -o option of tcfs's own, from the mount's table (fs.h), so that
 * the help names each one the mount takes. */
static void own_opts(FILE *f)
{
	const char *arg, *help;
	char name[64], label[160];

	fputs("\nMount options (-o OPT,...), besides FUSE's own:\n", f);
	for (size_t i = 0; tcfs_fs_opt_doc(i, name, sizeof(name), &arg,
					   &help) == 0; i++) {
		snprintf(label, sizeof(label), "  %s%s%s", name,
			 arg ? "=" : "", arg ? arg : "");
		opt_row(f, label, help);
	}
}

/* fs.h's busy hook: a mount of the store holds its lock until unmounted,
 * so a second mount fails at once, saying where the first one is. */
static int mounted(void *ctx, const char *holder)
{
	char store[PATH_MAX], point[PATH_MAX];

	(void)holder;
	if (cli_find_mount(ctx, NULL, store, point) == 0)
		return tcfs_err_set(-EBUSY, "store %s is already mounted at %s",
				    store, point);
	tcfs_err_clear();	/* another user's mount proves nothing */
	return 0;
}

/* Mounts with fo, the store's path made absolute, the user's -o options
 * (user) after the store's fsname. */
static int mount_with(const struct cli_common *co, struct tcfs_fs_opts *fo,
		      const char *user)
{
	char store[PATH_MAX], real[PATH_MAX], fsopts[3 * PATH_MAX + 64];
	int rc = store_path(co, store, real, &fo->store);

	if (rc != CLI_OK)
		return rc;
	if (fsname_opt(fo->store, fsopts, sizeof(fsopts)) < 0)
		return cli_usage_err("mount", "store path too long");
	strcat(fsopts, user);	/* each option comes with its comma */
	fo->foreground |= fo->debug;
	fo->fuse_opts = fsopts;
	fo->wait_s = co->store.wait_s;
	fo->busy = mounted;
	fo->busy_ctx = (void *)fo->store;
	rc = tcfs_fs_mount(fo);
	return rc == 0 ? CLI_OK : rc == 2 ? CLI_USAGE : CLI_FAIL;
}

int cmd_mount(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_fs_opts fo = { .busy_poll_us = TCFS_FS_BUSY_POLL_US };
	char user[USER_OPTS_MAX] = "", **args;
	int rc, n;
	struct opt opts[] = {
		OPT_FLAG('f', "foreground", &fo.foreground, "stay in the "
			 "foreground until unmounted"),
		OPT_FLAG('d', "debug", &fo.debug, "foreground, single-threaded, "
			 "every request on stderr"),
		OPT_FN('o', NULL, "OPT[,OPT...]", user, fuse_opt, o_help),
		OPT_FN(0, "sync-every", "SECS", &fo.sync_s, sync_opt, "make new "
		       "files durable this often (default 1), in one sync of "
		       "the store's disk: a power cut loses at most the files "
		       "of the last SECS, as on a local disk"),
		OPT_FLAG(0, "no-fsync", &fo.no_fsync, "never sync new files: a "
			 "killed daemon still loses nothing, but a power cut "
			 "may damage recent files (tcfs fsck --repair then has "
			 "their kernels recompiled)"),
		OPT_FN(0, "busy-poll", "USEC", &fo.busy_poll_us, busy_poll_opt,
		       "after each request, poll this long for the next one "
		       "instead of sleeping (default 200; 0: never): faster "
		       "answers in Triton's bursts, for one CPU busy while they "
		       "last (not with -d)"),
		CLI_OPT_WAIT(&co),
		/* A mount's store is never found from another mount. */
		CLI_OPT_STORE_AS(&co, "the store (default: $TCFS_STORE, else "
				 "$XDG_DATA_HOME/tcfs, else "
				 "~/.local/share/tcfs)"),
		OPT_HELP(),
		OPT_END(),
	};

	n = opt_parse(&mount_cmd, opts, argc, argv, &args, &rc);
	if (n < 0)
		return rc;
	/* Where Triton will look is where the cache is to be served. */
	fo.mountpoint = n > 0 ? args[0] : getenv("TRITON_CACHE_DIR");
	if (!fo.mountpoint || !fo.mountpoint[0])
		return cli_usage_err("mount", "no mount point given, and "
				     "TRITON_CACHE_DIR is not set");
	return mount_with(&co, &fo, user);
}

/* mount(8) hands every fstab line's options with "dev,suid" (its
 * defaults), whatever the line says: in the helper form they are taken
 * out of opts (in place) rather than refused, as the mount is always
 * nosuid,nodev. */
static void drop_mount_defaults(char *opts)
{
	char *out = opts, *p = opts;

	while (*p) {
		size_t len = 0;

		while (p[len] && p[len] != ',')
			len += p[len] == '\\' && p[len + 1] ? 2 : 1;
		if (!(len == 3 && !memcmp(p, "dev", 3)) &&
		    !(len == 4 && !memcmp(p, "suid", 4))) {
			if (out != opts)
				*out++ = ',';
			memmove(out, p, len);
			out += len;
		}
		p += len + (p[len] == ',');
	}
	*out = '\0';
}

int cmd_mount_fstab(int argc, char **argv)
{
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	int n = 0, rc;

	if (!args) {
		cli_err("mount", "out of memory");
		return CLI_FAIL;
	}
	/* The mount point after "--": a STORE or MOUNTPOINT starting with
	 * '-' is no option. */
	args[n++] = "mount";
	args[n++] = "--store";
	args[n++] = argv[0];
	for (int i = 2; i < argc; i++) {
		args[n++] = argv[i];
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			drop_mount_defaults(argv[++i]);
			args[n++] = argv[i];
		}
	}
	args[n++] = "--";
	args[n++] = argv[1];
	rc = cmd_mount(n, args);
	free(args);
	return rc;
}

/* The daemon's pid, which it wrote into STORE/lock as the writer; -1 if
 * the file says nothing usable. */
static pid_t daemon_pid(const char *store)
{
	char path[PATH_MAX + 8];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/lock", store);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	fclose(f);
	return (pid_t)pid;
}

/* 1 when the process has exited: gone, or a zombie its new parent (init,
 * once tcfs mount returned) has not reaped yet. */
static int exited(pid_t pid)
{
	char path[64], stat[256], *paren;
	FILE *f;
	int zombie = 0;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	if (fgets(stat, sizeof(stat), f) && (paren = strrchr(stat, ')')))
		zombie = paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
	fclose(f);
	return zombie;
}

/* Waits until the daemon has committed, flushed and exited: its process
 * is gone, and (if it could not be named) the store's lock is free. */
static int wait_daemon(const char *store, pid_t pid, double wait_s)
{
	char path[PATH_MAX + 8];
	struct timespec nap = { 0, 20 * 1000000L };
	int fd, rc = -ETIMEDOUT;

	snprintf(path, sizeof(path), "%s/lock", store);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (double t = 0; t < wait_s; t += 0.02) {
		int gone = pid > 0 ? exited(pid) : 1;

		if (gone && (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0)) {
			rc = 0;
			break;
		}
		nanosleep(&nap, NULL);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* fusermount3's "Device or resource busy": the processes in the way
 * are named (holders.h), rather than leaving the user to find them. */
static void say_busy(const char *mp, const char *said)
{
	if (!strstr(said, strerror(EBUSY))) {
		fputs(said, stderr);
		return;
	}
	cli_err("umount", "%s: busy: these processes have their working "
		"directory, root, or files open or mapped in it:", mp);
	if (holders_print(mp, getpid(), stderr) == 0)
		cli_err("umount", "%s: none of the processes this user may see "
			"(another user's, or a mount inside it)", mp);
}

/* fusermount3 -u mp, what it says on stderr kept: 0, or -1 after saying
 * why not. */
static int fusermount_u(const char *mp)
{
	char said[4096], chunk[512];
	size_t used = 0;
	ssize_t n;
	int p[2], status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		cli_err("umount", "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		execlp("fusermount3", "fusermount3", "-u", mp, (char *)NULL);
		cli_err("umount", "fusermount3: %s", strerror(errno));
		_exit(127);
	}
	close(p[1]);
	/* Kept up to the buffer, the rest read and dropped. */
	while ((n = read(p[0], chunk, sizeof(chunk))) > 0 ||
	       (n < 0 && errno == EINTR)) {
		size_t take = n > 0 ? (size_t)n : 0;

		if (take > sizeof(said) - 1 - used)
			take = sizeof(said) - 1 - used;
		memcpy(said + used, chunk, take);
		used += take;
	}
	said[used] = '\0';
	close(p[0]);
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0)
		return 0;
	say_busy(mp, said);
	return -1;
}

int cmd_umount(int argc, char **argv)
{
	char mp[PATH_MAX], store[PATH_MAX], point[PATH_MAX];
	pid_t daemon;
	int status, rc;

	char **args;
	struct opt opts[] = { OPT_HELP(), OPT_END() };

	if (opt_parse(&umount_cmd, opts, argc, argv, &args, &status) < 0)
		return status;
	if (!realpath(args[0], mp)) {
		cli_err("umount", "%s: %s", args[0], strerror(errno));
		return CLI_FAIL;
	}
	rc = cli_find_mount(NULL, mp, store, point);
	if (rc < 0) {
		if (rc == -EPERM)
			cli_lib_err("umount", rc, mp);
		else
			cli_err("umount", "%s: not a tcfs mount", mp);
		return CLI_FAIL;
	}
	daemon = daemon_pid(store);
	if (fusermount_u(mp) != 0)
		return CLI_FAIL;
	if (wait_daemon(store, daemon, 30) < 0) {
		cli_err("umount", "%s: unmounted, but its daemon has not "
				  "exited after 30 s", mp);
		return CLI_FAIL;
	}
	return CLI_OK;
}
