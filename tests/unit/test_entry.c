/* entry: the table of probe kinds, and each kind recognised at its place
 * and nowhere else, a user's own dir seen through. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "index/maint/recover.h"
#include "index/model/entry.h"
#include "index/store/store.h"
#include "index/tree/ns.h"
#include "tap.h"

#define FKEY "fab2cdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqr"
#define AKEY "aab2cdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqr"
#define CKEY "cab2cdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqr"
#define TKEY "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"

static struct tcfs_store *s;

/* The dir name in parent, made. */
static struct tcfs_node dir(const struct tcfs_node *parent, const char *name)
{
	struct tcfs_node n = { 0 };

	if (tcfs_ns_mkdir(s, parent->ino, name, 0755, 1, NULL, &n) == -EEXIST)
		tcfs_ns_lookup(s, parent->ino, name, &n);
	return n;
}

static void table(void)
{
	int names_ok = 1, remote_ok = 1;

	for (int k = 1; k <= TCFS_PROBE_KINDS; k++) {
		const struct tcfs_probe_kind *r = tcfs_probe_kind(k);

		tap_eq(r->id, k, "row %d is kind %d", k, k);
		tap_eq(tcfs_probe_of(r->name), k, "%s names its row", r->name);
		for (int j = 1; j < k; j++)
			names_ok &= strcmp(r->name, tcfs_probe_kind(j)->name) != 0;
		if (r->remote == TCFS_ENTRY_REMOTE_PT2 ||
		    r->remote == TCFS_ENTRY_REMOTE_TCFS)
			remote_ok &= r->remote_id && r->option;
		tap_ok(r->label && r->cache, "%s has a label and a cache", r->name);
	}
	tap_ok(names_ok, "every kind's name is its own");
	tap_ok(remote_ok, "every kind that travels names its key and option");
	tap_eq(tcfs_probe_of("nothing"), 0, "no kind of an unknown name");
	tap_ok(strcmp(tcfs_probe_name(0), "unknown") == 0 &&
		       strcmp(tcfs_probe_name(99), "unknown") == 0,
	       "a kind out of range reads as unknown");
}

static void named(void)
{
	tap_eq(tcfs_entry_named("__grp__k.json"), TCFS_PROBE_KERNEL, "group");
	tap_eq(tcfs_entry_named("k.so"), TCFS_PROBE_MODULE, "module");
	tap_eq(tcfs_entry_named("f.autotune.json"), TCFS_PROBE_MODULE,
	       "autotune json");
	tap_eq(tcfs_entry_named(FKEY), TCFS_PROBE_FXGRAPH, "FX graph key");
	tap_eq(tcfs_entry_named(AKEY), TCFS_PROBE_AOT, "AOT key");
	tap_eq(tcfs_entry_named(CKEY ".py"), TCFS_PROBE_PYCODE, "module .py");
	tap_eq(tcfs_entry_named("0123.best_config"), TCFS_PROBE_BEST_CONFIG,
	       "best_config");
	tap_eq(tcfs_entry_named("artifact_compile_range_1_8"), TCFS_PROBE_VLLM,
	       "vLLM artifact");
	tap_eq(tcfs_entry_named("fAB2cdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqr"),
	       0, "uppercase: no FX key");
	tap_eq(tcfs_entry_named(FKEY "x"), 0, "53 characters: none");
	tap_eq(tcfs_entry_named(CKEY), 0, "a 'c' key without .py: none");
	tap_eq(tcfs_entry_named("plain.txt"), 0, "a plain name: none");
}

static void kinds(void)
{
	struct tcfs_node root = { .ino = TCFS_ROOT_INO, .name = "" };
	struct tcfs_node fx = dir(&root, "fxgraph"), xx = dir(&fx, "ab");
	struct tcfs_node aot = dir(&root, "aotautograd");
	struct tcfs_node other = dir(&root, "ab");
	struct tcfs_node key = dir(&root, TKEY);
	struct tcfs_node own = dir(&xx, ".tcfs-private-1000");
	struct tcfs_node tc = dir(&root, "torch_compile_cache");
	struct tcfs_node h = dir(&tc, "5d1b0f3c7a"), r = dir(&h, "rank_0_1");
	struct tcfs_node pre = dir(&r, "backbone");
	struct tcfs_node ta = dir(&tc, "torch_aot_compile");
	struct tcfs_node th = dir(&ta, "5d1b0f3c7a");

	tap_eq(tcfs_entry_kind(s, &key, "__grp__k.json"), TCFS_PROBE_KERNEL,
	       "a group file in a key dir");
	tap_eq(tcfs_entry_kind(s, &other, "__grp__k.json"), 0,
	       "not in another dir");
	tap_eq(tcfs_entry_kind(s, &key, "k.so"), TCFS_PROBE_MODULE,
	       "a module in a key dir");
	tap_eq(tcfs_entry_kind(s, &xx, FKEY), TCFS_PROBE_FXGRAPH,
	       "an FX graph in fxgraph/XX");
	tap_eq(tcfs_entry_kind(s, &other, FKEY), 0, "not in another XX");
	tap_eq(tcfs_entry_kind(s, &own, FKEY), TCFS_PROBE_FXGRAPH,
	       "in a user's own dir there too");
	tap_eq(tcfs_entry_kind(s, &aot, AKEY), TCFS_PROBE_AOT,
	       "an AOT entry in aotautograd");
	tap_eq(tcfs_entry_kind(s, &fx, AKEY), 0, "not elsewhere");
	tap_eq(tcfs_entry_kind(s, &other, CKEY ".py"), TCFS_PROBE_PYCODE,
	       "a .py in its XX");
	tap_eq(tcfs_entry_kind(s, &other, "x.best_config"),
	       TCFS_PROBE_BEST_CONFIG, "a best_config in a dir of two");
	tap_eq(tcfs_entry_kind(s, &root, "x.best_config"), 0,
	       "not at the root");
	tap_eq(tcfs_entry_kind(s, &pre, "artifact_compile_range_1"),
	       TCFS_PROBE_VLLM, "a vLLM artifact below a rank dir");
	tap_eq(tcfs_entry_kind(s, &h, "artifact_compile_range_1"), 0,
	       "not beside the rank dirs");
	tap_ok(tcfs_entry_place(s, &xx) && tcfs_entry_place(s, &r) &&
		       tcfs_entry_place(s, &pre) && tcfs_entry_place(s, &own),
	       "places: XX, a rank dir, its prefix, a user's own dir there");
	tap_ok(!tcfs_entry_place(s, &h) && !tcfs_entry_place(s, &tc),
	       "not the dirs above");

	tap_eq(tcfs_entry_above(s, &root, "fxgraph"), TCFS_PROBE_FXGRAPH,
	       "above: fxgraph at the root");
	tap_eq(tcfs_entry_above(s, &tc, "fxgraph"), TCFS_PROBE_FXGRAPH,
	       "and at a nested root");
	tap_eq(tcfs_entry_above(s, &key, "fxgraph"), 0,
	       "not in a Triton key dir");
	tap_eq(tcfs_entry_above(s, &fx, "ab"), TCFS_PROBE_FXGRAPH,
	       "XX in fxgraph");
	tap_eq(tcfs_entry_above(s, &fx, "a1"), 0, "not a non-base32 XX");
	tap_eq(tcfs_entry_above(s, &fx, "abc"), 0, "not three characters");
	tap_eq(tcfs_entry_above(s, &root, "aotautograd"), TCFS_PROBE_AOT,
	       "aotautograd");
	tap_eq(tcfs_entry_above(s, &root, "torch_compile_cache"),
	       TCFS_PROBE_VLLM, "torch_compile_cache");
	tap_eq(tcfs_entry_above(s, &tc, "0123abcd"), TCFS_PROBE_VLLM,
	       "a HASH in it");
	tap_eq(tcfs_entry_above(s, &tc, "0123ABCD"), 0, "not uppercase hex");
	tap_eq(tcfs_entry_above(s, &tc, "0123abc"), 0, "not 7 digits");
	tap_eq(tcfs_entry_above(s, &tc, "torch_aot_compile"), TCFS_PROBE_VLLM,
	       "torch_aot_compile");
	tap_eq(tcfs_entry_above(s, &ta, "0123abcd"), TCFS_PROBE_VLLM,
	       "a HASH in that");
	tap_eq(tcfs_entry_above(s, &root, "random"), 0, "not another name");

	tap_ok(tcfs_entry_rank_dir(s, &h, "rank_0_1"), "a rank dir in HASH");
	tap_ok(tcfs_entry_rank_dir(s, &th, "rank_2_0"),
	       "and in torch_aot_compile/HASH");
	tap_ok(!tcfs_entry_rank_dir(s, &h, "rank_0"), "not rank_0");
	tap_ok(!tcfs_entry_rank_dir(s, &tc, "rank_0_1"),
	       "not directly in torch_compile_cache");
	tap_ok(!tcfs_entry_rank_dir(s, &other, "rank_0_1"), "nor elsewhere");
}

int main(void)
{
	char *d = tap_tmpdir();
	struct tcfs_store_opts o = { d, 1, 1, 1.0, .recover = tcfs_recover };

	if (tcfs_store_open(&o, &s) < 0) {
		printf("Bail out! cannot open a store in %s\n", d);
		return 1;
	}
	table();
	named();
	kinds();
	tcfs_store_close(s);
	tap_rmtree(d);
	return tap_done();
}
