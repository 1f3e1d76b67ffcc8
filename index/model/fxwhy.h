/*
 * fxwhy: why an FX graph missed.  Inductor names a graph's entries
 * (XX/FKEY/ENTRY in its dir at any cache root: entry.h) by a hash of its
 * inputs, and writes into each entry the inputs it hashed (fxgraph.h).  When a
 * graph missed and Inductor compiled it, its entry is compared with every
 * entry of another graph cached before the miss (its first miss, else
 * its entry's time): the nearest, with the fewest inputs that differ,
 * says which inputs set it apart (a shape, a dtype, the graph's code, a
 * configuration value, the versions).
 */
#ifndef TCFS_FXWHY_H
#define TCFS_FXWHY_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "index/base/name.h"

struct tcfs_store;
struct tcfs_fx_details;

/* What the graph's own entry gave. */
enum tcfs_fxwhy_details {
	TCFS_FXWHY_OK,		/* its inputs, from its entry */
	TCFS_FXWHY_NO_ENTRY,	/* it missed, and no entry was written */
	TCFS_FXWHY_NO_LINES,	/* its entry records no inputs (a PyTorch
				 * without _fx_graph_cache_debug_lines) */
	TCFS_FXWHY_TOO_BIG,	/* its entry is over TCFS_FXGRAPH_MAX */
	TCFS_FXWHY_UNREADABLE,	/* not a pickle, or its blob is damaged */
};

struct tcfs_fxwhy {
	char graph[TCFS_NAME_MAX + 1];	/* FKEY, as asked */
	char dir[TCFS_NAME_MAX + 1];	/* XX, its dir of graphs; "" none */
	char entry[TCFS_NAME_MAX + 1];	/* its entry's name; "" none */
	/* Only entries cached before this were compared. */
	int64_t since_ns;
	enum tcfs_fxwhy_details details;
	size_t inputs;			/* the inputs its entry records */
	size_t compared;		/* other graphs' entries compared */
	char nearest[TCFS_NAME_MAX + 1];	/* FKEY; "" none */
	/* fxgraph.h's [{input, from, to}] against the nearest; NULL
	 * without one.  Owned: tcfs_fxwhy_free. */
	cJSON *differences;
};

/* Compares the FX graph named graph ("f" and its key) with the graphs
 * cached before it missed.  -ENOENT when the store holds no entry of it
 * and the log no miss. */
int tcfs_fxwhy(struct tcfs_store *s, const char *graph, struct tcfs_fxwhy *out);
void tcfs_fxwhy_free(struct tcfs_fxwhy *w);

/* The debug lines of graph's own entry (its oldest), as tcfs_fxwhy reads
 * them: *buf (owned: free()) holds the bytes *d points into (owned:
 * tcfs_fx_details_free).  0; -ENOENT no entry; -EFBIG over
 * TCFS_FXGRAPH_MAX; -EINVAL not a pickle; -ENOMEM. */
int tcfs_fxwhy_own(struct tcfs_store *s, const char *graph, char **buf,
		   struct tcfs_fx_details *d);

/* "ok", "no entry", "no inputs recorded", "too big", "unreadable". */
const char *tcfs_fxwhy_details_name(enum tcfs_fxwhy_details d);

#endif
