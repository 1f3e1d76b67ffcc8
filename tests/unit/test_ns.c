/* ns: the namespace answers as ext4 does, keeps inode numbers unique, and
 * keeps the kernels table in step with the tree. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "index/base/err.h"
#include "index/blob/cas.h"
#include "index/model/kernel.h"
#include "index/tree/ns.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

#define KEY "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"
#define KEY3 "CU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"
#define KEY2 "BU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"
#define KEY4 "MU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"

static struct tcfs_store *s;

static struct tcfs_content content(const char *bytes)
{
	struct tcfs_content c = { .size = strlen(bytes), .fmt = TCFS_FMT_RAW };

	tcfs_cas_put_buf(tcfs_store_cas(s), bytes, c.size, &c.blob, NULL);
	return c;
}

static uint64_t mkfile(uint64_t dir, const char *name, const char *bytes)
{
	struct tcfs_content c = content(bytes);
	struct tcfs_node n = { 0 };

	tcfs_ns_create(s, dir, name, 0644, tcfs_ns_now(), &c, NULL, &n);
	return n.ino;
}

static uint64_t mkdir_(uint64_t dir, const char *name)
{
	struct tcfs_node n = { 0 };

	tcfs_ns_mkdir(s, dir, name, 0755, tcfs_ns_now(), NULL, &n);
	return n.ino;
}

static uint64_t ino_of(uint64_t dir, const char *name)
{
	struct tcfs_node n;

	return tcfs_ns_lookup(s, dir, name, &n) == 0 ? n.ino : 0;
}

static void test_basics(void)
{
	struct tcfs_content c = content("x");
	struct tcfs_node n;
	char big[300];
	uint64_t d, f;

	d = mkdir_(TCFS_ROOT_INO, "d");
	tap_ok(d > TCFS_ROOT_INO, "mkdir");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "d", 0755, 0, NULL, NULL), -EEXIST,
	       "mkdir of an existing dir: EEXIST");
	f = mkfile(d, "f", "hello");
	tap_eq(tcfs_ns_create(s, d, "f", 0644, 0, &c, NULL, NULL), -EEXIST,
	       "create of an existing name: EEXIST");
	tap_eq(tcfs_ns_mkdir(s, f, "sub", 0755, 0, NULL, NULL), -ENOTDIR,
	       "mkdir under a file: ENOTDIR");
	tap_eq(tcfs_ns_mkdir(s, 999999, "sub", 0755, 0, NULL, NULL), -ENOENT,
	       "mkdir under a missing dir: ENOENT");
	tap_ok(tcfs_ns_lookup(s, d, "f", &n) == 0 && n.ino == f &&
		       n.kind == TCFS_FILE && n.size == 5 && n.mode == 0644,
	       "lookup finds the file with its size and mode");
	tap_eq(tcfs_ns_lookup(s, d, "nope", &n), -ENOENT, "lookup miss: ENOENT");

	memset(big, 'n', sizeof(big));
	big[256] = '\0';
	tap_eq(tcfs_ns_create(s, d, big, 0644, 0, &c, NULL, NULL), -ENAMETOOLONG,
	       "create with a 256-byte name: ENAMETOOLONG");
	tap_eq(tcfs_ns_mkdir(s, d, big, 0755, 0, NULL, NULL), -ENAMETOOLONG,
	       "mkdir with a 256-byte name: ENAMETOOLONG");
	tap_eq(tcfs_ns_lookup(s, d, big, &n), -ENAMETOOLONG,
	       "lookup of a 256-byte name: ENAMETOOLONG");
	tap_eq(tcfs_ns_rename(s, d, "f", d, big, 0), -ENAMETOOLONG,
	       "rename to a 256-byte name: ENAMETOOLONG");
	big[255] = '\0';
	tap_eq(tcfs_ns_create(s, d, big, 0644, 0, &c, NULL, &n), 0,
	       "a 255-byte name is fine");
	tap_ok(strlen(n.name) == 255, "and comes back whole");

	tap_eq(tcfs_ns_unlink(s, TCFS_ROOT_INO, "d"), -EISDIR,
	       "unlink of a dir: EISDIR");
	tap_eq(tcfs_ns_rmdir(s, d, "f"), -ENOTDIR, "rmdir of a file: ENOTDIR");
	tap_eq(tcfs_ns_rmdir(s, TCFS_ROOT_INO, "d"), -ENOTEMPTY,
	       "rmdir of a non-empty dir: ENOTEMPTY");
	tap_eq(tcfs_ns_unlink(s, d, "nope"), -ENOENT, "unlink a missing name");
	tap_eq(tcfs_ns_unlink(s, d, "f"), 0, "unlink a file");
	tap_eq(tcfs_ns_unlink(s, d, big), 0, "unlink the long name");
	tap_eq(tcfs_ns_rmdir(s, TCFS_ROOT_INO, "d"), 0, "rmdir the empty dir");
	tap_eq(tcfs_ns_get(s, f, &n), -ENOENT, "the file's inode is gone");
	f = mkfile(TCFS_ROOT_INO, "d", "again");
	tap_ok(f > d, "inode numbers are never reused");
	tcfs_ns_unlink(s, TCFS_ROOT_INO, "d");
}

/* Triton's put: temp dir, file, rename over, rmdir temp, rmdir key fails. */
static void test_triton_put(void)
{
	uint64_t key = mkdir_(TCFS_ROOT_INO, KEY), tmp, a, b;
	struct tcfs_node n;

	tmp = mkdir_(key, "tmp.pid_1_x");
	a = mkfile(tmp, "k.cubin", "v1");
	tap_eq(tcfs_ns_rename(s, tmp, "k.cubin", key, "k.cubin", 0), 0,
	       "rename a file out of the temp dir");
	tap_ok(ino_of(key, "k.cubin") == a, "a rename keeps the inode number");
	tap_eq(tcfs_ns_rmdir(s, key, "tmp.pid_1_x"), 0,
	       "rmdir of the emptied temp dir succeeds");
	tap_eq(tcfs_ns_rmdir(s, TCFS_ROOT_INO, KEY), -ENOTEMPTY,
	       "rmdir of the key dir fails with ENOTEMPTY (os.removedirs)");
	tmp = mkdir_(key, "tmp.pid_2_y");
	b = mkfile(tmp, "k.cubin", "v2");
	tap_eq(tcfs_ns_rename(s, tmp, "k.cubin", key, "k.cubin", 0), 0,
	       "a second writer's rename replaces the file atomically");
	tap_ok(tcfs_ns_lookup(s, key, "k.cubin", &n) == 0 && n.ino == b &&
		       n.ino != a && n.size == 2,
	       "the replaced file has the new inode number and content");
	tap_eq(tcfs_ns_get(s, a, &n), -ENOENT, "the old one is gone");
	tcfs_ns_rmdir(s, key, "tmp.pid_2_y");
}

static void test_rename_rules(void)
{
	uint64_t r = mkdir_(TCFS_ROOT_INO, "r"), a, b, c, x;
	struct tcfs_node n;

	a = mkdir_(r, "a");
	b = mkdir_(r, "b");
	mkfile(b, "inner", "1");
	c = mkdir_(r, "c");
	x = mkfile(r, "x", "2");
	tap_eq(tcfs_ns_rename(s, r, "a", r, "b", 0), -ENOTEMPTY,
	       "dir onto a non-empty dir: ENOTEMPTY");
	tap_eq(tcfs_ns_rename(s, r, "a", r, "x", 0), -ENOTDIR,
	       "dir onto a file: ENOTDIR");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "a", 0), -EISDIR,
	       "file onto a dir: EISDIR");
	tap_eq(tcfs_ns_rename(s, r, "a", a, "self", 0), -EINVAL,
	       "dir into itself: EINVAL");
	tap_eq(tcfs_ns_rename(s, TCFS_ROOT_INO, "r", b, "deeper", 0), -EINVAL,
	       "dir into its own subtree: EINVAL");
	tap_eq(tcfs_ns_rename(s, r, "missing", r, "y", 0), -ENOENT,
	       "rename of a missing name: ENOENT");
	tap_eq(tcfs_ns_rename(s, r, "x", 424242, "y", 0), -ENOENT,
	       "rename into a missing dir: ENOENT");
	tap_eq(tcfs_ns_rename(s, r, "a", r, "c", 0), 0,
	       "dir onto an empty dir replaces it (Inductor's os.replace)");
	tap_ok(ino_of(r, "c") == a && tcfs_ns_get(s, c, &n) == -ENOENT,
	       "the empty dir is gone, the moved one keeps its inode");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "x", 0), 0,
	       "rename onto itself is a no-op");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "c", RENAME_NOREPLACE), -EEXIST,
	       "RENAME_NOREPLACE onto an existing name: EEXIST");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "b", RENAME_EXCHANGE), 0,
	       "RENAME_EXCHANGE swaps a file and a dir");
	tap_ok(ino_of(r, "b") == x && ino_of(r, "x") == b,
	       "both names now point at the other inode");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "nope", RENAME_EXCHANGE), -ENOENT,
	       "RENAME_EXCHANGE with a missing target: ENOENT");
	tap_eq(tcfs_ns_rename(s, r, "x", r, "c",
			      RENAME_EXCHANGE | RENAME_NOREPLACE),
	       -EINVAL, "both flags at once: EINVAL");
}

static void test_list(void)
{
	uint64_t d = mkdir_(TCFS_ROOT_INO, "list"), last = 0;
	struct tcfs_node *v;
	size_t n, total = 0;
	char name[16];

	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "e%02d", i);
		mkfile(d, name, name);
	}
	tap_eq(tcfs_ns_list(s, d, 0, 0, &v, &n), 0, "list a dir");
	tap_eq(n, 25, "all 25 entries");
	free(v);
	/* Resuming from the last inode seen, with an entry removed and one
	 * added meanwhile, sees each remaining entry once. */
	tap_eq(tcfs_ns_list(s, d, 0, 10, &v, &n), 0, "first page of 10");
	total += n;
	last = v[n - 1].ino;
	free(v);
	tcfs_ns_unlink(s, d, "e03");
	mkfile(d, "late", "late");
	while (tcfs_ns_list(s, d, last, 10, &v, &n) == 0 && n > 0) {
		total += n;
		last = v[n - 1].ino;
		free(v);
	}
	free(v);
	tap_eq(total, 26, "paging sees 10 + 15 remaining + 1 added");
}

/* A NAME.json whose parse was told (tcfs_kernel_meta_known) is not read
 * again: the row has what was told, which a read would not give. */
static void test_meta_known(void)
{
	const char *json = "{\"num_warps\": 4}";
	struct tcfs_content c = content(json);
	struct tcfs_kernel told, *k;
	struct tcfs_kernel_filter only = { .name = "m" };
	uint64_t key = mkdir_(TCFS_ROOT_INO, KEY4);
	size_t n;

	memset(&told, 0, sizeof(told));
	tcfs_kernel_parse_meta(json, strlen(json), &told);
	told.num_warps = 7;
	strcpy(told.backend, "told");
	tcfs_kernel_meta_known(&c.blob, &told);
	mkfile(key, "m.json", json);
	mkfile(key, "__grp__m.json", "{}");
	tcfs_kernel_list(s, &only, &k, &n);
	tap_ok(n == 1 && k[0].num_warps == 7 && !strcmp(k[0].backend, "told"),
	       "a NAME.json's told parse is used, not read again");
	free(k);
	tcfs_ns_unlink(s, key, "__grp__m.json");
	mkfile(key, "m.json.tmp", "{\"num_warps\": 2}");
	tcfs_ns_rename(s, key, "m.json.tmp", key, "m.json", 0);
	mkfile(key, "__grp__m.json", "{}");
	tcfs_kernel_list(s, &only, &k, &n);
	tap_ok(n == 1 && k[0].num_warps == 2 && !k[0].backend[0],
	       "other bytes under the same name are read, as they are");
	free(k);
	tcfs_ns_unlink(s, key, "__grp__m.json");
}

static void test_kernels(void)
{
	uint64_t key = mkdir_(TCFS_ROOT_INO, KEY2), tmp;
	struct tcfs_kernel *k;
	size_t n;

	mkfile(key, "add_kernel.json",
	       "{\"target\": {\"backend\": \"cuda\", \"arch\": 90, "
	       "\"warp_size\": 32}, \"num_warps\": 4}");
	mkfile(key, "add_kernel.cubin", "0123456789");
	mkfile(key, "add_kernel.ptx", "0123");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 0, "no kernel before its group file lands");
	free(k);
	tmp = mkdir_(key, "tmp.pid_3_z");
	mkfile(tmp, "__grp__add_kernel.json", "{}");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 0, "nor while the group file sits in a temp dir");
	free(k);
	tcfs_ns_rename(s, tmp, "__grp__add_kernel.json", key,
		       "__grp__add_kernel.json", 0);
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 1, "the kernel's row appears when its group lands");
	if (n == 1) {
		tap_ok(!strcmp(k[0].name, "add_kernel") &&
			       !strcmp(k[0].backend, "cuda") &&
			       !strcmp(k[0].arch, "90") && k[0].num_warps == 4,
		       "parsed from add_kernel.json");
		tap_eq(k[0].binary_bytes, 10, "binary bytes: the cubin");
		tap_eq(k[0].ir_bytes, 4, "IR bytes: the ptx");
		tap_ok(!strcmp(k[0].key, KEY2), "keyed by its dir");
	}
	free(k);
	tcfs_ns_unlink(s, key, "__grp__add_kernel.json");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 0, "and goes with it");
	free(k);

	/* Inductor: a whole kernel written in tmp.<uuid>, then os.replace. */
	tmp = mkdir_(TCFS_ROOT_INO, "tmp.6f1c2a");
	mkfile(tmp, "k.json", "{\"num_warps\": 2}");
	mkfile(tmp, "__grp__k.json", "{}");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 0, "no kernel while Inductor's tmp dir is being filled");
	free(k);
	mkdir_(TCFS_ROOT_INO, KEY3);
	tap_eq(tcfs_ns_rename(s, TCFS_ROOT_INO, "tmp.6f1c2a", TCFS_ROOT_INO,
			      KEY3, 0),
	       0, "os.replace(tmp dir, empty key dir)");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_ok(n == 1 && !strcmp(k[0].key, KEY3) && k[0].num_warps == 2,
	       "the kernel appears under its key");
	free(k);
}

#define A46 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define Z58 "0000000000000000000000000000000000000000000000000000000000"

/* A key dir holding a kernel named k. */
static void mkkernel(uint64_t parent, const char *key)
{
	mkfile(mkdir_(parent, key), "__grp__k.json", "{}");
}

static int resolve(const char *key, const char *fx, const char *want)
{
	char out[TCFS_NAME_MAX + 1] = "";
	int rc = tcfs_kernel_resolve(s, key, fx, out, sizeof(out));

	return want ? rc == 0 && strcmp(out, want) == 0 : rc;
}

/* A key typed short, made whole as git makes a hash (tcfs why LFF4I7). */
static void test_resolve(void)
{
	uint64_t fx = mkdir_(mkdir_(TCFS_ROOT_INO, "fxgraph"), "q2");
	char small[8];

	mkkernel(TCFS_ROOT_INO, "LFF4I7" A46);
	mkkernel(TCFS_ROOT_INO, "LFF4J2" A46);
	mkkernel(TCFS_ROOT_INO, "abcdef" Z58);
	mkdir_(TCFS_ROOT_INO, "LFF4ZZ" A46);	/* no kernel */
	mkdir_(fx, "fq2xyz");
	tap_ok(resolve("LFF4I7" A46, NULL, "LFF4I7" A46), "a whole key");
	tap_ok(resolve("LFF4I7", NULL, "LFF4I7" A46), "a prefix of one key");
	tap_ok(resolve("lff4i7", NULL, "LFF4I7" A46),
	       "... in lower case: base32 keys are upper");
	tap_ok(resolve("ABCDEF", NULL, "abcdef" Z58),
	       "... in upper case: hex keys are lower");
	tap_eq(resolve("LFF4", NULL, NULL), -ENOTUNIQ, "a prefix of two keys");
	tap_ok(strstr(tcfs_err_msg(), "LFF4I7" A46 ", LFF4J2" A46) != NULL,
	       "... the error names both");
	tcfs_err_clear();
	tap_eq(resolve("LFF4Z", NULL, NULL), -ENOENT,
	       "a key dir with no kernel is none");
	tap_eq(resolve("", NULL, NULL), -ENOENT, "nothing typed: none");
	tap_eq(resolve("fq2", NULL, NULL), -ENOENT, "an FX graph: not a kernel");
	tap_ok(resolve("fq2", "fxgraph", "fq2xyz"),
	       "... but a key where FX graphs are asked for");
	tap_eq(tcfs_kernel_resolve(s, "LFF4I7", NULL, small, sizeof(small)),
	       -ENAMETOOLONG, "a key longer than the room for it");
}

/* Key dirs at any depth (Inductor's triton/0/KEY, vLLM's per-rank
 * caches), by one rule: a key's name, in a dir not named like a key. */
static void test_nested(void)
{
	uint64_t tri = mkdir_(TCFS_ROOT_INO, "triton"), dev = mkdir_(tri, "0");
	uint64_t a = mkdir_(dev, KEY), r1 = mkdir_(TCFS_ROOT_INO, "rank_0_1");
	uint64_t b = mkdir_(r1, KEY), inner = mkdir_(a, KEY2);
	uint64_t fx = mkdir_(dev, "fabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs");
	struct tcfs_kernel_at *at = NULL;
	struct tcfs_kernel *k = NULL;
	char root[256];
	size_t n = 0;
	int yes = -1;

	tap_eq(tcfs_kernel_is_key_dir(s, a, &yes), 0, "rule: nested dir read");
	tap_eq(yes, 1, "a key-named dir in triton/0 is a key dir");
	tcfs_kernel_is_key_dir(s, dev, &yes);
	tap_eq(yes, 0, "its cache root is not");
	tcfs_kernel_is_key_dir(s, inner, &yes);
	tap_eq(yes, 0, "a key-named dir inside a key dir is not");
	tcfs_kernel_is_key_dir(s, fx, &yes);
	tap_eq(yes, 0, "an FX graph entry (lowercase base32) is not");
	tcfs_kernel_key_dir_at(s, TCFS_ROOT_INO, "triton", &yes);
	tap_eq(yes, 0, "a dir at the top not named like a key is not");
	tcfs_kernel_key_dir_at(s, TCFS_ROOT_INO, KEY3, &yes);
	tap_eq(yes, 1, "a key-named dir at the top is");
	tap_eq(tcfs_kernel_key_dir_at(s, 999999, KEY3, &yes), -ENOENT,
	       "rule: a parent that is gone is an error");
	tap_eq(tcfs_kernel_is_key_dir(s, 999999, &yes), -ENOENT,
	       "rule: a dir that is gone is an error");
	tap_eq(yes, 0, "and no key dir");

	mkfile(a, "k.json", "{\"num_warps\": 8}");
	mkfile(a, "__grp__k.json", "{}");
	mkfile(b, "k.json", "{\"num_warps\": 8}");
	mkfile(b, "__grp__k.json", "{}");
	mkfile(inner, "__grp__k.json", "{}");
	tcfs_kernel_list(s, NULL, &k, &n);
	tap_eq(n, 3, "nested key dirs are indexed; one inside a key dir not");
	for (size_t i = 0; i < n; i++) {
		char at_root[256];
		struct tcfs_node d;

		tcfs_kernel_root(s, k[i].dir_ino, root, sizeof(root));
		tcfs_ns_get(s, k[i].dir_ino, &d);
		tap_eq(k[i].root_ino, d.parent, "a kernel's root_ino: %s's parent",
		       k[i].key);
		tap_eq(tcfs_kernel_root_at(s, k[i].root_ino, at_root,
					   sizeof(at_root)), 0, "root_at");
		tap_ok(!strcmp(root, at_root), "root_at says what root does (%s)",
		       root);
	}
	free(k);
	tap_eq(tcfs_kernel_root(s, a, root, sizeof(root)), 0, "root of a");
	tap_ok(!strcmp(root, "triton/0"), "a's cache root is triton/0");
	tcfs_kernel_root(s, ino_of(TCFS_ROOT_INO, KEY3), root, sizeof(root));
	tap_ok(!strcmp(root, ""), "a key dir at the top has root \"\"");
	tap_eq(tcfs_kernel_root(s, 999999, root, sizeof(root)), -ENOENT,
	       "root of a dir that is gone");

	tap_eq(tcfs_kernel_keys(s, "k", NULL, NULL, NULL, 0, 10, &at, &n), 0,
	       "keys of k");
	tap_ok(n == 3 && !strcmp(at[0].entry, KEY3) &&
		       !strcmp(at[1].entry, KEY) && at[1].dir_ino == a &&
		       !strcmp(at[2].entry, KEY "@2") && at[2].dir_ino == b,
	       "the same key twice: KEY (first by inode), then KEY@2");
	free(at);
	tcfs_kernel_keys(s, "k", NULL, NULL, KEY "@2", 0, 1, &at, &n);
	tap_ok(n == 1 && at[0].dir_ino == b, "KEY@2 resolves to the second");
	free(at);
	tcfs_kernel_keys(s, "k", NULL, NULL, KEY, 0, 1, &at, &n);
	tap_ok(n == 1 && at[0].dir_ino == a, "KEY resolves to the first");
	free(at);
	static const char *const bad[] = { KEY "@1", KEY "@3", KEY "@02",
					   KEY "@", KEY "@2x", KEY "@-2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		tcfs_kernel_keys(s, "k", NULL, NULL, bad[i], 0, 1, &at, &n);
		tap_eq(n, 0, "no entry named %s", bad[i] + 52);
		free(at);
	}
	tap_eq(tcfs_ns_rename(s, r1, KEY, fx, KEY, 0), 0,
	       "a key dir moved into another key dir's root");
	tcfs_kernel_keys(s, "k", NULL, NULL, NULL, 0, 10, &at, &n);
	tap_eq(n, 3, "is still a kernel there");
	free(at);
}

struct worker {
	int id;
	int errors;
};

/* Eight threads create, rename over and remove in one dir at once. */
static void *churn(void *arg)
{
	struct worker *w = arg;
	uint64_t dir = ino_of(TCFS_ROOT_INO, "churn");
	char tmp[32], name[32];

	for (int i = 0; i < 40; i++) {
		struct tcfs_content c = content("shared bytes");

		snprintf(tmp, sizeof(tmp), "t%d.%d", w->id, i);
		snprintf(name, sizeof(name), "f%d", i % 5);
		if (tcfs_ns_create(s, dir, tmp, 0644, 0, &c, NULL, NULL) < 0)
			w->errors++;
		if (tcfs_ns_rename(s, dir, tmp, dir, name, 0) < 0)
			w->errors++;
	}
	return NULL;
}

static void test_threads(void)
{
	struct worker w[8];
	pthread_t t[8];
	struct tcfs_node *v;
	size_t n;
	int errors = 0;

	mkdir_(TCFS_ROOT_INO, "churn");
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ i, 0 };
		pthread_create(&t[i], NULL, churn, &w[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		errors += w[i].errors;
	}
	tap_eq(errors, 0, "8 threads x 40 create+rename-over: no errors");
	tcfs_ns_list(s, ino_of(TCFS_ROOT_INO, "churn"), 0, 0, &v, &n);
	tap_eq(n, 5, "and exactly the 5 final names remain");
	free(v);
}

static void test_symlinks(void)
{
	char buf[TCFS_SYMLINK_MAX + 1], big[TCFS_SYMLINK_MAX + 2];
	uint64_t d = mkdir_(TCFS_ROOT_INO, "sl");
	struct tcfs_node n;

	tap_eq(tcfs_ns_symlink(s, d, "l", "../target", 5, NULL, &n), 0, "symlink");
	tap_ok(n.kind == TCFS_SYMLINK && n.size == 9 && n.nlink == 1 &&
		       n.mode == 0777,
	       "a symlink: its size is its target's length");
	tap_eq(tcfs_ns_readlink(s, n.ino, buf, sizeof(buf)), 0, "readlink");
	tap_ok(strcmp(buf, "../target") == 0, "gives the target");
	tap_eq(tcfs_ns_readlink(s, n.ino, buf, 4), -ENAMETOOLONG,
	       "readlink into too small a buffer: ENAMETOOLONG");
	tap_eq(tcfs_ns_readlink(s, d, buf, sizeof(buf)), -EINVAL,
	       "readlink of a dir: EINVAL");
	tap_eq(tcfs_ns_symlink(s, d, "l", "x", 5, NULL, NULL), -EEXIST,
	       "symlink over a name: EEXIST");
	tap_eq(tcfs_ns_symlink(s, d, "e", "", 5, NULL, NULL), -ENOENT,
	       "an empty target: ENOENT");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tap_eq(tcfs_ns_symlink(s, d, "b", big, 5, NULL, NULL), -ENAMETOOLONG,
	       "a 4096-byte target: ENAMETOOLONG");
	tap_eq(tcfs_ns_set_content(s, n.ino, &(struct tcfs_content){ 0 }, 5),
	       -EINVAL, "a symlink takes no content");
	tap_eq(tcfs_ns_rename(s, d, "l", d, "m", 0), 0, "rename a symlink");
	tap_eq(ino_of(d, "m"), n.ino, "it keeps its inode");
	tap_eq(tcfs_ns_rmdir(s, d, "m"), -ENOTDIR, "rmdir of it: ENOTDIR");
	tap_eq(tcfs_ns_unlink(s, d, "m"), 0, "unlink it");
	tap_eq(ino_of(d, "m"), 0, "gone");
}

static void test_hard_links(void)
{
	uint64_t d = mkdir_(TCFS_ROOT_INO, "hl"), e = mkdir_(d, "e");
	uint64_t f = mkfile(d, "a", "one");
	struct tcfs_content c = content("two!");
	struct tcfs_node n, m, *v = NULL;
	size_t nv = 0;

	tap_eq(tcfs_ns_link(s, f, e, "b", &n), 0, "link");
	tap_ok(n.ino == f && n.entry != f && n.nlink == 2 &&
		       strcmp(n.name, "b") == 0 && n.parent == e,
	       "the new name shows the file, under its own name");
	tap_ok(tcfs_ns_get(s, f, &m) == 0 && m.nlink == 2,
	       "the file counts 2 names");
	tap_eq(tcfs_ns_link(s, f, e, "b", NULL), -EEXIST,
	       "link onto a name: EEXIST");
	tap_eq(tcfs_ns_link(s, e, d, "e2", NULL), -EPERM,
	       "link of a dir: EPERM");
	tap_eq(tcfs_ns_link(s, 999999, d, "z", NULL), -ENOENT,
	       "link of a missing inode: ENOENT");
	tap_eq(tcfs_ns_set_content(s, f, &c, 7), 0, "new content");
	tap_ok(tcfs_ns_lookup(s, e, "b", &n) == 0 && n.size == 4 &&
		       tcfs_hash_equal(&n.blob, &c.blob) && n.ctime_ns == 7,
	       "seen through the other name, with its ctime");
	tcfs_ns_list(s, e, 0, 0, &v, &nv);
	tap_ok(nv == 1 && v[0].ino == f && v[0].kind == TCFS_FILE &&
		       v[0].entry != f,
	       "a listing shows the file under the link's entry");
	free(v);
	tap_eq(tcfs_ns_rename(s, d, "a", e, "b", 0), 0,
	       "rename onto another name of the same file");
	tap_ok(ino_of(d, "a") == f && ino_of(e, "b") == f,
	       "does nothing, as rename(2)");
	tap_eq(tcfs_ns_unlink(s, d, "a"), 0, "unlink the first name");
	tap_ok(tcfs_ns_lookup(s, e, "b", &n) == 0 && n.ino == f &&
		       n.entry == f && n.nlink == 1,
	       "the file lives on under the other, same inode, 1 name");
	tap_eq(tcfs_ns_link(s, f, d, "c", NULL), 0, "link again");
	tap_eq(tcfs_ns_unlink(s, d, "c"), 0, "unlink the link's name");
	tap_ok(tcfs_ns_get(s, f, &n) == 0 && n.nlink == 1 &&
		       ino_of(e, "b") == f,
	       "the file keeps its own name, 1 name");
	tap_eq(tcfs_ns_link(s, f, d, "c", NULL), 0, "link again");
	tap_eq(tcfs_ns_remove_tree(s, TCFS_ROOT_INO, "hl"), 0,
	       "remove a tree that holds both names");
	tap_eq(ino_of(TCFS_ROOT_INO, "hl"), 0, "gone");
	tap_eq(tcfs_ns_get(s, f, &n), -ENOENT, "the file too");
}

/* A node keeps the owner it was made with, or -1 (whoever mounts) when
 * none is named; a hard link shows its file's, and a chown of either
 * name changes the file's. */
static void test_owners(void)
{
	struct tcfs_owner u = { 1000, 100 };
	struct tcfs_attrs a = { .own = { 0, 7 } };
	struct tcfs_content c = content("own");
	uint64_t d = mkdir_(TCFS_ROOT_INO, "own");
	struct tcfs_node n, f, l;

	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.uid == -1 && n.gid == -1,
	       "a node made with no owner: whoever mounts");
	tap_eq(tcfs_ns_create(s, d, "f", 0644, 1, &c, &u, &f), 0, "create");
	tap_ok(f.uid == 1000 && f.gid == 100, "with its owner");
	tap_ok(tcfs_ns_mkdir(s, d, "sub", 0755, 1, &u, &n) == 0 &&
		       n.uid == 1000 && n.gid == 100,
	       "mkdir with its owner");
	tap_ok(tcfs_ns_symlink(s, d, "l", "f", 1, &u, &n) == 0 &&
		       n.uid == 1000 && n.gid == 100,
	       "symlink with its owner");
	tap_ok(tcfs_ns_link(s, f.ino, d, "h", &l) == 0 && l.uid == 1000 &&
		       l.gid == 100,
	       "a hard link shows its file's owner");
	tap_eq(tcfs_ns_setattr(s, f.ino, TCFS_SET_GID, &a), 0, "chgrp");
	tap_ok(tcfs_ns_lookup(s, d, "h", &l) == 0 && l.uid == 1000 &&
		       l.gid == 7,
	       "the group changes, the owner stays, through either name");
	tap_eq(tcfs_ns_setattr(s, f.ino, TCFS_SET_UID, &a), 0, "chown");
	tap_ok(tcfs_ns_lookup(s, d, "f", &n) == 0 && n.uid == 0 &&
		       n.gid == 7 && n.ctime_ns > f.ctime_ns,
	       "the owner changes, and so does ctime");
	tap_eq(tcfs_ns_unlink(s, d, "f"), 0, "the file's first name goes");
	tap_ok(tcfs_ns_lookup(s, d, "h", &l) == 0 && l.uid == 0 && l.gid == 7,
	       "the file keeps its owner under its other name");
}

/* All that a node says, the same in a and b. */
static int same_node(const struct tcfs_node *a, const struct tcfs_node *b)
{
	return a->ino == b->ino && a->entry == b->entry &&
	       a->parent == b->parent && strcmp(a->name, b->name) == 0 &&
	       a->kind == b->kind && a->mode == b->mode && a->uid == b->uid &&
	       a->gid == b->gid && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->atime_ns == b->atime_ns &&
	       a->ctime_ns == b->ctime_ns && a->nlink == b->nlink &&
	       tcfs_hash_equal(&a->blob, &b->blob) && a->fmt == b->fmt;
}

/* A node made is handed back as a read of its row finds it: by another
 * connection, which has no node cache, and by the writer's cache. */
static void test_written_as_read(const char *dir)
{
	struct tcfs_store_opts ro = { .dir = dir };
	struct tcfs_owner u = { 1000, 100 };
	struct tcfs_content c = content("{\"a\": 1}");
	struct tcfs_node made[3], back, cached;
	const char *what[3] = { "a dir", "a group file", "a symlink" };
	struct tcfs_store *r;
	uint64_t d = mkdir_(TCFS_ROOT_INO, "asread");

	c.fmt = TCFS_FMT_GROUP;
	tap_eq(tcfs_ns_mkdir(s, d, "sub", 02755, 11, &u, &made[0]), 0, "mkdir");
	tap_eq(tcfs_ns_create(s, d, "__grp__k.json", 0640, 12, &c, NULL,
			      &made[1]),
	       0, "create");
	tap_eq(tcfs_ns_symlink(s, d, "l", "sub", 13, &u, &made[2]), 0,
	       "symlink");
	tap_eq(tcfs_store_open(&ro, &r), 0, "a reader of the same store");
	for (int i = 0; i < 3; i++) {
		tap_ok(tcfs_ns_get(r, made[i].ino, &back) == 0 &&
			       same_node(&made[i], &back),
		       "%s made reads back the same from another connection",
		       what[i]);
		tap_ok(tcfs_ns_get(s, made[i].ino, &cached) == 0 &&
			       same_node(&cached, &back),
		       "and from the writer's node cache");
	}
	tcfs_store_close(r);
}

static void test_counts(void)
{
	uint64_t d = mkdir_(TCFS_ROOT_INO, "nl"), a, f;
	struct tcfs_node n;
	int64_t before;

	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 2, "a new dir: 2");
	a = mkdir_(d, "a");
	mkdir_(d, "b");
	f = mkfile(d, "f", "x");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 4,
	       "2 subdirs and a file: 4");
	tap_eq(tcfs_ns_rename(s, d, "b", a, "b", 0), 0, "move a subdir down");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 3 &&
		       tcfs_ns_get(s, a, &n) == 0 && n.nlink == 3,
	       "one less here, one more there");
	mkdir_(d, "c");
	tap_eq(tcfs_ns_rename(s, d, "c", a, "b", 0), 0,
	       "a dir over an empty dir");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 3 &&
		       tcfs_ns_get(s, a, &n) == 0 && n.nlink == 3,
	       "counts as one move");
	mkdir_(d, "x");
	tap_eq(tcfs_ns_rename(s, d, "x", a, "b", RENAME_EXCHANGE), 0,
	       "exchange two dirs");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 4,
	       "both still counted");
	tap_eq(tcfs_ns_rename(s, d, "f", a, "b", RENAME_EXCHANGE), 0,
	       "exchange a file and a dir");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 5 &&
		       tcfs_ns_get(s, a, &n) == 0 && n.nlink == 2,
	       "the dir counted where it went");
	tap_eq(tcfs_ns_rmdir(s, d, "f"), 0, "rmdir");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 4, "one less");
	tap_eq(tcfs_ns_remove_tree(s, d, "a"), 0, "remove a tree");
	tap_ok(tcfs_ns_get(s, d, &n) == 0 && n.nlink == 3, "one less");
	f = mkfile(d, "h", "y");
	tcfs_ns_get(s, f, &n);
	before = n.ctime_ns;
	tap_eq(tcfs_ns_setattr(s, f, TCFS_SET_MODE,
			       &(struct tcfs_attrs){ .mode = 0600 }), 0,
	       "chmod");
	tap_ok(tcfs_ns_get(s, f, &n) == 0 && n.ctime_ns > before &&
		       n.mode == 0600,
	       "changes ctime");
	before = n.ctime_ns;
	tap_eq(tcfs_ns_rename(s, d, "h", d, "g", 0), 0, "rename");
	tap_ok(tcfs_ns_get(s, f, &n) == 0 && n.ctime_ns > before,
	       "changes ctime");
}

/* Trusts root and the mount's owner (-1, asked never: store.h). */
static int trust_root(void *ctx, int64_t uid, int64_t gid)
{
	(void)ctx;
	(void)gid;
	return uid == 0;
}

/* The shared mark of the kernel of group file grp in dir. */
static int shared_of(uint64_t dir)
{
	struct tcfs_kernel k;

	return tcfs_kernel_get(s, ino_of(dir, "__grp__k.json"), &k) == 0
		       ? k.shared : -1;
}

/* A kernel k in key dir KEY of dir, its files written by who. */
static uint64_t kernel_by(uint64_t dir, const char *key,
			  const struct tcfs_owner *who)
{
	struct tcfs_content c = content("{}");
	struct tcfs_node d = { 0 }, n;

	tcfs_ns_mkdir(s, dir, key, 0755, 1, who, &d);
	tcfs_ns_create(s, d.ino, "k.cubin", 0644, 1, &c, who, &n);
	tcfs_ns_create(s, d.ino, "__grp__k.json", 0644, 1, &c, who, &n);
	return d.ino;
}

static void test_shared_mark(void)
{
	struct tcfs_owner root = { 0, 0 }, user = { 2201, 2201 };
	struct tcfs_content c = content("x");
	struct tcfs_node n;
	uint64_t own, a, b, d;
	int yes = -1;

	tcfs_store_set_trust(s, trust_root, NULL);
	a = kernel_by(TCFS_ROOT_INO, "SHAREDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		      &root);
	tap_eq(shared_of(a), 1, "a kernel its trusted writer wrote: shared");
	b = kernel_by(TCFS_ROOT_INO, "UNTRUSTEDBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
		      &user);
	tap_eq(shared_of(b), 0, "one an untrusted user wrote: not, wherever");
	tap_ok(tcfs_kernel_dir_shared(s, b, &yes) == 0 && !yes,
	       "... and its dir says so");
	own = mkdir_(TCFS_ROOT_INO, TCFS_NAME_PRIVATE_PREFIX "2201");
	d = kernel_by(own, "OWNDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD", &root);
	tap_eq(shared_of(d), 0, "one in a user's own dir: not, whoever wrote");
	tcfs_ns_create(s, a, "evil.cubin", 0644, 1, &c, &user, &n);
	tap_eq(shared_of(a), 0, "a file an untrusted user adds unshares it");
	tcfs_ns_unlink(s, a, "evil.cubin");
	tap_eq(shared_of(a), 0, "... for good, once written");
	tap_eq(tcfs_kernel_set_shared(s, a), 0, "promoted");
	tap_eq(shared_of(a), 1, "shared again");
	tcfs_store_set_trust(s, NULL, NULL);
	tap_eq(tcfs_ns_rename(s, TCFS_ROOT_INO,
			      "UNTRUSTEDBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
			      TCFS_ROOT_INO,
			      "UNTRUSTEDCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", 0), 0,
	       "moved where no mount asks who wrote it");
	tap_eq(shared_of(b), 0, "still not shared: the mark stays");
	tap_ok(tcfs_kernel_dir_shared(s, TCFS_ROOT_INO, &yes) == 0 && yes,
	       "a dir without kernels may leave");
}

int main(void)
{
	char *dir = tap_tmpdir();
	struct tcfs_store_opts o = { dir, 1, 1, 1.0, .recover = tcfs_recover };

	if (tcfs_store_open(&o, &s) < 0) {
		printf("Bail out! cannot open a store in %s\n", dir);
		return 1;
	}
	test_basics();
	test_triton_put();
	test_rename_rules();
	test_list();
	test_kernels();
	test_meta_known();
	test_nested();
	test_threads();
	test_symlinks();
	test_hard_links();
	test_counts();
	test_written_as_read(dir);
	test_owners();
	test_shared_mark();
	test_resolve();
	tcfs_store_close(s);
	tap_rmtree(dir);
	return tap_done();
}
