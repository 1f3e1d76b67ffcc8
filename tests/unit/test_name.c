/* name: key dirs of every Triton version, temp names, artifacts. */
#include <errno.h>

#include "index/base/name.h"
#include "tap.h"

int main(void)
{
	char big[300], k[TCFS_NAME_MAX + 1];

	tap_ok(tcfs_name_is_key("XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"),
	       "3.3+ base32 key (52 chars)");
	tap_ok(tcfs_name_is_key("4972a1b0c3d4e5f60718293a4b5c6d7e8f9001122334455667788990aabbccdd"),
	       "3.0/3.1 hex key (64 chars)");
	tap_ok(tcfs_name_is_key("-Rl0x8dWmWqYkq3sUj0yHc6Yk0mZb9xv9c1cH2m2Zq4"),
	       "3.2 base64url key that begins with '-' (43 chars)");
	tap_ok(!tcfs_name_is_key("xu5dt2ao5bd5aeheyglpp5lrdfhhcuejt4lgdvlb4stxugvghfpa"),
	       "lower-case base32 is not a key");
	tap_ok(!tcfs_name_is_key("4972A1B0C3D4E5F60718293A4B5C6D7E8F9001122334455667788990AABBCCDD"),
	       "upper-case hex is not a key");
	tap_ok(!tcfs_name_is_key("tmp.2d1f"), "a temp dir is not a key");
	tap_ok(!tcfs_name_is_key(""), "empty is not a key");

	tap_ok(tcfs_name_is_temp("tmp.pid_757_11d8a00a-762a-4b14", 0),
	       "3.2+ temp dir in a key dir");
	tap_ok(tcfs_name_is_temp("add_kernel.cubin.tmp.pid_12_0a1b", 0),
	       "3.0/3.1 in-place temp file");
	tap_ok(tcfs_name_is_temp("tmp.6a1f0c2e", 1), "Inductor's temp dir at the top");
	tap_ok(!tcfs_name_is_temp("tmp.6a1f0c2e", 0),
	       "'tmp.' alone is not a temp name inside a key dir");
	tap_ok(!tcfs_name_is_temp("add_kernel.cubin", 0), "an artifact is not a temp");

	tap_ok(tcfs_name_group_kernel("__grp__add_kernel.json", k, sizeof(k)) &&
		       strcmp(k, "add_kernel") == 0,
	       "group file names its kernel");
	tap_ok(!tcfs_name_group_kernel("__grp__.json", k, sizeof(k)),
	       "a group file needs a kernel name");
	tap_ok(!tcfs_name_group_kernel("add_kernel.json", k, sizeof(k)),
	       "metadata is not a group file");

	tap_eq(tcfs_name_artifact("__grp__k.json"), TCFS_ART_GROUP, "group");
	tap_eq(tcfs_name_artifact("k.json"), TCFS_ART_META, "metadata");
	tap_eq(tcfs_name_artifact("k.source"), TCFS_ART_SOURCE, "source");
	tap_eq(tcfs_name_artifact("k.ptx"), TCFS_ART_IR, "ptx is IR");
	tap_eq(tcfs_name_artifact("k.amdgcn"), TCFS_ART_IR, "amdgcn is IR");
	tap_eq(tcfs_name_artifact("k.ttgir"), TCFS_ART_IR, "ttgir is IR");
	tap_eq(tcfs_name_artifact("k.cubin"), TCFS_ART_BINARY, "cubin is binary");
	tap_eq(tcfs_name_artifact("k.hsaco"), TCFS_ART_BINARY, "hsaco is binary");
	tap_eq(tcfs_name_artifact("cuda_utils.cpython-312-x86_64-linux-gnu.so"),
	       TCFS_ART_MODULE, "extension module");
	tap_eq(tcfs_name_artifact("matmul.autotune.json"), TCFS_ART_AUTOTUNE,
	       "autotune file");

	{
		const char *v[] = { "__grp__k.json", "k.json", "b.cubin",
				    "__grp__a.json", "a.ttir" };

		qsort(v, 5, sizeof(*v), tcfs_name_cmp_commit_order);
		tap_ok(!strcmp(v[0], "a.ttir") && !strcmp(v[1], "b.cubin") &&
			       !strcmp(v[2], "k.json") &&
			       !strcmp(v[3], "__grp__a.json") &&
			       !strcmp(v[4], "__grp__k.json"),
		       "commit order: group files last, each part by name");
	}

	memset(big, 'a', sizeof(big));
	big[255] = '\0';
	tap_eq(tcfs_name_check(big), 0, "a 255-byte name is fine");
	big[255] = 'a';
	big[256] = '\0';
	tap_eq(tcfs_name_check(big), -ENAMETOOLONG,
	       "a 256-byte name is ENAMETOOLONG");
	tap_eq(tcfs_name_check(""), -EINVAL, "empty name is EINVAL");
	tap_eq(tcfs_name_check(".."), -EINVAL, "'..' is EINVAL");
	tap_eq(tcfs_name_check("a/b"), -EINVAL, "a slash is EINVAL");
	return tap_done();
}
