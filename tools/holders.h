/*
 * holders: the processes that keep a mount point busy, for tcfs umount:
 * those whose working directory, root, open files or mapped files are in
 * it.  Read from /proc with readlink and the maps' text only: a stat
 * through the mount would be a probe of the cache.
 */
#ifndef TCFS_TOOLS_HOLDERS_H
#define TCFS_TOOLS_HOLDERS_H

#include <stdio.h>
#include <sys/types.h>

/* Prints "PID COMMAND" on out for each process but self that holds
 * something under mp (an absolute path, no trailing '/'), as far as
 * /proc lets this user see.  Returns how many. */
size_t holders_print(const char *mp, pid_t self, FILE *out);

#endif
