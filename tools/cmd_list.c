/*
 * tcfs list: one row per kernel, with its use as the mount saw it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "index/base/json.h"
#include "index/base/text.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static const struct opt_cmd cmd = {
	"list", "", 0, 0, "",
	"One row per kernel in the store: name, key, target (BACKEND-ARCH),\n"
	"warps, stages, size (every file of its key dir), files, hits and\n"
	"misses (every probe the mount logged of it, ever), when it was last\n"
	"hit and when it was created (its group file landed), ORIGIN (where\n"
	"it came from: here, import, unpack, remote; '-' when unknown),\n"
	"VISIBLE (who may load it: all, uid N for a user's own, none), and\n"
	"ROOT, the cache root its key dir is in: its path from the mount\n"
	"root, '.' for the top (a cache below it: triton/0 in\n"
	"TORCHINDUCTOR_CACHE_DIR).\n"
	"\n"
	"On a terminal, rows fit its width: keys show their first 16\n"
	"characters (any unique prefix names a kernel, in every command),\n"
	"then, as it is narrower, CREATED, FILES, STAGES, WARPS, ORIGIN,\n"
	"VISIBLE and ROOT are left out in that order, and long names are cut\n"
	"with '\u2026'.  A pipe or a file gets every column whole, as --json.\n",
	NULL,
	"Exit status: 0 success, 1 the store could not be read, 2 usage error.\n",
};

enum sort { BY_NAME, BY_KEY, BY_SIZE, BY_HITS, BY_MISSES, BY_LAST_HIT,
	    BY_CREATED };

static const char *const sort_names[] = {
	[BY_NAME] = "name",	  [BY_KEY] = "key",
	[BY_SIZE] = "size",	  [BY_HITS] = "hits",
	[BY_MISSES] = "misses",	  [BY_LAST_HIT] = "last-hit",
	[BY_CREATED] = "created",
};

static int cmp_u(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;	/* most first */
}

/* qsort_r's comparator; arg: the enum sort. */
static int cmp(const void *pa, const void *pb, void *arg)
{
	const struct tcfs_kernel_use *a = pa, *b = pb;
	int c = 0;

	switch (*(const enum sort *)arg) {
	case BY_NAME:
		c = strcmp(a->k.name, b->k.name);
		break;
	case BY_KEY:
		break;
	case BY_SIZE:
		c = cmp_u(a->k.total_bytes, b->k.total_bytes);
		break;
	case BY_HITS:
		c = cmp_u(a->hits, b->hits);
		break;
	case BY_MISSES:
		c = cmp_u(a->misses, b->misses);
		break;
	case BY_LAST_HIT:
		c = cmp_u((uint64_t)a->last_hit_ns, (uint64_t)b->last_hit_ns);
		break;
	case BY_CREATED:
		c = cmp_u((uint64_t)a->k.created_ns, (uint64_t)b->k.created_ns);
		break;
	}
	/* Total, as rows come in no order: a key dir may hold two. */
	c = c ? c : strcmp(a->k.key, b->k.key);
	c = c ? c : strcmp(a->k.name, b->k.name);
	return c ? c : (a->k.grp_ino > b->k.grp_ino) - (a->k.grp_ino < b->k.grp_ino);
}

static void target(const struct tcfs_kernel *k, char *buf, size_t len)
{
	if (k->backend[0])
		snprintf(buf, len, "%s-%s", k->backend, k->arch);
	else
		snprintf(buf, len, "-");
}

/* Cache roots already read, by inode: a store has few (the top, a cache
 * below it, users' own dirs), and reading each kernel's from the index
 * took a quarter of a list of 100,000. */
#define ROOTS 16

struct root {
	uint64_t ino;	/* 0: none yet */
	int bad;	/* could not be read: "?" */
	char path[PATH_MAX];
};

struct roots {
	struct root slot[ROOTS];
};

/* The kernel's cache root ("" for the top); "?" if it cannot be read.
 * Owned by r, until the next call. */
static const char *root_of(struct tcfs_store *s, struct roots *r,
			   const struct tcfs_kernel *k)
{
	struct root *e = &r->slot[k->root_ino % ROOTS];

	if (e->ino != k->root_ino || !e->ino) {
		e->ino = k->root_ino;
		e->bad = tcfs_kernel_root_at(s, k->root_ino, e->path,
					     sizeof(e->path)) < 0;
	}
	return e->bad ? "?" : e->path;
}

/* One kernel as an element of list --json's array. */
static void kernel_json(FILE *f, const struct tcfs_kernel_use *u,
			const char *root)
{
	const struct tcfs_kernel *k = &u->k;
	struct tcfs_json_obj o;
	char t[80];

	target(k, t, sizeof(t));
	tcfs_json_obj_begin(&o, f);
	tcfs_json_obj_str(&o, "name", k->name);
	tcfs_json_obj_str(&o, "key", k->key);
	tcfs_json_obj_str(&o, "target", t);
	tcfs_json_obj_str(&o, "backend", k->backend);
	tcfs_json_obj_str(&o, "arch", k->arch);
	tcfs_json_obj_int(&o, "num_warps", (int64_t)k->num_warps);
	tcfs_json_obj_int(&o, "num_stages", (int64_t)k->num_stages);
	tcfs_json_obj_int(&o, "size", (int64_t)k->total_bytes);
	tcfs_json_obj_int(&o, "files", (int64_t)u->files);
	tcfs_json_obj_int(&o, "hits", (int64_t)u->hits);
	tcfs_json_obj_int(&o, "misses", (int64_t)u->misses);
	if (u->last_hit_ns)
		tcfs_json_obj_seconds(&o, "last_hit", u->last_hit_ns);
	else
		tcfs_json_obj_null(&o, "last_hit");
	tcfs_json_obj_seconds(&o, "created", k->created_ns);
	tcfs_json_obj_str(&o, "root", root);
	if (k->uid >= 0)
		tcfs_json_obj_int(&o, "writer", (int64_t)k->uid);
	else
		tcfs_json_obj_null(&o, "writer");
	/* Who may load it: everyone, or the user who wrote it (null: a
	 * writer the mount did not trust, outside any user's own dir). */
	if (k->shared)
		tcfs_json_obj_str(&o, "visibility", "shared");
	else if (k->own_uid >= 0)
		tcfs_json_obj_int(&o, "visibility", (int64_t)k->own_uid);
	else
		tcfs_json_obj_null(&o, "visibility");
	/* Where it came from: here, import, unpack, remote. */
	tcfs_json_obj_str(&o, "origin", k->origin[0] ? k->origin : NULL);
	tcfs_json_obj_end(&o);
}

/* The array an element at a time, each written as it is made: 100,000
 * cJSON objects (two million nodes) built, printed and freed cost more
 * than the query behind them. */
static int print_json(struct tcfs_store *s, struct roots *roots,
		      const struct tcfs_kernel_use *u, size_t n)
{
	fputs(n ? "[" : "[]\n", stdout);
	for (size_t i = 0; i < n; i++) {
		kernel_json(stdout, &u[i], root_of(s, roots, &u[i].k));
		fputs(i + 1 < n ? ",\n" : "]\n", stdout);
	}
	return CLI_OK;
}

/*
 * The text table.  Its columns in order, each with the rank at which a
 * terminal too narrow for the row leaves it out (0: never), so that
 * what tells kernels apart and how they are used stays.  On a terminal
 * a key shows its first KEY_SHORT characters, which every command takes
 * as the key (a unique prefix); a pipe or a file gets every column
 * whole, for scripts.
 */
enum col { C_NAME, C_KEY, C_TARGET, C_WARPS, C_STAGES, C_SIZE, C_FILES,
	   C_HITS, C_MISSES, C_LAST, C_CREATED, C_ORIGIN, C_VISIBLE, C_ROOT,
	   NCOLS };

static const struct {
	const char *head;
	int right;	/* numbers: aligned right */
	int drop;	/* the order a narrow terminal leaves them out */
} cols[NCOLS] = {
	[C_NAME] = { "NAME", 0, 0 },	    [C_KEY] = { "KEY", 0, 0 },
	[C_TARGET] = { "TARGET", 0, 0 },   [C_WARPS] = { "WARPS", 1, 4 },
	[C_STAGES] = { "STAGES", 1, 3 },   [C_SIZE] = { "SIZE", 1, 0 },
	[C_FILES] = { "FILES", 1, 2 },	    [C_HITS] = { "HITS", 1, 0 },
	[C_MISSES] = { "MISSES", 1, 0 },   [C_LAST] = { "LAST HIT", 0, 0 },
	[C_CREATED] = { "CREATED", 0, 1 }, [C_ORIGIN] = { "ORIGIN", 0, 5 },
	[C_VISIBLE] = { "VISIBLE", 0, 6 }, [C_ROOT] = { "ROOT", 0, 7 },
};

#define KEY_SHORT 16
/* No name is cut shorter: "matmul_ker…" still tells kernels apart. */
#define NAME_MIN 12
#define CELL_MAX (4 * PATH_MAX)

/* One row's cells, printable; the caller's buffer. */
struct row {
	char cell[NCOLS][CELL_MAX];
};

/* A cell of a number; printf's parse of its format, for 100,000 rows of
 * five numbers, was a fifth of the table's time. */
static void number(char *cell, int64_t v)
{
	char buf[24];

	strcpy(cell, tcfs_decimal(v, buf));
}

static void row_of(struct tcfs_store *s, struct roots *roots,
		   const struct tcfs_kernel_use *u, int term, struct row *r)
{
	const struct tcfs_kernel *k = &u->k;
	const char *root = root_of(s, roots, k);
	char t[80];

	target(k, t, sizeof(t));
	tcfs_utf8_printable(k->name, r->cell[C_NAME], CELL_MAX);
	tcfs_utf8_printable(k->key, r->cell[C_KEY], CELL_MAX);
	if (term && strlen(r->cell[C_KEY]) > KEY_SHORT)
		r->cell[C_KEY][KEY_SHORT] = '\0';
	tcfs_utf8_printable(t, r->cell[C_TARGET], CELL_MAX);
	number(r->cell[C_WARPS], k->num_warps);
	number(r->cell[C_STAGES], k->num_stages);
	cli_human(k->total_bytes, r->cell[C_SIZE], CELL_MAX);
	number(r->cell[C_FILES], (int64_t)u->files);
	number(r->cell[C_HITS], (int64_t)u->hits);
	number(r->cell[C_MISSES], (int64_t)u->misses);
	if (u->last_hit_ns)
		cli_time(u->last_hit_ns, r->cell[C_LAST], CELL_MAX);
	else
		strcpy(r->cell[C_LAST], "never");
	cli_time(k->created_ns, r->cell[C_CREATED], CELL_MAX);
	strcpy(r->cell[C_ORIGIN], k->origin[0] ? k->origin : "-");
	if (k->shared)
		strcpy(r->cell[C_VISIBLE], "all");
	else if (k->own_uid >= 0)
		snprintf(r->cell[C_VISIBLE], CELL_MAX, "uid %lld",
			 (long long)k->own_uid);
	else
		strcpy(r->cell[C_VISIBLE], "none");
	if (root[0])
		tcfs_utf8_printable(root, r->cell[C_ROOT], CELL_MAX);
	else
		strcpy(r->cell[C_ROOT], ".");
}

/* The row's width with the columns shown, a space between two. */
static int row_width(const int *w, const int *shown)
{
	int sum = -1;

	for (int c = 0; c < NCOLS; c++)
		sum += shown[c] ? w[c] + 1 : 0;
	return sum;
}

/* Fits the row to a terminal of term columns (0: none, all shown whole):
 * columns left out in their drop order while even the shortest name
 * leaves the row too wide, then the names cut to what is left. */
static void fit(int *w, int *shown, int term)
{
	for (int c = 0; c < NCOLS; c++)
		shown[c] = 1;
	if (!term)
		return;
	for (int rank = 1; rank < NCOLS; rank++) {
		int name = w[C_NAME];

		w[C_NAME] = NAME_MIN < name ? NAME_MIN : name;
		if (row_width(w, shown) <= term) {
			w[C_NAME] = name;
			break;
		}
		w[C_NAME] = name;
		for (int c = 0; c < NCOLS; c++)
			if (cols[c].drop == rank)
				shown[c] = 0;
	}
	if (row_width(w, shown) > term) {
		int rest = row_width(w, shown) - w[C_NAME];

		w[C_NAME] = term - rest > NAME_MIN ? term - rest : NAME_MIN;
	}
}

static void spaces(int n)
{
	static const char blank[] = "                                ";

	for (; n > 0; n -= (int)sizeof(blank) - 1)
		fwrite(blank, 1,
		       n < (int)sizeof(blank) - 1 ? (size_t)n : sizeof(blank) - 1,
		       stdout);
}

static void print_row(char cell[][CELL_MAX], const int *w, const int *shown)
{
	char cut[CELL_MAX];
	int first = 1, last = NCOLS - 1;

	while (last > 0 && !shown[last])
		last--;
	for (int c = 0; c < NCOLS; c++) {
		const char *v = cell[c];
		int pad;

		if (!shown[c])
			continue;
		if (c == C_NAME)
			v = tcfs_utf8_cut(v, (size_t)w[c], cut, sizeof(cut));
		pad = w[c] - (int)tcfs_utf8_width(v);
		if (!first)
			putchar(' ');
		first = 0;
		if (cols[c].right)
			spaces(pad);
		fputs(v, stdout);
		if (!cols[c].right && c != last)
			spaces(pad);
	}
	putchar('\n');
}

static void print_text(struct tcfs_store *s, struct roots *roots,
		       const struct tcfs_kernel_use *u, size_t n)
{
	int term = cli_term_width(), w[NCOLS], shown[NCOLS];
	struct row *r = malloc(sizeof(*r));

	if (!r) {
		fprintf(stderr, "tcfs list: out of memory\n");
		return;
	}
	for (int c = 0; c < NCOLS; c++) {
		snprintf(r->cell[c], CELL_MAX, "%s", cols[c].head);
		w[c] = (int)tcfs_utf8_width(cols[c].head);
	}
	/* Two passes, as a row is large and a store may have 100,000. */
	for (size_t i = 0; i < n; i++) {
		row_of(s, roots, &u[i], term, r);
		for (int c = 0; c < NCOLS; c++) {
			int l = (int)tcfs_utf8_width(r->cell[c]);

			w[c] = l > w[c] ? l : w[c];
		}
	}
	fit(w, shown, term);
	for (int c = 0; c < NCOLS; c++)
		snprintf(r->cell[c], CELL_MAX, "%s", cols[c].head);
	print_row(r->cell, w, shown);
	for (size_t i = 0; i < n; i++) {
		row_of(s, roots, &u[i], term, r);
		print_row(r->cell, w, shown);
	}
	free(r);
}

/* --sort FIELD: one of sort_names. */
static const char *sort_opt(void *value, const char *arg)
{
	for (size_t i = 0; i < sizeof(sort_names) / sizeof(*sort_names); i++)
		if (strcmp(sort_names[i], arg) == 0) {
			*(enum sort *)value = (enum sort)i;
			return NULL;
		}
	return "no field (name, key, size, hits, misses, last-hit, created)";
}

/* Lists the kernels f selects, not hit since unused (when >= 0). */
static int run(const struct cli_common *co, const struct tcfs_kernel_filter *f,
	       int64_t unused, enum sort sort_by)
{
	struct tcfs_kernel_use *u = NULL;
	struct roots *roots;
	struct tcfs_store *s;
	size_t n = 0;
	int rc;

	if (cli_open_store("list", &co->store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	cli_mount_sync(s, NULL);
	rc = tcfs_kernel_uses(s, f, &u, &n);
	if (rc < 0) {
		cli_lib_err("list", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	if (unused >= 0)
		n = tcfs_kernel_unused_since(u, n, unused);
	if (n > 1)
		qsort_r(u, n, sizeof(*u), cmp, &sort_by);
	roots = calloc(1, sizeof(*roots));
	if (!roots) {
		cli_lib_err("list", -ENOMEM, tcfs_store_path(s));
		rc = -ENOMEM;
	} else if (co->json)
		rc = print_json(s, roots, u, n) == CLI_OK ? 0 : -1;
	else
		print_text(s, roots, u, n);
	free(roots);
	free(u);
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cmd_list(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_kernel_filter f = { 0 };
	enum sort sort_by = BY_NAME;
	int64_t unused = -1;	/* --unused-since, when given */
	char **args;
	int rc;
	struct opt opts[] = {
		CLI_OPTS_FILTER(&f),
		OPT_FN(0, "unused-since", "T", &unused, cli_opt_time,
		       "kernels not hit since T (one never hit: not since it "
		       "was created); T as for tcfs stats --since: 7d, "
		       "2026-11-01, @EPOCH-SECONDS"),
		OPT_FN(0, "sort", "FIELD", &sort_by, sort_opt,
		       "name (the default) or key, A to Z; size, hits, misses, "
		       "last-hit or created, most first"),
		CLI_OPTS_COMMON(&co, "print a JSON array of {name, key, target, "
				"backend, arch, num_warps, num_stages, size, "
				"files, hits, misses, last_hit, created, root} "
				"(times in seconds since the epoch; last_hit null "
				"when never hit; root \"\" for the top)"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	return run(&co, &f, unused, sort_by);
}
