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
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static const struct opt_cmd cmd = {
	"list", "", 0, 0, "",
	"One row per kernel in the store: name, key, target (BACKEND-ARCH),\n"
	"warps, stages, size (every file of its key dir), files, hits and\n"
	"misses (every probe the mount logged of it, ever), when it was last\n"
	"hit and when it was created (its group file landed), and the cache\n"
	"root its key dir is in: its path from the mount root, '.' for the\n"
	"top (a cache below it: triton/0 in TORCHINDUCTOR_CACHE_DIR).\n",
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
static cJSON *kernel_json(const struct tcfs_kernel_use *u, const char *root)
{
	const struct tcfs_kernel *k = &u->k;
	cJSON *o = cJSON_CreateObject();
	char t[80];

	target(k, t, sizeof(t));
	cJSON_AddStringToObject(o, "name", k->name);
	cJSON_AddStringToObject(o, "key", k->key);
	cJSON_AddStringToObject(o, "target", t);
	cJSON_AddStringToObject(o, "backend", k->backend);
	cJSON_AddStringToObject(o, "arch", k->arch);
	cJSON_AddNumberToObject(o, "num_warps", (double)k->num_warps);
	cJSON_AddNumberToObject(o, "num_stages", (double)k->num_stages);
	cJSON_AddNumberToObject(o, "size", (double)k->total_bytes);
	cJSON_AddNumberToObject(o, "files", (double)u->files);
	cJSON_AddNumberToObject(o, "hits", (double)u->hits);
	cJSON_AddNumberToObject(o, "misses", (double)u->misses);
	if (u->last_hit_ns)
		cJSON_AddNumberToObject(o, "last_hit",
					(double)u->last_hit_ns / 1e9);
	else
		cJSON_AddNullToObject(o, "last_hit");
	cJSON_AddNumberToObject(o, "created", (double)k->created_ns / 1e9);
	cJSON_AddStringToObject(o, "root", root);
	if (k->uid >= 0)
		cJSON_AddNumberToObject(o, "writer", (double)k->uid);
	else
		cJSON_AddNullToObject(o, "writer");
	/* Who may load it: everyone, or the user who wrote it (null: a
	 * writer the mount did not trust, outside any user's own dir). */
	if (k->shared)
		cJSON_AddStringToObject(o, "visibility", "shared");
	else if (k->own_uid >= 0)
		cJSON_AddNumberToObject(o, "visibility", (double)k->own_uid);
	else
		cJSON_AddNullToObject(o, "visibility");
	/* Where it came from: here, import, unpack, remote. */
	if (k->origin[0])
		cJSON_AddStringToObject(o, "origin", k->origin);
	else
		cJSON_AddNullToObject(o, "origin");
	return o;
}

/* The array an element at a time: one document of 100,000 objects (two
 * million cJSON nodes) cost more than the query behind it. */
static int print_json(struct tcfs_store *s, struct roots *roots,
		      const struct tcfs_kernel_use *u, size_t n)
{
	fputs(n ? "[" : "[]\n", stdout);
	for (size_t i = 0; i < n; i++) {
		cJSON *o = kernel_json(&u[i], root_of(s, roots, &u[i].k));
		char *text = o && tcfs_json_sanitize(o) == 0
				     ? cJSON_PrintUnformatted(o) : NULL;

		cJSON_Delete(o);
		if (!text) {
			fprintf(stderr, "tcfs: out of memory building JSON\n");
			return CLI_FAIL;
		}
		printf("%s%s", text, i + 1 < n ? ",\n" : "]\n");
		free(text);
	}
	return CLI_OK;
}

static void print_text(struct tcfs_store *s, struct roots *roots,
		       const struct tcfs_kernel_use *u, size_t n)
{
	printf("%-24s %-52s %-12s %5s %6s %9s %5s %6s %6s %-19s %-19s %-6s "
	       "%-7s %s\n", "NAME", "KEY", "TARGET", "WARPS", "STAGES", "SIZE",
	       "FILES", "HITS", "MISSES", "LAST HIT", "CREATED", "ORIGIN",
	       "VISIBLE", "ROOT");
	for (size_t i = 0; i < n; i++) {
		const struct tcfs_kernel *k = &u[i].k;
		char name[TCFS_UTF8_SHOW_MAX], key[TCFS_UTF8_SHOW_MAX];
		char shown[TCFS_UTF8_SHOW_MAX], rshown[4 * PATH_MAX];
		const char *root = root_of(s, roots, k);
		char t[80], size[32], last[32], made[32], vis[24];

		target(k, t, sizeof(t));
		if (u[i].last_hit_ns)
			cli_time(u[i].last_hit_ns, last, sizeof(last));
		else
			snprintf(last, sizeof(last), "never");
		if (k->shared)
			snprintf(vis, sizeof(vis), "all");
		else if (k->own_uid >= 0)
			snprintf(vis, sizeof(vis), "uid %lld",
				 (long long)k->own_uid);
		else
			snprintf(vis, sizeof(vis), "none");
		printf("%-24s %-52s %-12s %5lld %6lld %9s %5llu %6llu %6llu "
		       "%-19s %-19s %-6s %-7s %s\n",
		       tcfs_utf8_printable(k->name, name, sizeof(name)),
		       tcfs_utf8_printable(k->key, key, sizeof(key)),
		       tcfs_utf8_printable(t, shown, sizeof(shown)),
		       (long long)k->num_warps, (long long)k->num_stages,
		       cli_human(k->total_bytes, size, sizeof(size)),
		       (unsigned long long)u[i].files,
		       (unsigned long long)u[i].hits,
		       (unsigned long long)u[i].misses, last,
		       cli_time(k->created_ns, made, sizeof(made)),
		       k->origin[0] ? k->origin : "-", vis,
		       root[0] ? tcfs_utf8_printable(root, rshown, sizeof(rshown))
			       : ".");
	}
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
