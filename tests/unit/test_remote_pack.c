/* remote_pack: a dir's files as one value and back; hostile packs
 * refused whole. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/remote/pack.h"
#include "tap.h"

static void round_trip(void)
{
	struct tcfs_pack_file in[] = {
		{ "vllm_compile_cache.py", "{(1, 0): 'h'}", 13 },
		{ "backbone/artifact_compile_range_1_8192_subgraph_0",
		  "\x00\x01\x02", 3 },
		{ "empty", "", 0 },
	};
	struct tcfs_pack_file *out = NULL;
	char *pack = NULL, *paths = NULL;
	size_t len = 0, n = 0;

	tap_eq(tcfs_pack_render(in, 3, &pack, &len), 0, "a pack rendered");
	tap_ok(len > 16 && memcmp(pack, "tcfs-pack-v1\n3\n", 15) == 0,
	       "its head");
	tap_eq(tcfs_pack_parse(pack, len, &out, &paths, &n), 0, "parsed back");
	tap_eq(n, 3, "three files");
	tap_ok(n == 3 && strcmp(out[0].path, "backbone/artifact_compile_range_"
				"1_8192_subgraph_0") == 0 &&
		       out[0].len == 3 && memcmp(out[0].bytes, "\0\1\2", 3) == 0,
	       "sorted by path, bytes and all");
	tap_ok(n == 3 && strcmp(out[1].path, "empty") == 0 && out[1].len == 0,
	       "an empty file");
	free(out);
	free(paths);
	free(pack);
}

static void bad_paths(void)
{
	static const char *const bad[] = {
		"", "/abs", "a//b", "a/", "..", "a/../b", ".", "a/b/c",
		"tmp.pid_1_2", ".tcfs-private-1000/x", "x/f.json.tmp.pid_3_4",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		tap_eq(tcfs_pack_path_check(bad[i]), -EINVAL, "'%s' refused",
		       bad[i]);
	tap_eq(tcfs_pack_path_check("backbone/model"), 0, "two levels taken");
}

static void hostile(void)
{
	static const struct {
		const char *pack;
		const char *what;
	} bad[] = {
		{ "tcfs-pack-v2\n0\n", "another version" },
		{ "tcfs-pack-v1\n1\n1:a 5\nabcd", "a file past the end" },
		{ "tcfs-pack-v1\n1\n1:a 3\nabcd", "bytes left over" },
		{ "tcfs-pack-v1\n2\n1:b 1\n1:a 1\nxy", "paths not in order" },
		{ "tcfs-pack-v1\n2\n1:a 1\n1:a 1\nxy", "a path twice" },
		{ "tcfs-pack-v1\n1\n2:.. 1\nx", "a path '..'" },
		{ "tcfs-pack-v1\n1\n5:a/b/c 1\nx", "too deep" },
		{ "tcfs-pack-v1\n1\n9:a 1\nx", "a path length past the line" },
		{ "tcfs-pack-v1\n99999\n", "too many files" },
		{ "tcfs-pack-v1\n01\n1:a 1\nx", "a number with a leading 0" },
		{ "tcfs-pack-v1\n1\n1:a 99999999999999999999999\nx",
		  "a size that overflows" },
		{ "tcfs-pack-v1\n1\n", "a line missing" },
	};
	struct tcfs_pack_file *out;
	char *paths;
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		tap_eq(tcfs_pack_parse(bad[i].pack, strlen(bad[i].pack), &out,
				       &paths, &n), -EBADMSG,
		       "refused: %s", bad[i].what);
		tap_ok(!out && !paths && n == 0, "and nothing handed back");
	}
}

static void keys(void)
{
	char buf[128];

	tap_eq(tcfs_pack_key("vllm", "torch_compile_cache/5d1b", "rank_0_1",
			     buf, sizeof(buf)), 0, "a pack's key");
	tap_ok(strcmp(buf, "tcfs:vllm:torch_compile_cache/5d1b/rank_0_1") == 0,
	       "is %s", buf);
	tap_eq(tcfs_pack_sidecar_key("vllm", "torch_aot_compile/5d1b",
				     "rank_0_0", buf, sizeof(buf)), 0,
	       "a pack sidecar's key");
	tap_ok(strcmp(buf, "tcfs:vllm:torch_aot_compile/5d1b/rank_0_0:tcfs") ==
		       0, "is %s", buf);
	tap_eq(tcfs_pack_key("vllm", "../x", "rank_0_0", buf, sizeof(buf)),
	       -EINVAL, "a key with '..' refused");
	tap_eq(tcfs_pack_key("vllm", "a/b", "x/y", buf, sizeof(buf)), -EINVAL,
	       "a name with '/' refused");
}

int main(void)
{
	round_trip();
	bad_paths();
	hostile();
	keys();
	return tap_done();
}
