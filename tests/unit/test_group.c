/* group: Triton's group files become key-relative templates only when they
 * render back byte for byte; everything else is kept raw. */
#include <errno.h>

#include "index/model/group.h"
#include "tap.h"

#define KEY "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"

/* Relativizes in, renders with root, compares with want. */
static void round_trip(const char *in, const char *root, const char *want,
		       const char *what)
{
	char *tmpl = NULL, *out = NULL;
	size_t tlen, olen;
	int rc;

	rc = tcfs_group_relativize(in, strlen(in), KEY, &tmpl, &tlen);
	tap_eq(rc, 1, "%s: stored as a template", what);
	if (rc != 1)
		return;
	/* The key dir is gone from the template; a subdir named like it
	 * (the one case with the key twice) stays. */
	tap_ok(strstr(tmpl, KEY) == NULL ||
		       strstr(strstr(in, KEY) + 1, KEY) != NULL,
	       "%s: template holds no key dir", what);
	rc = tcfs_group_render(tmpl, tlen, root, KEY, TCFS_GROUP_ALL, &out,
			       &olen);
	tap_ok(rc == 0 && olen == strlen(want) && !memcmp(out, want, olen),
	       "%s: renders as %s", what, want);
	free(tmpl);
	free(out);
}

static void kept_raw(const char *in, const char *what)
{
	char *tmpl = NULL;
	size_t tlen;

	tap_eq(tcfs_group_relativize(in, strlen(in), KEY, &tmpl, &tlen), 0,
	       "%s: kept raw", what);
	free(tmpl);
}

/* The binary-only filter: IR children are left out, whatever their
 * place in the file, and the JSON stays json.dumps'. */
static void binary_only(void)
{
	const char *full = "{\"child_paths\": {\"k.ttir\": \"/r/" KEY
			   "/k.ttir\", \"k.json\": \"/r/" KEY
			   "/k.json\", \"k.ptx\": \"/r/" KEY
			   "/k.ptx\", \"k.cubin\": \"/r/" KEY
			   "/k.cubin\", \"k.llir\": \"/r/" KEY "/k.llir\"}}";
	const char *want = "{\"child_paths\": {\"k.json\": \"/b/" KEY
			   "/k.json\", \"k.cubin\": \"/b/" KEY "/k.cubin\"}}";
	char *tmpl = NULL, *out = NULL;
	size_t tlen = 0, olen = 0;

	tcfs_group_relativize(full, strlen(full), KEY, &tmpl, &tlen);
	tap_ok(tmpl && tcfs_group_render(tmpl, tlen, "/b", KEY,
					 TCFS_GROUP_BINARY_ONLY, &out,
					 &olen) == 0 &&
		       olen == strlen(want) && !memcmp(out, want, olen),
	       "binary-only rendering lists no IR");
	free(out);
	free(tmpl);
}

/* Moves k.json and k.cubin to /d, the way -o redirect does. */
static const char *to_d(void *ctx, const char *child)
{
	(void)ctx;
	if (strcmp(child, "k.json") == 0)
		return "/d/k.json";
	if (strcmp(child, "k.cubin") == 0)
		return "/d/\xc3\xa9/k.cubin";
	return NULL;
}

/* Children placed elsewhere are named there, escaped as json.dumps does;
 * the others stay under ROOT/KEY; and the filter still applies. */
static void placed_elsewhere(void)
{
	const char *tmpl = "{\"child_paths\": {\"k.ttir\": \"k.ttir\", "
			   "\"k.json\": \"k.json\", \"k.cubin\": \"k.cubin\"}}";
	const char *want = "{\"child_paths\": {\"k.ttir\": \"/r/" KEY
			   "/k.ttir\", \"k.json\": \"/d/k.json\", \"k.cubin\": "
			   "\"/d/\\u00e9/k.cubin\"}}";
	const char *bin = "{\"child_paths\": {\"k.json\": \"/d/k.json\", "
			  "\"k.cubin\": \"/d/\\u00e9/k.cubin\"}}";
	char *out = NULL;
	size_t olen = 0;
	int rc;

	rc = tcfs_group_render_with(tmpl, strlen(tmpl), "/r", KEY,
				    TCFS_GROUP_ALL, to_d, NULL, &out, &olen);
	tap_ok(rc == 0 && olen == strlen(want) && !memcmp(out, want, olen),
	       "children placed elsewhere are named there, the rest under "
	       "ROOT/KEY");
	free(out);
	out = NULL;
	rc = tcfs_group_render_with(tmpl, strlen(tmpl), "/r", KEY,
				    TCFS_GROUP_BINARY_ONLY, to_d, NULL, &out,
				    &olen);
	tap_ok(rc == 0 && olen == strlen(bin) && !memcmp(out, bin, olen),
	       "... and with the binary-only filter, no IR");
	free(out);
	tap_eq(tcfs_group_render_with("[]", 2, "/r", KEY, TCFS_GROUP_ALL, to_d,
				      NULL, &out, &olen),
	       -EUCLEAN, "... a non-template is EUCLEAN there too");
}

/* Group files as images carry them: any JSON layout, paths relative to
 * .triton/cache (MCV), made templates for their key dir. */
static void from_image(void)
{
	const char *mcv = "{\n  \"child_paths\": {\n    \"k.cubin\": "
			  "\".triton/cache/" KEY "/k.cubin\",\n    \"k.json\": "
			  "\".triton/cache/" KEY "/k.json\"\n  }\n}";
	const char *want = "{\"child_paths\": {\"k.cubin\": \"/d/" KEY
			   "/k.cubin\", \"k.json\": \"/d/" KEY "/k.json\"}}";
	char *tmpl = NULL, *out = NULL, why[256];
	size_t tlen = 0, olen = 0;

	tap_eq(tcfs_group_template_of(mcv, strlen(mcv), KEY, &tmpl, &tlen, why,
				      sizeof(why)),
	       1, "an image's indented, relative group file is a template");
	tap_ok(tmpl && tcfs_group_render(tmpl, tlen, "/d", KEY,
					 TCFS_GROUP_ALL, &out, &olen) == 0 &&
		       olen == strlen(want) && !memcmp(out, want, olen),
	       "... rendered as Triton writes it for its destination");
	free(tmpl);
	free(out);
	tmpl = NULL;
	/* A hostile image's children: each refused, naming the child. */
	static const char *const bad[] = {
		"{\"child_paths\": {\"a\": \"x/OTHER/a\"}}",
		"{\"child_paths\": {\"a\": \"/etc/shadow\"}}",
		"{\"child_paths\": {\"a\": \"../../../../etc/passwd\"}}",
		"{\"child_paths\": {\"a\": \"/r/" KEY "/../OTHER/a\"}}",
		"{\"child_paths\": {\"a\": \"/r/" KEY "/b\"}}",
		"{\"child_paths\": {\"a/b\": \"/r/" KEY "/a/b\"}}",
		"{\"child_paths\": {\"k.cubin\": \".triton/cache/" KEY
		"/k.cubin\", \"p\": \"/etc/passwd\"}}",
		"{\"child_paths\": {}}",
		"{oops",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tap_eq(tcfs_group_template_of(bad[i], strlen(bad[i]), KEY,
					      &tmpl, &tlen, why, sizeof(why)),
		       0, "not a template: %s", bad[i]);
		tap_ok(tmpl == NULL && why[0], "... none given, and why: %s",
		       why);
	}
	const char *two = "{\"child_paths\": {\"a\": \"/r/" KEY "/a\", "
			  "\"b\": \"/s/" KEY "/b\"}}";

	tap_eq(tcfs_group_template_of(two, strlen(two), KEY, &tmpl, &tlen, why,
				      sizeof(why)),
	       0, "children under two roots: not a template");
}

int main(void)
{
	const char *triton =
		"{\"child_paths\": {\"add_kernel.source\": \"/tmp/big/" KEY
		"/add_kernel.source\", \"add_kernel.cubin\": \"/tmp/big/" KEY
		"/add_kernel.cubin\"}}";
	char *out = NULL;
	size_t olen;

	round_trip(triton, "/tmp/big", triton, "same root");
	round_trip(triton, "/mnt/cache/",
		   "{\"child_paths\": {\"add_kernel.source\": \"/mnt/cache/" KEY
		   "/add_kernel.source\", \"add_kernel.cubin\": \"/mnt/cache/" KEY
		   "/add_kernel.cubin\"}}",
		   "new root, trailing slash dropped as os.path.join does");
	round_trip("{\"child_paths\": {\"k.json\": \"/caf\\u00e9/" KEY
		   "/k.json\"}}",
		   "/x/\xf0\x9f\x98\x80\"q",
		   "{\"child_paths\": {\"k.json\": \"/x/\\ud83d\\ude00\\\"q/" KEY
		   "/k.json\"}}",
		   "non-ASCII escaped as json.dumps does");
	round_trip("{\"child_paths\": {\"x.cubin\": \"/tmp/big/" KEY "/sub/"
		   KEY "/x.cubin\"}}",
		   "/mnt",
		   "{\"child_paths\": {\"x.cubin\": \"/mnt/" KEY "/sub/" KEY
		   "/x.cubin\"}}",
		   "a child whose path names the key twice stays that file");
	round_trip("{\"child_paths\": {\"k.json\": \"/" KEY "/k.json\"}}", "/",
		   "{\"child_paths\": {\"k.json\": \"/" KEY "/k.json\"}}",
		   "a cache at /");

	kept_raw("{\"child_paths\": [\"a.json\", \"a.cubin\"]}",
		 "Triton's Redis format (a list)");
	kept_raw("{\"child_paths\": {\"a\": \"/tmp/big/OTHERKEY/a\"}}",
		 "child outside the key dir");
	kept_raw("{\"child_paths\": {\"a\": \"/r1/" KEY "/a\", \"b\": \"/r2/" KEY
		 "/b\"}}",
		 "children under two different roots");
	kept_raw("{\"child_paths\":{\"a\":\"/r/" KEY "/a\"}}",
		 "compact JSON (not json.dumps's spacing)");
	kept_raw("{\"child_paths\": {\"a\": \"/r/" KEY "/../x\"}}",
		 "a child that climbs out with ..");
	kept_raw("{\"child_paths\": {}}", "no children");
	kept_raw("{\"child_paths\": {\"a\": 1}}", "a non-string child");
	kept_raw("{not json", "invalid JSON");
	kept_raw("", "an empty file");
	kept_raw("{\"child_paths\": {\"a\": \"/r/" KEY "/a\"}, \"x\": 1}",
		 "extra top-level members");

	tap_eq(tcfs_group_render("garbage", 7, "/r", KEY, TCFS_GROUP_ALL,
					 &out, &olen),
	       -EUCLEAN, "rendering a non-template is EUCLEAN");

	binary_only();
	placed_elsewhere();
	from_image();
	tap_ok(tcfs_group_candidate("__grp__k.json", TCFS_GROUP_MAX) &&
		       !tcfs_group_candidate("__grp__k.json",
					     TCFS_GROUP_MAX + 1ull) &&
		       !tcfs_group_candidate("k.json", 10),
	       "candidates: group files of at most TCFS_GROUP_MAX bytes");
	return tap_done();
}
