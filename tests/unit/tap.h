/*
 * tap: a minimal Test Anything Protocol producer for the unit tests, so
 * that meson counts every check.  Header-only: each test is one program.
 */
#ifndef TCFS_TAP_H
#define TCFS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

/* static inline: a test need not use every helper. */

__attribute__((format(printf, 2, 3))) static inline int tap_ok(int cond,
							const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	tap_failed += !cond;
	return cond;
}

/* An integer comparison that says both values when it fails. */
#define tap_eq(got, want, ...)                                               \
	do {                                                                 \
		long long g_ = (long long)(got), w_ = (long long)(want);    \
		if (!tap_ok(g_ == w_, __VA_ARGS__))                          \
			printf("#   got %lld, want %lld\n", g_, w_);         \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* A fresh empty directory for one test program; removed by the caller's
 * tap_rmtree at the end. */
static inline char *tap_tmpdir(void)
{
	static char path[] = "/tmp/tcfs-test-XXXXXX";

	if (!mkdtemp(path)) {
		perror("mkdtemp");
		exit(2);
	}
	return path;
}

static inline void tap_rmtree(const char *path)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'",
		 path, path);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", path);
}

#endif
