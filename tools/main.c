/* tcfs: the command; dispatches to one subcommand per file (cmds.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"

#ifndef TCFS_VERSION
#define TCFS_VERSION "unknown"
#endif

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "mount", cmd_mount, "serve the store at TRITON_CACHE_DIR" },
	{ "umount", cmd_umount, "unmount it, waiting for the daemon to finish" },
	{ "stats", cmd_stats, "cache hits and misses the mount logged" },
	{ "log", cmd_log, "the probe log, one event per line" },
	{ "import", cmd_import, "add existing Triton cache dirs to the store" },
	{ "export", cmd_export, "write the store out as a plain Triton cache" },
	{ "pack", cmd_pack, "write kernels as an OCI image (MCV's format)" },
	{ "unpack", cmd_unpack, "add an OCI image's kernels to the store" },
	{ "info", cmd_info, "what the store holds: kernels, files, sizes" },
	{ "list", cmd_list, "one row per kernel, with its hits and misses" },
	{ "why", cmd_why, "why a kernel missed: what differs from its nearest" },
	{ "fsck", cmd_fsck, "verify every blob and row; --repair what is safe" },
	{ "prune", cmd_prune, "remove kernels (or their IR), offline or mounted" },
	{ "gc", cmd_gc, "delete blobs that no file references" },
	{ "config", cmd_config, "show or set the store's settings" },
	{ "remote", cmd_remote, "the fleet tier: status, push, pull (Redis)" },
	{ "trust", cmd_trust, "make users' own kernels shared (shared mounts)" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: tcfs [--store DIR] COMMAND [OPTIONS] [ARGS]\n"
		"\n"
		"tcfs serves Triton's kernel cache (TRITON_CACHE_DIR) from a "
		"content-addressed\nstore, logging every cache probe as a hit "
		"or a miss: every distinct file\nonce, the tree and each "
		"kernel's metadata in SQLite.\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f,
		"\n"
		"The store is --store DIR (a store or a mount point, before "
		"or after COMMAND),\nelse $TCFS_STORE, else the store of your "
		"tcfs mount that holds the current\ndirectory, else of the one "
		"TRITON_CACHE_DIR (or TORCHINDUCTOR_CACHE_DIR) is in,\nelse "
		"$XDG_DATA_HOME/tcfs, else ~/.local/share/tcfs.  'tcfs help "
		"COMMAND' (or\n'tcfs COMMAND --help') describes a command; "
		"'tcfs version' prints the version.\n"
		"\n"
		"'tcfs STORE MOUNTPOINT [-o OPT,...]' (STORE a path with a '/')\n"
		"is 'tcfs mount --store STORE', as mount(8) runs it for fstab's\n"
		"type fuse.tcfs.\n"
		"\n"
		"Exit status: 0 success, 1 failure (fsck: damage found), "
		"2 usage error.\n");
}

/* "--store DIR", "--store=DIR" or "-s DIR" before the command, as git -C:
 * the number of arguments it took (0 for none), or -1 for one without
 * its DIR. */
static int store_first(int argc, char **argv)
{
	const char *a = argv[1];

	if (argc > 1 && strncmp(a, "--store=", 8) == 0) {
		cli_store_first(a + 8);
		return 1;
	}
	if (argc < 2 || (strcmp(a, "--store") != 0 && strcmp(a, "-s") != 0))
		return 0;
	if (argc < 3)
		return -1;
	cli_store_first(argv[2]);
	return 2;
}

/* tcfs help [COMMAND], as git has it: the command's --help. */
static int help(int argc, char **argv)
{
	char *help_argv[] = { argv[1], "--help", NULL };

	if (argc < 2) {
		usage(stdout);
		return CLI_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(2, help_argv);
	fprintf(stderr, "tcfs help: '%s' is not a tcfs command\n", argv[1]);
	return CLI_USAGE;
}

int main(int argc, char **argv)
{
	int took;

	while ((took = store_first(argc, argv)) > 0) {
		argc -= took;
		argv += took;
	}
	if (took < 0) {
		fprintf(stderr, "tcfs: option '--store' needs a value (DIR)\n");
		return CLI_USAGE;
	}
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return help(1, argv + 1);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		printf("tcfs %s\n", TCFS_VERSION);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc - 1, argv + 1);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* mount(8) runs a file system's helper as PROG SOURCE MOUNTPOINT -o
	 * OPTS (for fuse.tcfs in fstab, through mount.fuse3): a path where
	 * the command goes.  A '/' tells it from a mistyped command. */
	if (argc >= 3 && strchr(argv[1], '/'))
		return cmd_mount_fstab(argc - 1, argv + 1);
	fprintf(stderr, "tcfs: '%s' is not a tcfs command\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
