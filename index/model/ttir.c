/* ttir: two kernels' TTIR compared by signature and constants. */
#include "index/model/ttir.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/json.h"
#include "index/model/ttconst.h"
#include "index/model/ttspan.h"

/* Brackets nest no deeper than this in any signature Triton writes. */
#define TTIR_DEPTH_MAX 64
/* No kernel has this many arguments: beyond, the text is not Triton's. */
#define TTIR_ARGS_MAX 1024

struct arg {
	struct span name;	/* its loc name; n 0: none */
	struct span type;	/* its type with its attributes */
};

struct sig {
	struct arg *arg;	/* owned */
	size_t n;
};

/* Past the string literal opening at p; NULL when the text ends first or
 * a line does (MLIR strings hold none). */
static const char *string_end(const char *p, const char *end)
{
	assert(p < end && *p == '"');
	for (p++; p < end && *p != '\n'; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* The first place from p where at() holds outside brackets and strings;
 * NULL when the text ends first or its brackets do not pair. */
static const char *top_level(const char *p, const char *end,
			     int (*at)(const char *q, const char *end))
{
	char open[TTIR_DEPTH_MAX];
	size_t depth = 0;

	while (p && p < end) {
		const char *c = *p ? strchr("(<[{)>]}", *p) : NULL;

		if (depth == 0 && at(p, end))
			return p;
		if (*p == '"') {
			p = string_end(p, end);
			continue;
		}
		if (*p == '-' && p + 1 < end && p[1] == '>') {
			p += 2;	/* a function type's arrow closes nothing */
			continue;
		}
		if (c && c - "(<[{)>]}" < 4) {
			if (depth == TTIR_DEPTH_MAX)
				return NULL;
			open[depth++] = c[4];
		} else if (c) {
			if (depth == 0 || open[depth - 1] != *p)
				return NULL;
			depth--;
		}
		p++;
	}
	return NULL;
}

static int at_arg_end(const char *q, const char *end)
{
	(void)end;
	return *q == ',' || *q == ')';
}

static int at_colon(const char *q, const char *end)
{
	(void)end;
	return *q == ':';
}

/* A location: "loc(" after a space (the colon before the type is there
 * before any place this is asked about). */
static int at_loc(const char *q, const char *end)
{
	return end - q >= 4 && memcmp(q, "loc(", 4) == 0 && tt_is_space(q[-1]);
}

/* Parses one argument, "%NAME: TYPE {ATTRS} loc("NAME"(#loc))". */
static int parse_arg(const char *p, const char *end, struct arg *a)
{
	struct span s = tt_trim(p, end);
	const char *colon, *loc;

	memset(a, 0, sizeof(*a));
	if (s.n < 3 || s.p[0] != '%')
		return -EINVAL;
	end = s.p + s.n;
	colon = top_level(s.p, end, at_colon);
	if (!colon)
		return -EINVAL;
	loc = top_level(colon + 1, end, at_loc);
	a->type = tt_trim(colon + 1, loc ? loc : end);
	if (a->type.n == 0)
		return -EINVAL;
	if (loc) {
		struct span in = tt_trim(loc + 4, end);
		const char *q = in.n && in.p[0] == '"' ?
					string_end(in.p, in.p + in.n) : NULL;

		if (q && q - in.p > 2)
			a->name = (struct span){ in.p + 1, (size_t)(q - in.p - 2) };
	}
	return 0;
}

/* The arguments of the list opening at p (past its '('). */
static int parse_args(const char *p, const char *end, struct sig *sig)
{
	for (;;) {
		const char *e = top_level(p, end, at_arg_end);
		struct arg *grown;
		int rc;

		if (!e)
			return -EINVAL;
		if (*e == ')' && sig->n == 0 && tt_trim(p, e).n == 0)
			return 0;	/* "()" */
		if (sig->n == TTIR_ARGS_MAX)
			return -EINVAL;
		grown = realloc(sig->arg, (sig->n + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		sig->arg = grown;
		rc = parse_arg(p, e, &sig->arg[sig->n]);
		if (rc < 0)
			return rc;
		sig->n++;
		if (*e == ')')
			return 0;
		p = e + 1;
	}
}

/* The function whose "tt.func" ends at p: "[public|private|nested] @SYM(".
 * Returns where its argument list opens (past the '('), with *pub whether
 * it is public and *sym its symbol; NULL when p starts no signature. */
static const char *func_at(const char *p, const char *end, int *pub,
			   struct span *sym)
{
	const char *w;

	*pub = 0;
	if (p >= end || !tt_is_space(*p))
		return NULL;	/* "tt.func_x", or the text's end */
	for (int words = 0;; words++) {
		while (p < end && tt_is_space(*p))
			p++;
		if (p < end && *p == '@')
			break;
		for (w = p; p < end && tt_is_ident(*p);)
			p++;
		if (p == w || words == 3)
			return NULL;
		*pub |= p - w == 6 && memcmp(w, "public", 6) == 0;
	}
	w = ++p;
	if (p < end && *p == '"') {
		p = string_end(p, end);
		if (!p)
			return NULL;
		*sym = (struct span){ w + 1, (size_t)(p - w - 2) };
	} else {
		while (p < end && tt_is_ident(*p))
			p++;
		*sym = (struct span){ w, (size_t)(p - w) };
	}
	return p < end && *p == '(' ? p + 1 : NULL;
}

/* The signature of the kernel function: the tt.func named name, else
 * the first public one. */
static int find_sig(const char *t, size_t len, const char *name,
		    struct sig *sig)
{
	static const char kw[] = "tt.func";
	const char *end = t + len, *p = t, *first = NULL, *args = NULL;
	struct span want = { name, strlen(name) };

	while (!args && (p = memmem(p, (size_t)(end - p), kw, sizeof(kw) - 1))) {
		struct span sym;
		int pub;
		const char *q = func_at(p + sizeof(kw) - 1, end, &pub, &sym);

		p += sizeof(kw) - 1;
		if (q && tt_span_eq(sym, want))
			args = q;
		else if (q && pub && !first)
			first = q;
	}
	if (!args)
		args = first;
	return args ? parse_args(args, end, sig) : -EINVAL;
}

/* A piece of the text as a JSON string, cut at TCFS_TTIR_TEXT_MAX. */
static cJSON *text_of(const struct span *s)
{
	return s ? tcfs_json_cut(s->p, s->n, TCFS_TTIR_TEXT_MAX) : cJSON_CreateNull();
}

/* {from, to}, with a name or index first when arg; NULL: no memory. */
static cJSON *change(const struct arg *arg, size_t index,
		     const struct span *from, const struct span *to)
{
	cJSON *o = cJSON_CreateObject();

	if (o && arg && arg->name.n)
		cJSON_AddItemToObject(o, "name", text_of(&arg->name));
	else if (o && arg)
		cJSON_AddNumberToObject(o, "index", (double)index);
	if (o) {
		cJSON_AddItemToObject(o, "from", text_of(from));
		cJSON_AddItemToObject(o, "to", text_of(to));
	}
	if (o && cJSON_GetArraySize(o) != (arg ? 3 : 2)) {
		cJSON_Delete(o);
		o = NULL;
	}
	return o;
}

static int add(cJSON *arr, cJSON *one)
{
	if (one && cJSON_AddItemToArray(arr, one))
		return 0;
	cJSON_Delete(one);
	return -ENOMEM;
}

/* b's argument j's partner in a: the unused one of its name, else (either
 * unnamed) the one at its place; -1 when none. */
static long partner(const struct sig *a, const char *used,
		    const struct arg *arg, size_t j)
{
	for (size_t i = 0; arg->name.n && i < a->n; i++)
		if (!used[i] && tt_span_eq(a->arg[i].name, arg->name))
			return (long)i;
	if (j < a->n && !used[j] && (!arg->name.n || !a->arg[j].name.n))
		return (long)j;
	return -1;
}

/* Adds b's argument j (from: a's type) to arr, or counts it in *more
 * past TCFS_TTIR_SHOW_MAX. */
static int add_arg(cJSON *arr, const struct arg *arg, size_t j,
		   const struct span *from, const struct span *to,
		   size_t *more)
{
	if (cJSON_GetArraySize(arr) < TCFS_TTIR_SHOW_MAX)
		return add(arr, change(arg, j, from, to));
	(*more)++;
	return 0;
}

static int diff_args(const struct sig *a, const struct sig *b, cJSON *arr,
		     size_t *more)
{
	char *used = calloc(a->n + 1, 1);
	int rc = used && arr ? 0 : -ENOMEM;

	for (size_t j = 0; rc == 0 && j < b->n; j++) {
		const struct arg *to = &b->arg[j];
		long i = partner(a, used, to, j);

		if (i >= 0)
			used[i] = 1;
		if (i >= 0 && tt_span_eq(a->arg[i].type, to->type))
			continue;
		rc = add_arg(arr, to, j, i >= 0 ? &a->arg[i].type : NULL,
			     &to->type, more);
	}
	for (size_t i = 0; rc == 0 && i < a->n; i++)
		if (!used[i])
			rc = add_arg(arr, &a->arg[i], i, &a->arg[i].type, NULL,
				     more);
	free(used);
	return rc;
}

int tcfs_ttir_diff(const char *a, size_t alen, const char *b, size_t blen,
		   const char *name, cJSON **out)
{
	struct sig sa = { 0 }, sb = { 0 };
	size_t more_args = 0, more_consts = 0;
	cJSON *o = NULL;
	int rc = 0;

	*out = NULL;
	if (alen > TCFS_TTIR_MAX || blen > TCFS_TTIR_MAX)
		return -EFBIG;
	rc = find_sig(a, alen, name, &sa);
	if (rc == 0)
		rc = find_sig(b, blen, name, &sb);
	if (rc == 0) {
		o = cJSON_CreateObject();
		rc = o ? 0 : -ENOMEM;
	}
	if (rc == 0)
		rc = diff_args(&sa, &sb, cJSON_AddArrayToObject(o, "arguments"),
			       &more_args);
	if (rc == 0)
		rc = tcfs_ttconst_diff(a, alen, b, blen,
				       cJSON_AddArrayToObject(o, "constants"),
				       TCFS_TTIR_SHOW_MAX, &more_consts);
	if (rc == 0 && !cJSON_AddNumberToObject(o, "unlisted",
						(double)(more_args + more_consts)))
		rc = -ENOMEM;
	free(sa.arg);
	free(sb.arg);
	if (rc < 0)
		cJSON_Delete(o);
	else
		*out = o;
	return rc;
}
