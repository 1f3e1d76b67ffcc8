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
#include "cmds.h"
#include "fs/fs.h"
#include "index/store/store.h"

static const struct opt_cmd mount_cmd = {
	"mount", "MOUNTPOINT", 1, 1, "no mount point given",
	"Serves the store at MOUNTPOINT, to be used as TRITON_CACHE_DIR (or\n"
	"TORCHINDUCTOR_CACHE_DIR/triton/<device>) by Triton, PyTorch Inductor\n"
	"or vLLM, unchanged.  Files are stored content-addressed as with tcfs\n"
	"import; group files name the children under MOUNTPOINT; every cache\n"
	"probe (a lookup of KEY/__grp__NAME.json, KEY/*.so or\n"
	"KEY/*.autotune.json) is logged as a hit or a miss with its process:\n"
	"see tcfs stats and tcfs log.  Returns once the mount serves, leaving\n"
	"the daemon running; unmount with 'tcfs umount MOUNTPOINT' or\n"
	"'fusermount3 -u MOUNTPOINT'.  One mount per store: a second one fails.\n"
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
	NULL,
	"Exit status: 0 mounted (with -f: unmounted cleanly), 1 error, 2 usage\n"
	"error.\n",
};

static const struct opt_cmd umount_cmd = {
	"umount", "MOUNTPOINT", 1, 1, "give one mount point",
	"Unmounts a tcfs mount (fusermount3 -u) and waits until its daemon has\n"
	"committed pending writes, flushed the probe log and exited.  Only a\n"
	"mount of root or of the store's owner counts: another user's mount\n"
	"that names the same store is refused.\n",
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
	if (co->store.dir)
		snprintf(store, PATH_MAX, "%s", co->store.dir);
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
	"FUSE mount options (allow_other, nonempty, ...; -o may be given more "
	"than once; the mount is always nosuid,nodev: suid and dev are "
	"refused), and tcfs's own: noviews (the root lists only the cache's "
	"own entries; .tcfs/ still answers), binary_only (the root is the "
	"binary-only view), store_binary_only (IR files written are dropped "
	"as they land, never stored), max_size=SIZE (as tcfs config max-size, "
	"for this mount), user_max_size=SIZE (as tcfs config user-max-size, "
	"for this mount), redirect=NAME:DIR (group files of kernel NAME name "
	"DIR/NAME.json and DIR/NAME.hsaco or .cubin, those DIR has when read, "
	"as AMD aiter's redirect; repeatable, DIR made absolute)";

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
	rc = tcfs_fs_mount(fo);
	return rc == 0 ? CLI_OK : rc == 2 ? CLI_USAGE : CLI_FAIL;
}

int cmd_mount(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_fs_opts fo = { .busy_poll_us = TCFS_FS_BUSY_POLL_US };
	char user[USER_OPTS_MAX] = "", **args;
	int rc;
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
		CLI_OPT_STORE(&co),
		OPT_HELP(),
		OPT_END(),
	};

	if (opt_parse(&mount_cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	fo.mountpoint = args[0];
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

int cmd_umount(int argc, char **argv)
{
	char mp[PATH_MAX], store[PATH_MAX], point[PATH_MAX];
	pid_t pid, daemon;
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
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", mp, (char *)NULL);
		cli_err("umount", "fusermount3: %s", strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return CLI_FAIL;	/* fusermount3 said why */
	if (wait_daemon(store, daemon, 30) < 0) {
		cli_err("umount", "%s: unmounted, but its daemon has not "
				  "exited after 30 s", mp);
		return CLI_FAIL;
	}
	return CLI_OK;
}
