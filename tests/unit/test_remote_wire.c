/* remote_wire: groups as Triton's json.dumps writes them, read back only
 * when every name is plain; sidecars that prove bytes whole and, signed,
 * who wrote them. */
#include <errno.h>
#include <stdint.h>

#include "index/base/err.h"
#include "index/remote/wire.h"
#include "tap.h"

#define K52 "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"
#define GRP "{\"child_paths\": [\"k.cubin\", \"k.json\"]}"

static void names_of(struct tcfs_wire_names *w, const char *const *names,
		     size_t n)
{
	w->n = n;
	for (size_t i = 0; i < n; i++)
		snprintf(w->name[i], sizeof(w->name[i]), "%s", names[i]);
}

/* The wanted text is what python3 printed for
 * json.dumps({"child_paths": sorted(names)}), names as below. */
static void group_render(void)
{
	static const char *const names[] = {
		"k.json", "k.cubin", "_k.x", "caf\xc3\xa9.ptx",
		"tab\there.ttir", "e\xf0\x9f\x98\x80.llir",
		"ctl\x01\x1f\x7f.so", "q\"b\\s.json", "n\nl\r\b\f.x",
		"\xef\xbc\xa1.x", "Z.x",
	};
	static const char want[] =
		"{\"child_paths\": [\"Z.x\", \"_k.x\", "
		"\"caf\\u00e9.ptx\", \"ctl\\u0001\\u001f\\u007f.so\", "
		"\"e\\ud83d\\ude00.llir\", \"k.cubin\", \"k.json\", "
		"\"n\\nl\\r\\b\\f.x\", \"q\\\"b\\\\s.json\", "
		"\"tab\\there.ttir\", \"\\uff21.x\"]}";
	struct tcfs_wire_names w, back;
	char *out = NULL;
	size_t len = 0;
	int rc;

	names_of(&w, names, sizeof(names) / sizeof(*names));
	rc = tcfs_wire_group_render(&w, &out, &len);
	tap_ok(rc == 0 && len == strlen(want) && memcmp(out, want, len) == 0,
	       "group rendered as json.dumps: %s", out ? out : "(none)");
	back.n = 0;
	rc = out ? tcfs_wire_group_parse(out, len, &back) : -1;
	tap_ok(rc == 0 && back.n == w.n, "and parsed back, %zu names",
	       back.n);
	for (size_t i = 0; out && i < w.n; i++) {
		size_t j = 0;

		while (j < back.n && strcmp(back.name[j], w.name[i]) != 0)
			j++;
		tap_ok(j < back.n, "name %zu came back", i);
	}
	free(out);
	w.n = 0;
	out = NULL;
	tap_ok(tcfs_wire_group_render(&w, &out, &len) == 0 && out &&
		       strcmp(out, "{\"child_paths\": []}") == 0,
	       "no children: {\"child_paths\": []}");
	free(out);
	names_of(&w, (const char *const[]){ "bad\xff.x" }, 1);
	tap_eq(tcfs_wire_group_render(&w, &out, &len), -EILSEQ,
	       "a name that is not UTF-8: -EILSEQ");
}

static void parse_ok(const char *json, size_t n, const char *what)
{
	struct tcfs_wire_names w;
	int rc = tcfs_wire_group_parse(json, strlen(json), &w);

	tap_ok(rc == 0 && w.n == n, "%s: %zu names%s%s", what, w.n,
	       rc ? ": " : "", rc ? tcfs_err_msg() : "");
}

static void parse_bad(const char *json, size_t len, const char *what)
{
	struct tcfs_wire_names w;
	int rc = tcfs_wire_group_parse(json, len, &w);

	tap_ok(rc == -EBADMSG && w.n == 0, "%s: -EBADMSG: %s", what,
	       tcfs_err_msg());
}

/* {"child_paths": [n names "f0", "f1"...]} */
static char *many(int n)
{
	char *s = malloc(32 + 12 * (size_t)n), *p = s;

	p += sprintf(p, "{\"child_paths\": [");
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%s\"f%d\"", i ? ", " : "", i);
	sprintf(p, "]}");
	return s;
}

/* Each refused: -EBADMSG. */
static const char *const bad_groups[][2] = {
	{ "{\"child_paths\": [\"../x\"]}", "../x" },
	{ "{\"child_paths\": [\"/abs\"]}", "an absolute name" },
	{ "{\"child_paths\": [\"a/b\"]}", "a/b" },
	{ "{\"child_paths\": [\".\"]}", "." },
	{ "{\"child_paths\": [\"..\"]}", ".." },
	{ "{\"child_paths\": [\"\"]}", "an empty name" },
	{ "{\"child_paths\": [\"a\", \"a\"]}", "a name twice" },
	{ "{\"child_paths\": [1]}", "a number" },
	{ "{\"child_paths\": [null]}", "null" },
	{ "{\"child_paths\": [\"a\", [\"b\"]]}", "a nested list" },
	{ "{\"child_paths\": {\"a\": 1}}", "a path not a string" },
	{ "{\"child_paths\": {\"../a\": \"/r/a\"}}", "../ as a key" },
	{ "{\"child_paths\": {\"a\": \"/r/a\", \"a\": \"/r/b\"}}",
	  "a key twice" },
	{ "{\"child_paths\": \"a\"}", "a string" },
	{ "{\"child_paths\": null}", "null child_paths" },
	{ "{\"child_paths\": [\"a\"], \"x\": 1}", "another member" },
	{ "{\"child_paths\": [\"a\"], \"child_paths\": [\"../b\"]}",
	  "child_paths twice" },
	{ "{\"paths\": [\"a\"]}", "no child_paths" },
	{ "{}", "an empty object" },
	{ "[\"a\"]", "not an object" },
	{ "\"a\"", "a string value" },
	{ "", "empty" },
	{ "{", "invalid JSON" },
	{ "{\"child_paths\": [\"a\",]}", "a trailing comma" },
	{ "{\"child_paths\": [\"a\"]} x", "text after the value" },
	{ "{\"child_paths\": [\"a\"]}{}", "two values" },
	{ "{\"child_paths\": [\"a\\u0000b\"]}", "an escaped NUL" },
	{ "{\"child_paths\": [\"a\\\\\\u0000\"]}",
	  "an escaped NUL after a backslash" },
	{ "{\"child_paths\": [\"\\u002e\\u002e\"]}", "an escaped .." },
	{ "{\"child_paths\": [\"\\u002e\\u002e/x\"]}", "escaped ../x" },
	{ "{\"child_paths\": [\"a\\/b\"]}", "an escaped /" },
	{ "{\"child_paths\": [\"bad\xff\"]}", "not UTF-8" },
	{ "{\"child_paths\": [\"\\ud800\"]}", "a lone surrogate" },
	/* Names a key dir gives other meanings: landed as children, they
	 * would be another kernel's group file, a sidecar, or a write cut
	 * off (swept as one). */
	{ "{\"child_paths\": [\"k.cubin\", \"__grp__k.json\"]}",
	  "the group file itself" },
	{ "{\"child_paths\": [\"k.cubin\", \"__grp__other.json\"]}",
	  "another kernel's group file" },
	{ "{\"child_paths\": {\"__grp__o.json\": \"/c/__grp__o.json\"}}",
	  "a group file as a key" },
	{ "{\"child_paths\": [\"__tcfs__k.json\"]}", "a sidecar" },
	{ "{\"child_paths\": [\"__tcfs__cuda_utils.so.json\"]}",
	  "a module's sidecar" },
	{ "{\"child_paths\": [\"tmp.pid_12_ab\"]}", "a temp dir's name" },
	{ "{\"child_paths\": [\"k.cubin.tmp.pid_12_ab\"]}",
	  "a temp file's name" },
};

static void group_parse(void)
{
	char name[300], json[400], *s;

	parse_ok("{\"child_paths\": [\"k.json\", \"k.cubin\"]}", 2,
		 "Triton's remote form");
	parse_ok("{\"child_paths\": {\"k.json\": \"/c/" K52 "/k.json\", "
		 "\"k.cubin\": \"/c/" K52 "/k.cubin\"}}",
		 2, "Triton's file form");
	parse_ok(" {\"child_paths\":[]}\n", 0, "blanks around, none inside");
	parse_ok("{\"child_paths\": [\"a\\\\u0000\"]}", 1,
		 "a backslash before u0000 is no NUL");
	for (size_t i = 0; i < sizeof(bad_groups) / sizeof(*bad_groups); i++)
		parse_bad(bad_groups[i][0], strlen(bad_groups[i][0]),
			  bad_groups[i][1]);
	parse_bad("{\"child_paths\": [\"a\0b\"]}", 23, "a raw NUL");
	memset(name, 'n', 256);
	name[256] = '\0';
	snprintf(json, sizeof(json), "{\"child_paths\": [\"%s\"]}", name);
	parse_bad(json, strlen(json), "a name of 256 bytes");
	s = many(64);
	parse_ok(s, 64, "64 children");
	free(s);
	s = many(65);
	parse_bad(s, strlen(s), "65 children");
	free(s);
	s = malloc(70 << 10);
	memset(s, ' ', 70 << 10);
	memcpy(s, "{\"child_paths\": [\"a\"]}", 22);
	parse_bad(s, 70 << 10, "a value of 70 KB");
	free(s);
}

static void file_names(void)
{
	char buf[TCFS_NAME_MAX + 1], big[TCFS_NAME_MAX + 1];

	tap_ok(tcfs_wire_group_file("k", buf, sizeof(buf)) == 0 &&
		       strcmp(buf, "__grp__k.json") == 0,
	       "group file of k: %s", buf);
	tap_ok(tcfs_wire_sidecar_file("k", buf, sizeof(buf)) == 0 &&
		       strcmp(buf, "__tcfs__k.json") == 0,
	       "sidecar of k: %s", buf);
	tap_ok(tcfs_wire_sidecar_file("cuda_utils.so", buf, sizeof(buf)) ==
			       0 &&
		       strcmp(buf, "__tcfs__cuda_utils.so.json") == 0,
	       "sidecar of a module: %s", buf);
	tap_eq(tcfs_wire_group_file("k", buf, 13), -ENAMETOOLONG,
	       "a buffer one byte short: -ENAMETOOLONG");
	memset(big, 'n', 250);
	big[250] = '\0';
	tap_eq(tcfs_wire_group_file(big, buf, sizeof(buf)), -ENAMETOOLONG,
	       "a group file name over 255 bytes: -ENAMETOOLONG");
	tap_eq(tcfs_wire_group_file("a/b", buf, sizeof(buf)), -EINVAL,
	       "a name with '/': -EINVAL");
	tap_eq(tcfs_wire_sidecar_file("..", buf, sizeof(buf)), -EINVAL,
	       "'..': -EINVAL");
}

/* The group of kernel k, its files added out of order. */
static void kernel(struct tcfs_sidecar *sc)
{
	memset(sc, 0, sizeof(*sc));
	snprintf(sc->key, sizeof(sc->key), "%s", K52);
	snprintf(sc->name, sizeof(sc->name), "k");
	sc->group = 1;
	tcfs_sidecar_add(sc, "k.json", "{}", 2);
	tcfs_sidecar_add(sc, "__grp__k.json", GRP, strlen(GRP));
	tcfs_sidecar_add(sc, "k.cubin", "CUBIN", 5);
}

static void sidecar_roundtrip(void)
{
	struct tcfs_sidecar sc, back;
	char *out = NULL;
	size_t len = 0;
	int rc;

	kernel(&sc);
	tap_ok(sc.n == 3, "three files added");
	rc = tcfs_sidecar_render(&sc, NULL, 0, &out, &len);
	tap_ok(rc == 0 && strstr(out, "\"__grp__k.json\"") <
					  strstr(out, "\"k.cubin\"") &&
		       strstr(out, "\"k.cubin\"") < strstr(out, "\"k.json\"") &&
		       !strstr(out, "hmac"),
	       "rendered unsigned, files sorted: %s", out ? out : "");
	rc = tcfs_sidecar_parse(out, len, K52, "k", &back);
	tap_ok(rc == 0 && back.n == 3 && back.group && !back.has_hmac &&
		       strcmp(back.key, K52) == 0 &&
		       strcmp(back.name, "k") == 0,
	       "parsed back%s%s", rc ? ": " : "", rc ? tcfs_err_msg() : "");
	for (size_t i = 0; i < sc.n; i++) {
		const struct tcfs_sidecar_file *f =
			tcfs_sidecar_find(&back, sc.f[i].name);

		tap_ok(f && f->size == sc.f[i].size &&
			       !memcmp(f->sha256, sc.f[i].sha256, 32),
		       "%s: size and hash kept", sc.f[i].name);
	}
	tap_eq(tcfs_sidecar_check(&back, "k.cubin", "CUBIN", 5), 0,
	       "check: the same bytes pass");
	tap_eq(tcfs_sidecar_check(&back, "__grp__k.json", GRP, strlen(GRP)), 0,
	       "check: the group file passes");
	tap_eq(tcfs_sidecar_check(&back, "k.cubin", "CUBIN!", 6), -EBADMSG,
	       "check: another size refused");
	tap_ok(strstr(tcfs_err_msg(), "6 bytes") != NULL, "  %s",
	       tcfs_err_msg());
	tap_eq(tcfs_sidecar_check(&back, "k.cubin", "CUBIX", 5), -EBADMSG,
	       "check: another hash refused");
	tap_ok(strstr(tcfs_err_msg(), "SHA-256") != NULL, "  %s",
	       tcfs_err_msg());
	tap_eq(tcfs_sidecar_check(&back, "k.ptx", "PTX", 3), -EBADMSG,
	       "check: a name not listed refused");
	tap_ok(strstr(tcfs_err_msg(), "not in the sidecar") != NULL, "  %s",
	       tcfs_err_msg());
	tap_ok(tcfs_sidecar_find(&back, "k.ptx") == NULL,
	       "find: NULL for a name not listed");
	free(out);
}

/* A launcher module's sidecar: kind file, the file alone. */
static void sidecar_module(void)
{
	struct tcfs_sidecar sc, back;
	char *out = NULL;
	size_t len = 0;
	int rc;

	memset(&sc, 0, sizeof(sc));
	snprintf(sc.key, sizeof(sc.key), "%s", K52);
	snprintf(sc.name, sizeof(sc.name), "cuda_utils.so");
	tcfs_sidecar_add(&sc, "cuda_utils.so", "\177ELF", 4);
	tcfs_sidecar_render(&sc, NULL, 0, &out, &len);
	rc = tcfs_sidecar_parse(out, len, K52, "cuda_utils.so", &back);
	tap_ok(rc == 0 && !back.group && back.n == 1 &&
		       tcfs_sidecar_check(&back, "cuda_utils.so", "\177ELF",
					  4) == 0,
	       "a module's sidecar: kind file, parsed and checked: %s",
	       out ? out : "");
	free(out);
}

static void sidecar_add(void)
{
	struct tcfs_sidecar sc;
	char name[32], big[TCFS_NAME_MAX + 2];
	int rc = 0;

	kernel(&sc);
	tap_eq(tcfs_sidecar_add(&sc, "k.json", "x", 1), -EEXIST,
	       "add: a name twice is -EEXIST");
	for (int i = 3; i < TCFS_WIRE_FILES_MAX + 1 && rc == 0; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		rc = tcfs_sidecar_add(&sc, name, name, strlen(name));
	}
	tap_ok(rc == 0 && sc.n == TCFS_WIRE_FILES_MAX + 1,
	       "add: room for %d files and the group file",
	       TCFS_WIRE_FILES_MAX);
	tap_eq(tcfs_sidecar_add(&sc, "one-more", "x", 1), -E2BIG,
	       "add: one more is -E2BIG");
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sc.n = 0;
	tap_eq(tcfs_sidecar_add(&sc, big, "x", 1), -ENAMETOOLONG,
	       "add: a name over 255 bytes is -ENAMETOOLONG");
}

static const unsigned char key[] = "s3cret-key";
#define KLEN (sizeof(key) - 1)

/* The HMAC python3 gives for kernel()'s files and key, over the signed
 * text as wire.h spells it (hmac.new(key, text, sha256).hexdigest()). */
#define PY_HMAC "092b830b390c0902fdf65d0c4f0532c991b04973d1c1e67edd2f77bfc1d6251e"

static void sidecar_hmac(void)
{
	struct tcfs_sidecar sc, back;
	char *out = NULL, *text = NULL;
	size_t len = 0, tlen = 0;

	kernel(&sc);
	tap_ok(tcfs_sidecar_signed_text(&sc, &text, &tlen) == 0 && text &&
		       strncmp(text, "tcfs-sidecar-v1\nkey 52:" K52
				     "\nname 1:k\nkind group\nfiles 3\n"
				     "13:__grp__k.json 38 ",
			       strlen("tcfs-sidecar-v1\nkey 52:" K52
				      "\nname 1:k\nkind group\nfiles 3\n"
				      "13:__grp__k.json 38 ")) == 0,
	       "signed text as wire.h says");
	free(text);
	tcfs_sidecar_render(&sc, key, KLEN, &out, &len);
	tap_ok(out && strstr(out, "\"hmac\": \"" PY_HMAC "\""),
	       "signed: the HMAC Python computes");
	tap_eq(tcfs_sidecar_parse(out, len, K52, "k", &back), 0,
	       "signed sidecar parsed");
	tap_ok(back.has_hmac, "and it carries an HMAC");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), 0, "verify: the key");
	tap_eq(tcfs_sidecar_verify(&back, (const unsigned char *)"other", 5),
	       -EPERM, "verify: another key refused");
	tap_eq(tcfs_sidecar_verify(&back, key, 0), -EPERM,
	       "verify: no key refused");
	free(out);
	tcfs_sidecar_render(&sc, NULL, 0, &out, &len);
	tcfs_sidecar_parse(out, len, K52, "k", &back);
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), -EPERM,
	       "verify: an unsigned sidecar refused");
	tap_ok(strstr(tcfs_err_msg(), "not signed") != NULL, "  %s",
	       tcfs_err_msg());
	free(out);
}

static void sidecar_tamper(void)
{
	struct tcfs_sidecar sc, back;
	char *out = NULL, *p;
	size_t len = 0;

	kernel(&sc);
	tcfs_sidecar_render(&sc, key, KLEN, &out, &len);
	/* A file entry tampered with in Redis: the sidecar still parses,
	 * and its bytes would pass check, but not its signature. */
	p = out ? strstr(out, "\"size\": 5") : NULL;
	if (!tap_ok(p != NULL, "k.cubin's size in the sidecar")) {
		free(out);
		return;
	}
	p[8] = '6';
	tap_eq(tcfs_sidecar_parse(out, len, K52, "k", &back), 0,
	       "tampered sidecar parses");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), -EPERM,
	       "verify: a tampered size refused");
	tap_ok(strstr(tcfs_err_msg(), "another key, or changed") != NULL,
	       "  %s", tcfs_err_msg());
	p[8] = '5';
	p = strstr(out, "\"sha256\": \"") + 11;
	*p = *p == '0' ? '1' : '0';
	tcfs_sidecar_parse(out, len, K52, "k", &back);
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), -EPERM,
	       "verify: a tampered hash refused");
	free(out);
}

/* The same sidecar written another way (members reordered, no spaces,
 * upper-case escapes) verifies alike: the HMAC signs the text, not the
 * JSON's layout. */
static void sidecar_layout(void)
{
	struct tcfs_sidecar sc, back;
	char json[1024], hexes[3][65];

	kernel(&sc);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 32; j++)
			sprintf(hexes[i] + 2 * j, "%02x", sc.f[i].sha256[j]);
	snprintf(json, sizeof(json),
		 "{\"hmac\":\"" PY_HMAC "\",\"files\":["
		 "{\"sha256\":\"%s\",\"size\":2,\"name\":\"k.\\u006Ason\"},"
		 "{\"size\":38,\"name\":\"__grp__k.json\",\"sha256\":\"%s\"},"
		 "{\"name\":\"k.cubin\",\"sha256\":\"%s\",\"size\":5.0}],"
		 "\"kind\":\"group\",\"name\":\"k\",\"key\":\"" K52 "\","
		 "\"tcfs\":1}",
		 hexes[0], hexes[1], hexes[2]);
	tap_eq(tcfs_sidecar_parse(json, strlen(json), K52, "k", &back), 0,
	       "another layout parses");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), 0,
	       "and verifies with the same HMAC");
}

static void sidecar_bad(const char *json, const char *name, const char *what)
{
	struct tcfs_sidecar back;
	int rc = tcfs_sidecar_parse(json, strlen(json), K52, name, &back);

	tap_ok(rc == -EBADMSG && back.n == 0, "sidecar %s: -EBADMSG: %s",
	       what, tcfs_err_msg());
}

#define H64 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define HEAD "{\"tcfs\": 1, \"key\": \"" K52 "\", \"name\": \"k\", "
#define F(n, s) "{\"name\": \"" n "\", \"size\": " s ", \"sha256\": \"" H64 "\"}"
#define GF F("__grp__k.json", "3")

/* Each refused: -EBADMSG. */
static const char *const bad_sidecars[][2] = {
	{ HEAD "\"kind\": \"group\", \"files\": [" GF "]", "cut short" },
	{ "{\"tcfs\": 2, \"key\": \"" K52 "\", \"name\": \"k\", "
	  "\"kind\": \"group\", \"files\": [" GF "]}", "version 2" },
	{ "{\"tcfs\": 1, \"key\": \"" K52 "X\", \"name\": \"k\", "
	  "\"kind\": \"group\", \"files\": [" GF "]}", "another key" },
	{ HEAD "\"kind\": \"grp\", \"files\": [" GF "]}", "a bad kind" },
	{ HEAD "\"kind\": \"group\", \"files\": []}", "no group file" },
	{ HEAD "\"kind\": \"group\", \"files\": {}}", "files an object" },
	{ HEAD "\"kind\": \"group\"}", "no files" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF "], \"x\": 1}",
	  "an unknown member" },
	{ HEAD "\"kind\": \"group\", \"kind\": \"file\", \"files\": ["
	  GF "]}", "a member twice" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF ", "
	  F("../x", "1") "]}", "../x" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF ", "
	  F("a/b", "1") "]}", "a/b" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF ", "
	  F("x", "1") ", " F("x", "1") "]}", "a file twice" },
	{ HEAD "\"kind\": \"group\", \"files\": [" F("__grp__k.json",
	  "-1") "]}", "a size of -1" },
	{ HEAD "\"kind\": \"group\", \"files\": [" F("__grp__k.json",
	  "1.5") "]}", "a size of 1.5" },
	{ HEAD "\"kind\": \"group\", \"files\": [" F("__grp__k.json",
	  "\"3\"") "]}", "a size as a string" },
	{ HEAD "\"kind\": \"group\", \"files\": [" F("__grp__k.json",
	  "1e300") "]}", "a size of 1e300" },
	{ HEAD "\"kind\": \"group\", \"files\": [{\"name\": "
	  "\"__grp__k.json\", \"size\": 3, \"sha256\": \"ab\"}]}",
	  "a short sha256" },
	{ HEAD "\"kind\": \"group\", \"files\": [{\"name\": "
	  "\"__grp__k.json\", \"size\": 3, \"sha256\": \""
	  "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
	  "\"}]}", "an upper-case sha256" },
	{ HEAD "\"kind\": \"group\", \"files\": [{\"name\": "
	  "\"__grp__k.json\", \"size\": 3}]}", "no sha256" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF
	  "], \"hmac\": \"xyz\"}", "a bad hmac" },
	{ HEAD "\"kind\": \"group\", \"files\": [" GF
	  "], \"hmac\": null}", "a null hmac" },
	{ HEAD "\"kind\": \"file\", \"files\": [" GF "]}",
	  "a file's sidecar for another file" },
	{ HEAD "\"kind\": \"file\", \"files\": [" F("k", "1") ", "
	  F("x", "1") "]}", "a file's sidecar for two" },
	{ "[]", "not an object" },
	{ "nonsense", "not JSON" },
};

static void sidecar_parse_bad(void)
{
	for (size_t i = 0; i < sizeof(bad_sidecars) / sizeof(*bad_sidecars);
	     i++)
		sidecar_bad(bad_sidecars[i][0], "k", bad_sidecars[i][1]);
	sidecar_bad(HEAD "\"kind\": \"group\", \"files\": [" GF "]}", "j",
		    "for another kernel");
}

/* An FX entry's sidecar: its debug lines' names and hashes. */
static void fx_sidecar(struct tcfs_sidecar *sc)
{
	memset(sc, 0, sizeof(*sc));
	snprintf(sc->key, sizeof(sc->key), "fkey");
	snprintf(sc->name, sizeof(sc->name), "entry");
	tcfs_sidecar_add(sc, "entry", "bytes", 5);
	tcfs_sidecar_input_add(sc, "example_inputs[0]", 17, "aaa1", 4);
	tcfs_sidecar_input_add(sc, "fx_kwargs", 9, "bbb2", 4);
}

static void sidecar_inputs(void)
{
	struct tcfs_sidecar sc, back = { 0 };
	char *out = NULL, *text = NULL, *p;
	size_t len = 0, tlen = 0;

	fx_sidecar(&sc);
	tap_ok(tcfs_sidecar_signed_text(&sc, &text, &tlen) == 0 && text &&
		       strstr(text, "\ninputs 2\n17:example_inputs[0] 4:aaa1"
				    "\n9:fx_kwargs 4:bbb2\n") != NULL,
	       "signed text ends with the inputs as wire.h says");
	free(text);
	tcfs_sidecar_render(&sc, key, KLEN, &out, &len);
	tap_ok(out && strstr(out, "\"inputs\": [[\"example_inputs[0]\", "
			     "\"aaa1\"], [\"fx_kwargs\", \"bbb2\"]]"),
	       "rendered with its inputs");
	tap_eq(tcfs_sidecar_parse(out, len, "fkey", "entry", &back), 0,
	       "parsed back");
	tap_ok(back.inputs && back.inputs->n == 2 &&
		       strcmp(back.inputs->v[1].name, "fx_kwargs") == 0 &&
		       strcmp(back.inputs->v[1].hash, "bbb2") == 0,
	       "inputs round trip, in order");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), 0, "signed: verifies");
	tcfs_sidecar_release(&back);
	p = out ? strstr(out, "bbb2") : NULL;
	if (p)
		*p = 'c';
	tap_eq(tcfs_sidecar_parse(out, len, "fkey", "entry", &back), 0,
	       "a flipped input hash parses");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), -EPERM,
	       "but its HMAC does not verify: inputs are signed");
	tcfs_sidecar_release(&back);
	free(out);
	tcfs_sidecar_release(&sc);
}

/* A big model's graph has thousands of inputs: its sidecar is well past a
 * group's 64 KiB, and still one. */
static void sidecar_inputs_big(void)
{
	struct tcfs_sidecar sc, back = { 0 };
	char name[32], hash[64];
	char *out = NULL;
	size_t len = 0;

	fx_sidecar(&sc);
	memset(hash, 'h', 52);
	for (int i = 0; i < 4000; i++) {
		int n = snprintf(name, sizeof(name), "example_inputs[%d]", i);

		tcfs_sidecar_input_add(&sc, name, (size_t)n, hash, 52);
	}
	tap_eq(tcfs_sidecar_render(&sc, key, KLEN, &out, &len), 0,
	       "4000 inputs render");
	tap_ok(len > TCFS_WIRE_JSON_MAX && len <= TCFS_WIRE_SIDECAR_MAX,
	       "past a group's bound (%zu bytes), within a sidecar's", len);
	tap_eq(tcfs_sidecar_parse(out, len, "fkey", "entry", &back), 0,
	       "and parse back");
	tap_eq(tcfs_sidecar_verify(&back, key, KLEN), 0, "signed whole");
	tcfs_sidecar_release(&back);
	tcfs_sidecar_release(&sc);
	free(out);
}

static void sidecar_inputs_bad(void)
{
	static const char *const bad[] = {
		"[]", "{}", "[[\"a\"]]", "[[\"a\", 1]]",
		"[[\"a\", \"h\", \"x\"]]", "[[\"\", \"h\"]]", "[\"a\"]",
	};
	struct tcfs_sidecar sc = { 0 };
	char name[TCFS_WIRE_INPUT_NAME_MAX + 2];
	char json[1024];
	int ok = 1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "{\"tcfs\": 1, \"key\": \"k\", "
			 "\"name\": \"e\", \"kind\": \"file\", \"files\": "
			 "[{\"name\": \"e\", \"size\": 1, \"sha256\": \"%064d\""
			 "}], \"inputs\": %s}", 0, bad[i]);
		if (tcfs_sidecar_parse(json, strlen(json), "k", "e", &sc) !=
			    -EBADMSG || sc.inputs) {
			ok = tap_ok(0, "malformed inputs %s refused", bad[i]);
			tcfs_sidecar_release(&sc);
		}
	}
	tap_ok(ok, "malformed inputs refused (%zu shapes)",
	       sizeof(bad) / sizeof(bad[0]));
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	tap_eq(tcfs_sidecar_input_add(&sc, name, TCFS_WIRE_INPUT_NAME_MAX + 1,
				      "h", 1), -EINVAL, "a name over the bound");
	tap_eq(tcfs_sidecar_input_add(&sc, name, TCFS_WIRE_INPUT_NAME_MAX,
				      "h", 1), 0, "a name at the bound");
	for (int i = 1; i < TCFS_WIRE_INPUTS_MAX; i++)
		tcfs_sidecar_input_add(&sc, "x", 1, "h", 1);
	tap_eq(tcfs_sidecar_input_add(&sc, "x", 1, "h", 1), -E2BIG,
	       "past TCFS_WIRE_INPUTS_MAX inputs");
	tcfs_sidecar_release(&sc);
	tap_ok(sc.inputs == NULL, "released");
}

int main(void)
{
	group_render();
	group_parse();
	file_names();
	sidecar_roundtrip();
	sidecar_module();
	sidecar_add();
	sidecar_hmac();
	sidecar_tamper();
	sidecar_layout();
	sidecar_parse_bad();
	sidecar_inputs();
	sidecar_inputs_big();
	sidecar_inputs_bad();
	return tap_done();
}
