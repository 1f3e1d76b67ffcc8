/* err: the per-thread message behind every negative errno. */
#include "index/base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Per thread: the mount answers many requests at once. */
static _Thread_local char tcfs_err_buf[1024];

__attribute__((format(printf, 1, 0))) static void err_vset(const char *fmt,
						       va_list ap)
{
	vsnprintf(tcfs_err_buf, sizeof(tcfs_err_buf), fmt, ap);
}

int tcfs_err_set(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(fmt, ap);
	va_end(ap);
	return rc;
}

int tcfs_err_errno(int rc, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	err_vset(fmt, ap);
	va_end(ap);
	n = strlen(tcfs_err_buf);
	snprintf(tcfs_err_buf + n, sizeof(tcfs_err_buf) - n, ": %s",
		 strerror(-rc));
	return rc;
}

int tcfs_err_prefix(int rc, const char *fmt, ...)
{
	char cause[sizeof(tcfs_err_buf)];
	va_list ap;
	size_t n;

	snprintf(cause, sizeof(cause), "%s",
		 tcfs_err_buf[0] ? tcfs_err_buf : strerror(-rc));
	va_start(ap, fmt);
	err_vset(fmt, ap);
	va_end(ap);
	n = strlen(tcfs_err_buf);
	/* Whatever does not fit is cut: the context comes first. */
	snprintf(tcfs_err_buf + n, sizeof(tcfs_err_buf) - n, ": %.*s",
		 (int)(sizeof(tcfs_err_buf) - n), cause);
	return rc;
}

const char *tcfs_err_msg(void)
{
	return tcfs_err_buf;
}

void tcfs_err_clear(void)
{
	tcfs_err_buf[0] = '\0';
}
