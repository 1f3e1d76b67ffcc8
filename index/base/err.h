/*
 * err: the one error convention of libtcfs.
 *
 * Every fallible function returns 0 (or a count) on success and a negative
 * errno on failure.  Where the errno alone would not tell a user what went
 * wrong, the failing function also records a message naming the file and the
 * cause ("STORE/index.db: file is not a database").  Messages are kept per
 * thread, so the mount's worker threads never see each other's errors.
 */
#ifndef TCFS_ERR_H
#define TCFS_ERR_H

/* Records a message for this thread and returns rc (a negative errno). */
int tcfs_err_set(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like tcfs_err_set, with ": strerror(-rc)" appended. */
int tcfs_err_errno(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Puts "CONTEXT: " (fmt's) before this thread's message, or before
 * strerror(-rc) when there is none, and returns rc: an error passed up
 * gains what its caller knows (whose file, which layer). */
int tcfs_err_prefix(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* This thread's last message, or "" if none was recorded since the last
 * tcfs_err_clear().  Owned by the library; valid until the next call that
 * records one on this thread. */
const char *tcfs_err_msg(void);

void tcfs_err_clear(void);

#endif
