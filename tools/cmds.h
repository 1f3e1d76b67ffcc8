/*
 * The tcfs subcommands, one file each: cmd_NAME.c.  Each takes its own
 * argv (argv[0] is the command's name) and returns an exit code (cli.h).
 */
#ifndef TCFS_CMDS_H
#define TCFS_CMDS_H

int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
/* mount(8)'s helper form, tcfs SOURCE MOUNTPOINT [-o OPTS]...: here argv[0]
 * is SOURCE, the store. */
int cmd_mount_fstab(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_remote(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_why(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_unpack(int argc, char **argv);

#endif
