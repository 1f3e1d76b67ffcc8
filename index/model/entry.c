/* entry: the entries of Inductor's and vLLM's caches (entry.h). */
#include "index/model/entry.h"

#include <stdio.h>
#include <string.h>

/* Whether dir lies in a vLLM rank's dir: its own name, or its parent's,
 * rank_I_J (vLLM keeps its artifacts under a prefix dir there). */
static int rank_dir(struct tcfs_store *s, const struct tcfs_node *dir)
{
	struct tcfs_node up;
	unsigned i, j;
	char end;

	if (sscanf(dir->name, "rank_%u_%u%c", &i, &j, &end) == 2)
		return 1;
	return tcfs_ns_get(s, dir->parent, &up) == 0 &&
	       sscanf(up.name, "rank_%u_%u%c", &i, &j, &end) == 2;
}

/* The place a user's own dir stands for: its parent. */
static const struct tcfs_node *place_of(struct tcfs_store *s,
					const struct tcfs_node *dir,
					struct tcfs_node *up)
{
	if (tcfs_name_private(dir->name, NULL) &&
	    tcfs_ns_get(s, dir->parent, up) == 0)
		return up;
	return dir;
}

int tcfs_entry_place(struct tcfs_store *s, const struct tcfs_node *dir)
{
	struct tcfs_node up;

	dir = place_of(s, dir, &up);
	return strlen(dir->name) == 2 || rank_dir(s, dir);
}

enum tcfs_probe tcfs_entry_kind(struct tcfs_store *s,
				const struct tcfs_node *parent,
				const char *name, enum tcfs_artifact art)
{
	struct tcfs_node place, up;
	int two;

	/* A user's own entries are where they name, in a dir of theirs. */
	parent = place_of(s, parent, &place);
	two = strlen(parent->name) == 2;
	switch (art) {
	case TCFS_ART_FXGRAPH:
		if (!two || strncmp(parent->name, name + 1, 2) != 0 ||
		    tcfs_ns_get(s, parent->parent, &up) < 0 ||
		    strcmp(up.name, "fxgraph") != 0)
			return 0;
		return TCFS_PROBE_FXGRAPH;
	case TCFS_ART_AOT:
		return strcmp(parent->name, "aotautograd") == 0 ? TCFS_PROBE_AOT
							       : 0;
	case TCFS_ART_PYCODE:
		return two && strncmp(parent->name, name + 1, 2) == 0
			       ? TCFS_PROBE_PYCODE
			       : 0;
	case TCFS_ART_BEST_CONFIG:
		return two ? TCFS_PROBE_BEST_CONFIG : 0;
	case TCFS_ART_VLLM:
		return rank_dir(s, parent) ? TCFS_PROBE_VLLM : 0;
	default:
		return 0;
	}
}
