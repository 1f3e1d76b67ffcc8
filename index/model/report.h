/*
 * report: what the probe log and the store say, rendered for people
 * (tcfs stats), for programs (its JSON) and for Prometheus (the text
 * exposition format, for node_exporter's textfile collector), to any
 * FILE: the command's stdout, or memory for the mount's .tcfs/ files.
 */
#ifndef TCFS_REPORT_H
#define TCFS_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tcfs_store;

/* What only a running mount knows. */
struct tcfs_report_daemon {
	uint64_t requests;	/* requests served */
	int64_t start_ns;	/* when it started */
};

/* tcfs stats: probes since since_ns (0: all), as text or JSON; mount is
 * the store's mount point, or NULL.  The process list shows only the
 * processes of user uid (TCFS_EVENT_ALL_USERS, event.h: everyone's), as
 * the mount shows another user; every other count is everyone's.
 * *misses (unless NULL) gets the kernel misses counted.  0 or -errno. */
int tcfs_report_stats(struct tcfs_store *s, int64_t since_ns,
		      const char *mount, int64_t uid, int json, FILE *out,
		      uint64_t *misses);

/* The same counts and the store's sizes as Prometheus metrics; d NULL
 * when no mount serves the store.  Nothing in them is a process's, so
 * every user may see them.  0 or -errno. */
int tcfs_report_metrics(struct tcfs_store *s,
			const struct tcfs_report_daemon *d, FILE *out);

/* A time as "YYYY-MM-DD HH:MM:SS", local; buf is returned. */
const char *tcfs_report_time(int64_t ns, char *buf, size_t len);

/* "12.3 MiB" (powers of 1024); buf needs 16 bytes. */
const char *tcfs_report_bytes(uint64_t bytes, char *buf, size_t len);

#endif
