/*
 * survey: what the fleet tier holds, as tcfs remote status and pull ask
 * it: offline, of the remote a command names, or in the mount's daemon
 * (fs/ctl.c), of the mount's own.
 */
#ifndef TCFS_REMOTE_SURVEY_H
#define TCFS_REMOTE_SURVEY_H

#include <stddef.h>

#include "index/base/name.h"
#include "index/model/kernel.h"

struct cJSON;
struct tcfs_remote;
struct tcfs_store;

/* {url, answers, latency_ms, server, kernels, held, error}: whether r
 * answers, how fast, and how many of the kernels of s that f selects it
 * holds (each by its group file).  A remote that does not answer is said
 * in it (answers false, error a message), not as a failure.  *out is
 * owned by the caller (cJSON_Delete).  0, or -ENOMEM. */
int tcfs_remote_survey_status(struct tcfs_remote *r, struct tcfs_store *s,
			      const struct tcfs_kernel_filter *f,
			      struct cJSON **out);

/* A kernel the remote holds: its cache key and name. */
struct tcfs_remote_kernel {
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];
};

/* Keys a survey reads, at most: a pull lists their names first. */
#define TCFS_REMOTE_SURVEY_MAX 1000000

/* The kernels r holds that f selects: by name (a glob) from their group
 * files' keys, by arch and backend from each one's NAME.json, as its
 * fetch will check it.  *out is owned by the caller (free()).  0, or
 * -errno with a message. */
int tcfs_remote_survey_list(struct tcfs_remote *r,
			    const struct tcfs_kernel_filter *f,
			    struct tcfs_remote_kernel **out, size_t *n);

#endif
