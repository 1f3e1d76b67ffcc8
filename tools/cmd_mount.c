/* tcfs mount and tcfs umount, and mount(8)'s helper form (fstab). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "index/store.h"

static const char *const mount_help =
	"Usage: tcfs mount [OPTIONS] MOUNTPOINT\n"
	"\n"
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
	"(a '/' or '%' of a name or target shown as %XX);\n"
	"binary-only/, the cache again without its IR (.ttir .ttgir .llir\n"
	".ptx .amdgcn), writable, for TRITON_CACHE_DIR=MOUNT/binary-only; and\n"
	".tcfs/ with stats, stats.json and metrics.prom, made anew, whole, at\n"
	"each open (other users than root and the owner see their own\n"
	"processes only).\n"
	"\n"
	"As mount(8)'s helper (an fstab line 'STORE MOUNTPOINT fuse.tcfs\n"
	"defaults,allow_other 0 0', run through mount.fuse3), tcfs is called\n"
	"as 'tcfs STORE MOUNTPOINT -o OPT,...' (STORE a path with a '/'),\n"
	"which is 'tcfs mount --store STORE -o OPT,... MOUNTPOINT'.  -o drops\n"
	"the generic options FUSE does not take (defaults, auto, noauto, user,\n"
	"nouser, users, owner, group, nofail, _netdev, x-*, comment=*).\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default as for tcfs import); created if\n"
	"                    missing\n"
	"  -f, --foreground  stay in the foreground until unmounted\n"
	"  -d, --debug       foreground, single-threaded, every request on stderr\n"
	"  -o OPT[,OPT...]   FUSE mount options (allow_other, nonempty, ...;\n"
	"                    -o may be given more than once),\n"
	"                    and tcfs's own: noviews (the root lists only the\n"
	"                    cache's own entries; .tcfs/ still answers),\n"
	"                    binary_only (the root is the binary-only view),\n"
	"                    store_binary_only (IR files written are dropped\n"
	"                    as they land, never stored),\n"
	"                    max_size=SIZE (as tcfs config max-size, for this\n"
	"                    mount), redirect=NAME:DIR (group files of kernel\n"
	"                    NAME name DIR/NAME.json and DIR/NAME.hsaco or\n"
	"                    .cubin, those DIR has when read, as AMD aiter's\n"
	"                    redirect; repeatable, DIR made absolute)\n"
	"      --sync-every SECS\n"
	"                    make new files durable this often (default 1), in\n"
	"                    one sync of the store's disk: a power cut loses at\n"
	"                    most the files of the last SECS, as on a local disk\n"
	"      --no-fsync    never sync new files: a killed daemon still loses\n"
	"                    nothing, but a power cut may damage recent files\n"
	"                    (tcfs fsck --repair then has their kernels\n"
	"                    recompiled)\n"
	"      --busy-poll USEC\n"
	"                    after each request, poll this long for the next\n"
	"                    one instead of sleeping (default 200; 0: never):\n"
	"                    faster answers in Triton's bursts, for one CPU\n"
	"                    busy while they last (not with -d)\n"
	"  -w, --wait SECS   wait this long for another writer (default 10)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 mounted (with -f: unmounted cleanly), 1 error, 2 usage\n"
	"error.\n";

static const char *const umount_help =
	"Usage: tcfs umount MOUNTPOINT\n"
	"\n"
	"Unmounts a tcfs mount (fusermount3 -u) and waits until its daemon has\n"
	"committed pending writes, flushed the probe log and exited.\n"
	"\n"
	"Exit status: 0 unmounted, 1 error (not a tcfs mount, busy), 2 usage.\n";

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

/* A whole number of microseconds up to a second, or -1. */
static long parse_us(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > 1000000)
		return -1;
	return v;
}

/* Long options without a letter: values no character takes. */
enum { OPT_SYNC_EVERY = 0x100, OPT_BUSY_POLL };

int cmd_mount(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "no-fsync", no_argument, NULL, 'N' },
		{ "sync-every", required_argument, NULL, OPT_SYNC_EVERY },
		{ "busy-poll", required_argument, NULL, OPT_BUSY_POLL },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_fs_opts fo = { .busy_poll_us = TCFS_FS_BUSY_POLL_US };
	char store[PATH_MAX], real[PATH_MAX], fsopts[3 * PATH_MAX + 64];
	char user[PATH_MAX] = "";
	int c, rc;

	while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTOPTS "fdo:",
				opts, NULL)) != -1) {
		switch (cli_common_opt("mount", mount_help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		switch (c) {
		case 'f':
			fo.foreground = 1;
			break;
		case 'd':
			fo.foreground = fo.debug = 1;
			break;
		case 'o':
			if (add_opts(user, sizeof(user), optarg) < 0)
				return cli_usage_err("mount", "-o: options too "
						     "long");
			break;
		case 'N':
			fo.no_fsync = 1;
			break;
		case OPT_SYNC_EVERY:
			fo.sync_s = cli_parse_wait(optarg);
			if (fo.sync_s <= 0)
				return cli_usage_err("mount", "--sync-every: "
						     "'%s' is not a number of "
						     "seconds above 0", optarg);
			break;
		case OPT_BUSY_POLL:
			fo.busy_poll_us = parse_us(optarg);
			if (fo.busy_poll_us < 0)
				return cli_usage_err("mount", "--busy-poll: "
						     "'%s' is not a number of "
						     "microseconds from 0 to "
						     "1000000", optarg);
			break;
		default:
			return cli_usage_err("mount", "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage_err("mount", optind >= argc
						      ? "no mount point given"
						      : "one mount point only");
	if (co.store.dir)
		snprintf(store, sizeof(store), "%s", co.store.dir);
	else if (tcfs_store_default_dir(store, sizeof(store)) < 0) {
		cli_lib_err("mount", -ENOENT, "store");
		return CLI_FAIL;
	}
	/* A store not there yet is created by the daemon, which leaves the
	 * working directory: a relative path must be made absolute here. */
	if (realpath(store, real))
		fo.store = real;
	else if (store[0] == '/')
		fo.store = store;
	else if (getcwd(real, sizeof(real)) &&
		 strlen(real) + 1 + strlen(store) < sizeof(real)) {
		strcat(real, "/");
		strcat(real, store);
		fo.store = real;
	} else
		return cli_usage_err("mount", "store path too long");
	if (fsname_opt(fo.store, fsopts, sizeof(fsopts)) < 0)
		return cli_usage_err("mount", "store path too long");
	strcat(fsopts, user);	/* each option comes with its comma */
	fo.mountpoint = argv[optind];
	fo.fuse_opts = fsopts;
	fo.wait_s = co.store.wait_s;
	rc = tcfs_fs_mount(&fo);
	return rc == 0 ? CLI_OK : rc == 2 ? CLI_USAGE : CLI_FAIL;
}

int cmd_mount_fstab(int argc, char **argv)
{
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	int n = 0, rc;

	if (!args) {
		cli_err("mount", "out of memory");
		return CLI_FAIL;
	}
	/* The options first: cmd_mount's getopt stops at the mount point. */
	args[n++] = "mount";
	args[n++] = "--store";
	args[n++] = argv[0];
	for (int i = 2; i < argc; i++)
		args[n++] = argv[i];
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
	int status;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(umount_help, stdout);
		return CLI_OK;
	}
	if (argc != 2)
		return cli_usage_err("umount", "give one mount point");
	if (!realpath(argv[1], mp)) {
		cli_err("umount", "%s: %s", argv[1], strerror(errno));
		return CLI_FAIL;
	}
	if (cli_find_mount(NULL, mp, store, point) < 0) {
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
