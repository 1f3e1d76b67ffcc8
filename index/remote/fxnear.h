/*
 * fxnear: the FX graphs of the fleet nearest a local one.  Each FX entry
 * published with its debug lines carries their names and hashes in its
 * sidecar ("inputs", wire.h), so graphs are compared by sidecars alone:
 * no entry, no pickle, is fetched.  A graph that missed here although
 * another machine compiled "the same" one differs from it in an input
 * (a device index, a process group's name, a path): the nearest says
 * which.
 *
 * Sidecars are hostile: at most TCFS_FXNEAR_SCAN_MAX keys are looked at,
 * each value at most TCFS_WIRE_JSON_MAX bytes, parsed strictly and, where
 * the remote's options ask it (a key, or remote_inductor=signed), taken
 * only with a valid HMAC, as the mount takes an entry.
 */
#ifndef TCFS_REMOTE_FXNEAR_H
#define TCFS_REMOTE_FXNEAR_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "index/base/name.h"

struct tcfs_remote;
struct tcfs_fx_details;

#define TCFS_FXNEAR_SCAN_MAX 10000
/* Sidecars asked for in one round trip. */
#define TCFS_FXNEAR_BATCH 64
/* The nearest graphs kept, fewest differing inputs first. */
#define TCFS_FXNEAR_SHOW 5

struct tcfs_fxnear_graph {
	char graph[TCFS_NAME_MAX + 1];	/* FKEY */
	size_t differ;			/* inputs that differ */
};

struct tcfs_fxnear {
	size_t scanned;		/* sidecars of other graphs found */
	size_t compared;	/* taken, with inputs */
	size_t refused;		/* unsigned or forged where a signature is
				 * asked, malformed, or over the bound */
	size_t no_inputs;	/* taken, without inputs */
	size_t n;
	struct tcfs_fxnear_graph near[TCFS_FXNEAR_SHOW];
	/* Against near[0], in the local entry's order then the names only
	 * the remote has: [{input, local: VALUE or null, remote: HASH or
	 * null}], at most TCFS_FXGRAPH_SHOW_MAX, each VALUE cut at
	 * TCFS_FXGRAPH_TEXT_MAX bytes (values are only known here).  NULL
	 * when n is 0.  Owned: tcfs_fxnear_free. */
	cJSON *differences;
};

/* Compares mine, the debug lines of graph's local entry, with every other
 * FX graph's sidecar in the remote r.  0 (out->n may be 0: nothing to
 * compare with), or the remote's error (-ECONNREFUSED, -ETIMEDOUT, ...)
 * or -ENOMEM, with a message. */
int tcfs_fxnear(struct tcfs_remote *r, const char *graph,
		const struct tcfs_fx_details *mine, struct tcfs_fxnear *out);
void tcfs_fxnear_free(struct tcfs_fxnear *f);

#endif
