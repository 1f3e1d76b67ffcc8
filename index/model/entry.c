/* entry: the table of probe kinds, and the recogniser (entry.h). */
#include "index/model/entry.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "index/model/kernel.h"

static const char fx_dir[] = "fxgraph";
static const char aot_dir[] = "aotautograd";
static const char vllm_dir[] = "torch_compile_cache";
static const char vllm_aot_dir[] = "torch_aot_compile";

static const struct tcfs_probe_kind kinds[TCFS_PROBE_KINDS + 1] = {
	[TCFS_PROBE_KERNEL] = {
		.id = TCFS_PROBE_KERNEL, .name = "kernel", .label = "kernels",
		.cache = "Triton", .remote = TCFS_ENTRY_REMOTE_TRITON,
		.option = "remote",
	},
	[TCFS_PROBE_MODULE] = {
		.id = TCFS_PROBE_MODULE, .name = "module", .json = "modules",
		.label = "modules", .cache = "Triton",
		.remote = TCFS_ENTRY_REMOTE_TRITON, .option = "remote_modules",
	},
	[TCFS_PROBE_FXGRAPH] = {
		.id = TCFS_PROBE_FXGRAPH, .name = "fxgraph",
		.json_group = "inductor", .json = "fxgraph",
		.label = "fx graphs", .cache = "Inductor",
		.remote = TCFS_ENTRY_REMOTE_PT2, .remote_id = "fx-graph-v1",
		.option = "remote_inductor", .holds_entries = 1,
		.carries_kernels = 1,
	},
	[TCFS_PROBE_AOT] = {
		.id = TCFS_PROBE_AOT, .name = "aotautograd",
		.json_group = "inductor", .json = "aotautograd",
		.label = "aotautograd", .cache = "Inductor",
		.remote = TCFS_ENTRY_REMOTE_PT2,
		.remote_id = "autograd-experimental",
		.option = "remote_inductor", .holds_entries = 1,
	},
	/* A node whose FX graph hits writes the module from the entry, and
	 * autotunes nothing: these two stay local. */
	[TCFS_PROBE_PYCODE] = {
		.id = TCFS_PROBE_PYCODE, .name = "pycode",
		.json_group = "inductor", .json = "pycode",
		.label = "compiled .py", .cache = "Inductor",
	},
	[TCFS_PROBE_BEST_CONFIG] = {
		.id = TCFS_PROBE_BEST_CONFIG, .name = "best_config",
		.json_group = "inductor", .json = "best_config",
		.label = "autotune", .cache = "Inductor",
	},
	[TCFS_PROBE_VLLM] = {
		.id = TCFS_PROBE_VLLM, .name = "vllm", .json = "vllm",
		.label = "vllm artifacts", .cache = "vLLM",
		.remote = TCFS_ENTRY_REMOTE_TCFS, .remote_id = "vllm",
		.option = "remote_inductor",
	},
};

const struct tcfs_probe_kind *tcfs_probe_kind(enum tcfs_probe k)
{
	assert(k >= 1 && k <= TCFS_PROBE_KINDS);
	assert(kinds[k].id == k);
	return &kinds[k];
}

const char *tcfs_probe_name(enum tcfs_probe k)
{
	/* A row a later tcfs wrote, read back here: shown, never a crash. */
	return k >= 1 && k <= TCFS_PROBE_KINDS ? kinds[k].name : "unknown";
}

enum tcfs_probe tcfs_probe_of(const char *name)
{
	for (int k = 1; k <= TCFS_PROBE_KINDS; k++)
		if (strcmp(name, kinds[k].name) == 0)
			return (enum tcfs_probe)k;
	return 0;
}

enum tcfs_probe tcfs_entry_fx_kind(void)
{
	return TCFS_PROBE_FXGRAPH;
}

const char *tcfs_entry_fx_dir(void)
{
	return fx_dir;
}

/* Inductor names its entries by a hash of what they hold: a letter and
 * 51 lowercase base32 characters. */
#define INDUCTOR_KEY_LEN 52

static int inductor_key(const char *name, size_t n, char first)
{
	if (n < INDUCTOR_KEY_LEN || name[0] != first)
		return 0;
	for (size_t i = 1; i < INDUCTOR_KEY_LEN; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '2' && name[i] <= '7')))
			return 0;
	return 1;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

enum tcfs_probe tcfs_entry_named(const char *name)
{
	size_t n = strlen(name);

	switch (tcfs_name_artifact(name)) {
	case TCFS_ART_GROUP:
		return TCFS_PROBE_KERNEL;
	case TCFS_ART_MODULE:
	case TCFS_ART_AUTOTUNE:
		return TCFS_PROBE_MODULE;
	default:
		break;
	}
	if (n == INDUCTOR_KEY_LEN && inductor_key(name, n, 'f'))
		return TCFS_PROBE_FXGRAPH;
	if (n == INDUCTOR_KEY_LEN && inductor_key(name, n, 'a'))
		return TCFS_PROBE_AOT;
	if (n == INDUCTOR_KEY_LEN + 3 && ends_with(name, n, ".py") &&
	    inductor_key(name, n, 'c'))
		return TCFS_PROBE_PYCODE;
	if (n > 12 && ends_with(name, n, ".best_config"))
		return TCFS_PROBE_BEST_CONFIG;
	if (strncmp(name, "artifact_compile_range_", 23) == 0)
		return TCFS_PROBE_VLLM;
	return 0;
}

static int is_rank(const char *name)
{
	unsigned i, j;
	char end;

	return sscanf(name, "rank_%u_%u%c", &i, &j, &end) == 2;
}

/* Whether dir lies in a vLLM rank's dir: its own name, or its parent's,
 * rank_I_J (vLLM keeps its artifacts under a prefix dir there). */
static int rank_dir(struct tcfs_store *s, const struct tcfs_node *dir)
{
	struct tcfs_node up;

	return is_rank(dir->name) ||
	       (tcfs_ns_get(s, dir->parent, &up) == 0 && is_rank(up.name));
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

/* Whether the dir parent is named dir_name. */
static int named(const struct tcfs_node *parent, const char *dir_name)
{
	return strcmp(parent->name, dir_name) == 0;
}

/* Whether Triton's key dir rule makes parent a key dir. */
static int key_dir(struct tcfs_store *s, const struct tcfs_node *parent)
{
	int key = 0;

	return tcfs_kernel_key_dir_at(s, parent->parent, parent->name,
				      &key) == 0 && key;
}

enum tcfs_probe tcfs_entry_kind(struct tcfs_store *s,
				const struct tcfs_node *parent,
				const char *name)
{
	enum tcfs_probe k = tcfs_entry_named(name);
	struct tcfs_node place, up;
	int two;

	if (k == TCFS_PROBE_KERNEL || k == TCFS_PROBE_MODULE)
		return key_dir(s, parent) ? k : 0;
	/* A user's own entries are where they name, in a dir of theirs. */
	parent = place_of(s, parent, &place);
	two = strlen(parent->name) == 2;
	switch (k) {
	case TCFS_PROBE_FXGRAPH:
		return two && strncmp(parent->name, name + 1, 2) == 0 &&
			       tcfs_ns_get(s, parent->parent, &up) == 0 &&
			       named(&up, fx_dir)
			       ? k
			       : 0;
	case TCFS_PROBE_AOT:
		return named(parent, aot_dir) ? k : 0;
	case TCFS_PROBE_PYCODE:
		return two && strncmp(parent->name, name + 1, 2) == 0 ? k : 0;
	case TCFS_PROBE_BEST_CONFIG:
		return two ? k : 0;
	case TCFS_PROBE_VLLM:
		return rank_dir(s, parent) ? k : 0;
	default:
		return 0;
	}
}

/* A cache root, as kernel.c has it: the mount root, or a dir not named
 * like a key (nor an entry's dir of two characters). */
static int cache_root(const struct tcfs_node *dir)
{
	return dir->ino == TCFS_ROOT_INO ||
	       (!tcfs_name_is_key(dir->name) && strlen(dir->name) != 2);
}

/* vLLM's hash of a compile's factors: hex, 8 to 64 digits. */
static int vllm_hash(const char *name)
{
	size_t n = strspn(name, "0123456789abcdef");

	return n >= 8 && n <= 64 && name[n] == '\0';
}

enum tcfs_probe tcfs_entry_above(struct tcfs_store *s,
				 const struct tcfs_node *parent,
				 const char *name)
{
	struct tcfs_node place, up;

	parent = place_of(s, parent, &place);
	if (cache_root(parent) && strcmp(name, fx_dir) == 0)
		return TCFS_PROBE_FXGRAPH;
	if (cache_root(parent) && strcmp(name, aot_dir) == 0)
		return TCFS_PROBE_AOT;
	if (named(parent, fx_dir) && strlen(name) == 2 &&
	    strspn(name, "abcdefghijklmnopqrstuvwxyz234567") == 2)
		return TCFS_PROBE_FXGRAPH;
	if (cache_root(parent) && strcmp(name, vllm_dir) == 0)
		return TCFS_PROBE_VLLM;
	if (named(parent, vllm_dir) &&
	    (strcmp(name, vllm_aot_dir) == 0 || vllm_hash(name)))
		return TCFS_PROBE_VLLM;
	if (named(parent, vllm_aot_dir) && vllm_hash(name) &&
	    tcfs_ns_get(s, parent->parent, &up) == 0 && named(&up, vllm_dir))
		return TCFS_PROBE_VLLM;
	return 0;
}

enum tcfs_probe tcfs_entry_rank_dir(struct tcfs_store *s,
				    const struct tcfs_node *parent,
				    const char *name)
{
	struct tcfs_node up;

	if (!is_rank(name) || !vllm_hash(parent->name) ||
	    tcfs_ns_get(s, parent->parent, &up) < 0)
		return 0;
	return named(&up, vllm_dir) || named(&up, vllm_aot_dir)
		       ? TCFS_PROBE_VLLM
		       : 0;
}
