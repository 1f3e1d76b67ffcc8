/*
 * io: whole-buffer reads, writes and comparisons on descriptors, retrying
 * short transfers and EINTR, so that callers see all-or-error.
 */
#ifndef TCFS_IO_H
#define TCFS_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int tcfs_io_write_all(int fd, const void *buf, size_t len);
int tcfs_io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* Reads fd from its current offset to EOF into a new buffer (*buf, owned by
 * the caller, free()).  When more than max bytes are there, returns -EFBIG
 * with the first max bytes in *buf and fd positioned after them. */
int tcfs_io_read_small(int fd, size_t max, char **buf, size_t *len);

/* 1 when both descriptors hold the same bytes from offset 0, 0 when not,
 * or a negative errno. */
int tcfs_io_same_bytes(int a, int b);

/* 1 when fd holds exactly buf[0..len) from offset 0, 0 when not. */
int tcfs_io_equals_buf(int fd, const void *buf, size_t len);

/* Opens path relative to dirfd in one step that can never leave dirfd's
 * tree (openat2 with RESOLVE_BENEATH): symlinks on the way are followed
 * only while they stay beneath it, and with no_symlinks not at all.
 * flags as for openat (O_CREAT makes the file 0600).  The descriptor, or
 * -EXDEV for a path that would leave the tree (an absolute symlink, a
 * ".." too many), -ELOOP for a symlink refused, or another -errno. */
int tcfs_io_open_beneath(int dirfd, const char *path, int flags,
			 int no_symlinks);

/* The names in directory dirfd but "." and "..", sorted by cmp, a qsort
 * comparator of char * elements (strcmp order when NULL).  *names, the
 * array and each name, owned by the caller: tcfs_io_names_free.  dirfd
 * stays open and unread.  0 or -errno. */
int tcfs_io_list_names(int dirfd, int (*cmp)(const void *, const void *),
		       char ***names, size_t *n);
void tcfs_io_names_free(char **names, size_t n);

/* Removes dirfd/name and, when it is a directory, everything in it,
 * never following a symlink: a link is removed, not what it names.  At
 * most TCFS_IO_RM_DEPTH levels deep (-ELOOP past them, with nothing
 * below that level removed).  0 when nothing is left (ENOENT is no
 * error), or the first -errno; it goes on past errors, removing what it
 * can. */
#define TCFS_IO_RM_DEPTH 64
int tcfs_io_rm_tree_at(int dirfd, const char *name);

/* Creates path and every missing directory above it (mode 0755, as
 * mkdir -p).  0, or -errno. */
int tcfs_io_mkdirs(const char *path);

/* A temp name nobody can guess, "tmp.pid_PID_RANDOM" (64 bytes will do),
 * one that Triton's tools and tcfs import skip.  0 or -errno. */
int tcfs_io_temp_name(char *tmp, size_t len);

/* Creates a new file in dirfd under a name nobody can guess, so that
 * nothing planted there is ever opened: "tmp.pid_PID_RANDOM", a name
 * Triton's tools and tcfs import skip as a temp.  Exclusively, and never
 * through a symlink.  Its name goes to tmp (64 bytes will do); returns
 * the descriptor (O_WRONLY, mode 0600), or -errno. */
int tcfs_io_create_temp(int dirfd, char *tmp, size_t len);

/* Writes dirfd/name whole or not at all: bytes into a temp file
 * (tcfs_io_create_temp) given mode and mtime_ns, then renamed over name,
 * which replaces whatever was there without writing through it.  0, or
 * -errno with the temp file removed. */
int tcfs_io_put_at(int dirfd, const char *name, const void *bytes,
		   size_t len, mode_t mode, int64_t mtime_ns);

/* -ELOOP, with a message naming shown (the path as the user gave it),
 * when dirfd/name is a symlink: a writer that must never write through
 * one refuses it, as whoever planted it meant the write to land
 * elsewhere.  0 for anything else, or nothing there. */
int tcfs_io_refuse_symlink(int dirfd, const char *name, const char *shown);

#endif
