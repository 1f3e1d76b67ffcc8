/*
 * tcfs why: why a kernel missed, from its metadata and TTIR against its
 * nearest sibling cached before it (index/model/why.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "keyarg.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "index/model/entry.h"
#include "index/model/fxgraph.h"
#include "index/model/fxwhy.h"
#include "index/model/ttir.h"
#include "index/model/why.h"
#include "index/remote/config.h"
#include "index/remote/fxnear.h"
#include "index/remote/remote.h"
#include "remote_open.h"

/* TCFS_TTIR_MAX, as --help says it. */
#define TTIR_MAX_TEXT "512 KiB"
_Static_assert(TCFS_TTIR_MAX == 512u << 10, "TTIR_MAX_TEXT says 512 KiB");
#define FXGRAPH_MAX_TEXT "128 MiB"
_Static_assert(TCFS_FXGRAPH_MAX == 128u << 20, "FXGRAPH_MAX_TEXT: 128 MiB");

static const struct opt_cmd cmd = {
	"why", "KEY", 1, 1, "give one KEY",
	"Why the kernel at KEY was compiled when others of its name were\n"
	"cached: compares its metadata (NAME.json) with every kernel of the\n"
	"same name and target cached before it missed (kernels cached after\n"
	"could not have been hit), picks the nearest (the fewest differing\n"
	"top-level fields) and shows the fields that differ, but \"hash\".\n"
	"The first of its name and target has no nearest.  Then it compares\n"
	"the two kernels' TTIR (NAME.source, at most " TTIR_MAX_TEXT " each): the\n"
	"arguments of the kernel function whose type or attributes changed\n"
	"(by loc name, else #position: a dtype, tt.divisibility) and the\n"
	"arith.constants that changed (a BLOCK size): each constant paired\n"
	"with the one that plays its part in the other (its loc name, the op\n"
	"that first uses it and the operand), each change once, with the loc\n"
	"names of the constants that make it.  The first 20 changes are\n"
	"shown, then \"and N more\" (--all lists them).  The same metadata and\n"
	"TTIR mean Triton, its options or the environment changed.  A\n"
	"kernel whose NAME.json is missing or not JSON has no nearest.\n"
	"KEY may be any prefix that begins one key (as git takes a hash), in\n"
	"either case; one that begins several is a usage error naming them.\n"
	"\n"
	"KEY may also be an FX graph of Inductor's cache (fxgraph/XX/FKEY:\n"
	"FKEY).  Its entry (at most " FXGRAPH_MAX_TEXT ") records the inputs its key\n"
	"hashed, one line each (PyTorch's _fx_graph_cache_debug_lines); it is\n"
	"compared with every other graph's entry cached before it missed, and\n"
	"the inputs that set it apart from the nearest are shown: of a value\n"
	"like TensorMetadata(...) the fields that differ (a shape, a dtype),\n"
	"of the graph's code its first line that differs.  Entries are read\n"
	"as data, never unpickled.\n"
	"\n"
	"With --remote, KEY is an FX graph (FKEY) of this store, compared with\n"
	"the graphs the fleet holds instead: the sidecars of the remote's FX\n"
	"entries (at most 10000) carry their inputs' names and hashes, so no\n"
	"entry is fetched.  Shows the nearest (the fewest inputs that differ),\n"
	"each input that differs with this graph's value and the remote's hash,\n"
	"then the next nearest, one line each.  Sidecars are taken as the\n"
	"mount takes entries: with a key (remote_key_file) or\n"
	"remote_inductor=signed, only those validly signed; the others are\n"
	"counted as refused.  The remote is the one -o names, else the store's.\n",
	NULL,
	"Exit status: 0 success, 1 no kernel or FX graph at KEY or the store\n"
	"could not be read (with --remote: no FX entry of KEY here, no graph\n"
	"in the remote to compare with, or the remote does not answer), 2\n"
	"usage error (KEY begins several keys; with --remote: no remote\n"
	"named, a bad option).\n",
};

/* Changes of the TTIR shown without --all: a screenful, with the lines
 * above them. */
#define WHY_CHANGES_SHOWN 20

/* A constant's loc names, "a, b" (of its first TCFS_UTF8_SHOW_MAX bytes),
 * into buf. */
static const char *names_of(const cJSON *names, char *buf, size_t len)
{
	char a[TCFS_UTF8_SHOW_MAX];
	size_t n = 0;

	buf[0] = '\0';
	for (const cJSON *e = names ? names->child : NULL; e && n < len;
	     e = e->next) {
		const char *nm = cJSON_GetStringValue(e);

		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
				      tcfs_utf8_printable(nm ? nm : "?", a,
							  sizeof(a)));
	}
	return buf;
}

/* One change of the TTIR: "NAME|#INDEX|NAMES  FROM -> TO" (null:
 * "(none)"). */
static void print_change(const char *what, const cJSON *c)
{
	const cJSON *nm = cJSON_GetObjectItem(c, "name");
	const cJSON *ix = cJSON_GetObjectItem(c, "index");
	const cJSON *names = cJSON_GetObjectItem(c, "names");
	const char *from = cJSON_GetStringValue(cJSON_GetObjectItem(c, "from"));
	const char *to = cJSON_GetStringValue(cJSON_GetObjectItem(c, "to"));
	char a[TCFS_UTF8_SHOW_MAX], b[TCFS_UTF8_SHOW_MAX];

	printf("  %s", what);
	if (cJSON_IsString(nm))
		printf(" %s", tcfs_utf8_printable(nm->valuestring, a, sizeof(a)));
	else if (cJSON_IsNumber(ix))
		printf(" #%d", ix->valueint);
	else if (cJSON_GetArraySize(names))
		printf(" %s", names_of(names, a, sizeof(a)));
	printf("  %s -> ", from ? tcfs_utf8_printable(from, a, sizeof(a))
			       : "(none)");
	printf("%s\n", to ? tcfs_utf8_printable(to, b, sizeof(b)) : "(none)");
}

/* The changes of one kind, while fewer than WHY_CHANGES_SHOWN are shown
 * (all: every one); *more counts the others. */
static void print_kind(const char *what, const cJSON *list, int all,
		       long *shown, long *more)
{
	for (const cJSON *c = list ? list->child : NULL; c; c = c->next) {
		if (!all && *shown >= WHY_CHANGES_SHOWN) {
			(*more)++;
			continue;
		}
		print_change(what, c);
		(*shown)++;
	}
}

/* The changes of arguments, then of constants, then how many more there
 * are. */
static void print_changes(const cJSON *d, int all)
{
	const cJSON *unlisted = cJSON_GetObjectItem(d, "unlisted");
	long shown = 0, more = 0;

	if (cJSON_IsNumber(unlisted))
		more = (long)unlisted->valuedouble;
	print_kind("argument", cJSON_GetObjectItem(d, "arguments"), all,
		   &shown, &more);
	print_kind("constant", cJSON_GetObjectItem(d, "constants"), all,
		   &shown, &more);
	if (more && all)
		printf("  and %ld more, not listed (over %d of a kind)\n", more,
		       TCFS_TTIR_SHOW_MAX);
	else if (more)
		printf("  and %ld more (--all lists them)\n", more);
}

/* What the two NAME.source say (why.h), after the metadata's lines. */
static void print_source(const struct tcfs_why *w, int all)
{
	const cJSON *d = w->source_differences;
	const cJSON *args = cJSON_GetObjectItem(d, "arguments");
	const cJSON *consts = cJSON_GetObjectItem(d, "constants");
	char a[TCFS_UTF8_SHOW_MAX];
	const char *src = tcfs_utf8_printable(w->k.name, a, sizeof(a));

	if (w->source == TCFS_WHY_SOURCE_SAME)
		printf("source   the same (%s.source): Triton, its options or "
		       "the environment changed\n", src);
	else if (w->source == TCFS_WHY_SOURCE_DIFFERS &&
		 !cJSON_GetArraySize(args) && !cJSON_GetArraySize(consts))
		printf("source   differs (%s.source), but not in its signature "
		       "or constants: in its body\n", src);
	else if (w->source == TCFS_WHY_SOURCE_DIFFERS)
		printf("source   differs (%s.source) in\n", src);
	else if (w->source != TCFS_WHY_SOURCE_NONE)
		printf("source   not compared: %s.source is %s\n", src,
		       w->source == TCFS_WHY_SOURCE_MISSING ? "missing"
		       : w->source == TCFS_WHY_SOURCE_TOO_BIG
			       ? "over " TTIR_MAX_TEXT
			       : "not TTIR whose kernel signature parses");
	if (w->source == TCFS_WHY_SOURCE_DIFFERS)
		print_changes(d, all);
}

/* The metadata's differences, one line each. */
static void print_fields(const struct tcfs_why *w)
{
	char a[TCFS_UTF8_SHOW_MAX], b[TCFS_UTF8_SHOW_MAX];

	printf("differs in\n");
	for (const cJSON *f = w->differences->child; f; f = f->next) {
		char *was = cJSON_PrintUnformatted(cJSON_GetArrayItem(f, 0));
		char *now = cJSON_PrintUnformatted(cJSON_GetArrayItem(f, 1));

		printf("  %-20s ", tcfs_utf8_printable(f->string, a, sizeof(a)));
		printf("%s -> %s\n",
		       tcfs_utf8_printable(was ? was : "?", a, sizeof(a)),
		       tcfs_utf8_printable(now ? now : "?", b, sizeof(b)));
		free(was);
		free(now);
	}
}

static void print_text(const struct tcfs_why *w, int all)
{
	char a[TCFS_UTF8_SHOW_MAX], t[80];
	int compared = w->source == TCFS_WHY_SOURCE_SAME ||
		       w->source == TCFS_WHY_SOURCE_DIFFERS;

	/* The metadata's own strings: bytes from the cache, made printable
	 * like every name tcfs shows. */
	snprintf(t, sizeof(t), "%s-%s", w->k.backend, w->k.arch);
	printf("kernel   %s\n", tcfs_utf8_printable(w->k.name, a, sizeof(a)));
	printf("key      %s\n", tcfs_utf8_printable(w->k.key, a, sizeof(a)));
	printf("target   %s\n", tcfs_utf8_printable(t, a, sizeof(a)));
	if (w->k.meta != TCFS_META_OK) {
		printf("nearest  none: its metadata (%s.json) is %s\n",
		       tcfs_utf8_printable(w->k.name, a, sizeof(a)),
		       w->k.meta == TCFS_META_MISSING ? "missing" : "not JSON");
		return;
	}
	if (!w->nearest[0]) {
		printf("nearest  none: the first of its name and target (none "
		       "was cached before it missed)\n");
		return;
	}
	printf("nearest  %s\n", tcfs_utf8_printable(w->nearest, a, sizeof(a)));
	if (w->differences->child)
		print_fields(w);
	else if (compared)
		printf("the metadata is the same\n");
	else
		printf("the metadata is the same: the source, the signature or "
		       "Triton itself changed\n");
	print_source(w, all);
}

static int print_json(const struct tcfs_why *w)
{
	cJSON *o = cJSON_CreateObject();
	char t[80];

	snprintf(t, sizeof(t), "%s-%s", w->k.backend, w->k.arch);
	cJSON_AddStringToObject(o, "key", w->k.key);
	cJSON_AddStringToObject(o, "name", w->k.name);
	cJSON_AddStringToObject(o, "target", t);
	if (w->nearest[0])
		cJSON_AddStringToObject(o, "nearest", w->nearest);
	else
		cJSON_AddNullToObject(o, "nearest");
	cJSON_AddItemToObject(o, "differences",
			      cJSON_Duplicate(w->differences, 1));
	if (tcfs_why_source_name(w->source))
		cJSON_AddStringToObject(o, "source",
					tcfs_why_source_name(w->source));
	else
		cJSON_AddNullToObject(o, "source");
	if (w->source_differences)
		cJSON_AddItemToObject(o, "source_differences",
				      cJSON_Duplicate(w->source_differences, 1));
	else
		cJSON_AddNullToObject(o, "source_differences");
	return cli_print_json(o);
}

/* The graph's entry, as a path below its cache root. */
static void entry_path(const struct tcfs_fxwhy *w, char *out, size_t len)
{
	snprintf(out, len, "fxgraph/%s/%s/%s", w->dir, w->graph, w->entry);
}

/* One input that differs, d's members one and two on their own lines,
 * each after its label ("(none)" for one the graph lacks). */
static void print_input(const cJSON *d, const char *one, const char *l1,
			const char *two, const char *l2)
{
	const char *in = cJSON_GetStringValue(cJSON_GetObjectItem(d, "input"));
	const char *v1 = cJSON_GetStringValue(cJSON_GetObjectItem(d, one));
	const char *v2 = cJSON_GetStringValue(cJSON_GetObjectItem(d, two));
	char buf[TCFS_UTF8_SHOW_MAX];

	printf("  %s\n", tcfs_utf8_printable(in ? in : "?", buf, sizeof(buf)));
	printf("%s%s\n", l1,
	       v1 ? tcfs_utf8_printable(v1, buf, sizeof(buf)) : "(none)");
	printf("%s%s\n", l2,
	       v2 ? tcfs_utf8_printable(v2, buf, sizeof(buf)) : "(none)");
}

static void print_graph_text(const struct tcfs_fxwhy *w)
{
	char a[TCFS_UTF8_SHOW_MAX];
	char path[3 * TCFS_NAME_MAX + 16];
	const cJSON *d;

	entry_path(w, path, sizeof(path));
	printf("fx graph %s\n", tcfs_utf8_printable(w->graph, a, sizeof(a)));
	if (w->details == TCFS_FXWHY_NO_ENTRY) {
		printf("entry    none: it missed and no entry was written (its "
		       "compile failed or bypassed the cache)\n");
		return;
	}
	printf("entry    %s\n", tcfs_utf8_printable(path, a, sizeof(a)));
	if (w->details == TCFS_FXWHY_NO_LINES)
		printf("inputs   none recorded: the PyTorch that wrote it keeps "
		       "no _fx_graph_cache_debug_lines (2.11 does)\n");
	else if (w->details == TCFS_FXWHY_TOO_BIG)
		printf("inputs   not read: the entry is over " FXGRAPH_MAX_TEXT
		       "\n");
	else if (w->details == TCFS_FXWHY_UNREADABLE)
		printf("inputs   not read: the entry is damaged or no pickle\n");
	if (w->details != TCFS_FXWHY_OK)
		return;
	printf("inputs   %zu recorded\n", w->inputs);
	if (!w->nearest[0]) {
		printf("nearest  none: no other graph was cached before it "
		       "missed (%zu compared)\n", w->compared);
		return;
	}
	printf("nearest  %s (of %zu compared)\n",
	       tcfs_utf8_printable(w->nearest, a, sizeof(a)), w->compared);
	if (!cJSON_GetArraySize(w->differences))
		printf("the recorded inputs are the same: something the key "
		       "hashed but did not record changed\n");
	else
		printf("differs in\n");
	cJSON_ArrayForEach(d, w->differences)
		print_input(d, "from", "    ", "to", "    -> ");
}

static int print_graph_json(const struct tcfs_fxwhy *w)
{
	cJSON *o = cJSON_CreateObject();
	char path[3 * TCFS_NAME_MAX + 16];

	entry_path(w, path, sizeof(path));
	cJSON_AddStringToObject(o, "graph", w->graph);
	if (w->entry[0])
		cJSON_AddStringToObject(o, "entry", path);
	else
		cJSON_AddNullToObject(o, "entry");
	cJSON_AddStringToObject(o, "details",
				tcfs_fxwhy_details_name(w->details));
	cJSON_AddNumberToObject(o, "inputs", (double)w->inputs);
	cJSON_AddNumberToObject(o, "compared", (double)w->compared);
	if (w->nearest[0])
		cJSON_AddStringToObject(o, "nearest", w->nearest);
	else
		cJSON_AddNullToObject(o, "nearest");
	if (w->differences)
		cJSON_AddItemToObject(o, "differences",
				      cJSON_Duplicate(w->differences, 1));
	else
		cJSON_AddNullToObject(o, "differences");
	return cli_print_json(o);
}

/* KEY held no kernel: an FX graph, else an error.  0 or -1. */
static int why_graph(struct tcfs_store *s, const char *key, int json)
{
	struct tcfs_fxwhy w;
	int rc = tcfs_fxwhy(s, key, &w);

	if (rc == -ENOENT) {
		cli_err("why", "%s: no kernel or FX graph with this key in %s",
			key, tcfs_store_path(s));
		return -1;
	}
	if (rc < 0) {
		cli_lib_err("why", rc, key);
		return -1;
	}
	if (json)
		rc = print_graph_json(&w) == CLI_OK ? 0 : -1;
	else
		print_graph_text(&w);
	tcfs_fxwhy_free(&w);
	return rc;
}

static void print_near_text(const char *graph, const struct tcfs_fxnear *f,
			    size_t inputs)
{
	char a[TCFS_UTF8_SHOW_MAX];
	const cJSON *d;

	printf("graph    %s\n", tcfs_utf8_printable(graph, a, sizeof(a)));
	printf("inputs   %zu recorded\n", inputs);
	printf("remote   %zu compared, %zu without inputs, %zu refused\n",
	       f->compared, f->no_inputs, f->refused);
	printf("nearest  %s (%zu %s differ)\n",
	       tcfs_utf8_printable(f->near[0].graph, a, sizeof(a)),
	       f->near[0].differ, f->near[0].differ == 1 ? "input" : "inputs");
	cJSON_ArrayForEach(d, f->differences)
		print_input(d, "local", "    here    ", "remote", "    remote  ");
	for (size_t i = 1; i < f->n; i++)
		printf("then     %s (%zu differ)\n",
		       tcfs_utf8_printable(f->near[i].graph, a, sizeof(a)),
		       f->near[i].differ);
}

static int print_near_json(const char *graph, const struct tcfs_fxnear *f,
			   size_t inputs)
{
	cJSON *o = cJSON_CreateObject(), *near = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "graph", graph);
	cJSON_AddNumberToObject(o, "inputs", (double)inputs);
	cJSON_AddNumberToObject(o, "compared", (double)f->compared);
	cJSON_AddNumberToObject(o, "without_inputs", (double)f->no_inputs);
	cJSON_AddNumberToObject(o, "refused", (double)f->refused);
	for (size_t i = 0; i < f->n; i++) {
		cJSON *g = cJSON_CreateObject();

		cJSON_AddStringToObject(g, "graph", f->near[i].graph);
		cJSON_AddNumberToObject(g, "differ", (double)f->near[i].differ);
		cJSON_AddItemToArray(near, g);
	}
	cJSON_AddItemToObject(o, "nearest", near);
	cJSON_AddItemToObject(o, "differences",
			      cJSON_Duplicate(f->differences, 1));
	return cli_print_json(o);
}

/* The local entry of graph's inputs, or the exit status. */
static int own_inputs(struct tcfs_store *s, const char *graph, char **buf,
		      struct tcfs_fx_details *d)
{
	int rc = tcfs_fxwhy_own(s, graph, buf, d);

	if (rc == -ENOENT)
		cli_err("why", "%s: no FX graph entry with this key in %s",
			graph, tcfs_store_path(s));
	else if (rc == 0 && d->n == 0)
		cli_err("why", "%s: its entry records no inputs (a PyTorch "
			"without _fx_graph_cache_debug_lines)", graph);
	else if (rc < 0)
		cli_lib_err("why", rc, graph);
	if (rc == 0 && d->n)
		return CLI_OK;
	tcfs_fx_details_free(d);
	free(*buf);
	*buf = NULL;
	return CLI_FAIL;
}

/* tcfs why --remote: graph against the fleet's.  The exit status. */
static int why_remote(struct tcfs_store *s, const char *graph,
		      const char *opts, int json)
{
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r = NULL;
	struct tcfs_fx_details d = { 0 };
	struct tcfs_fxnear f;
	char *buf = NULL;
	int rc = remote_open("why", opts, s, &cfg, &r), e;

	if (rc != CLI_OK) {
		explicit_bzero(&cfg, sizeof(cfg));
		return rc;
	}
	rc = own_inputs(s, graph, &buf, &d);
	e = rc == CLI_OK ? tcfs_fxnear(r, graph, &d, &f) : 0;
	if (e < 0) {
		cli_lib_err("why", e, "the remote");
		rc = CLI_FAIL;
	} else if (rc == CLI_OK) {
		if (f.n == 0)
			cli_err("why", "%s: no FX graph in the remote to compare "
				"with (%zu without inputs, %zu refused)", graph,
				f.no_inputs, f.refused);
		else if (json)
			rc = print_near_json(graph, &f, d.n);
		else
			print_near_text(graph, &f, d.n);
		rc = f.n ? rc : CLI_FAIL;
		tcfs_fxnear_free(&f);
	}
	tcfs_fx_details_free(&d);
	free(buf);
	tcfs_remote_close(r);
	explicit_bzero(&cfg, sizeof(cfg));
	return rc;
}

int cmd_why(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_store *s;
	struct tcfs_why w;
	const char *ropts = NULL;
	char key[TCFS_NAME_MAX + 1];
	int remote = 0, all = 0, rc;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "all", &all,
			 "list every change of the TTIR, not the first "
			 "20"),
		OPT_FLAG(0, "remote", &remote,
			 "compare the FX graph KEY with the fleet's graphs "
			 "(the remote's sidecars)"),
		OPT_FN('o', NULL, "OPTIONS", &ropts, remote_open_join,
		       "with --remote: the remote, as tcfs mount -o takes it: "
		       "remote=URL, remote_key_file=F, ..."),
		CLI_OPTS_COMMON(&co, "print {key, name, target, nearest: KEY or "
				"null, differences: {FIELD: [nearest's value, "
				"this kernel's value]}, source: \"same\", "
				"\"differs\", \"missing\", \"too big\", \"not "
				"TTIR\" or null, source_differences: "
				"{arguments: [{name or index, from, to}], "
				"constants: [{names, from, to}], unlisted} or "
				"null}; for an FX "
				"graph {graph, entry: PATH or null, details: \"ok\", "
				"\"no entry\", \"no inputs recorded\", \"too "
				"big\" or \"unreadable\", inputs, compared, "
				"nearest: FKEY or null, differences: [{input, from, "
				"to}] or null}; with --remote {graph, inputs, "
				"compared, without_inputs, refused, nearest: "
				"[{graph, differ}], differences: [{input, local, "
				"remote}]}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (ropts && !remote)
		return cli_usage_err("why", "-o names a remote: give --remote");
	if (cli_open_store("why", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = keyarg("why", s, args[0], tcfs_entry_fx_dir(), key, sizeof(key));
	if (rc != CLI_OK || remote) {
		rc = rc == CLI_OK ? why_remote(s, key, ropts, co.json) : rc;
		tcfs_store_close(s);
		return rc;
	}
	rc = tcfs_why(s, key, &w);
	if (rc == -ENOENT) {
		rc = why_graph(s, key, co.json);
	} else if (rc < 0) {
		cli_lib_err("why", rc, key);
	} else {
		if (co.json)
			rc = print_json(&w) == CLI_OK ? 0 : -1;
		else
			print_text(&w, all);
		tcfs_why_free(&w);
	}
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
