/* ttir: two kernels' TTIR compared by signature and constants. */
#include "index/model/ttir.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/json.h"

/* Brackets nest no deeper than this in any signature Triton writes. */
#define TTIR_DEPTH_MAX 64
/* No kernel has this many arguments: beyond, the text is not Triton's. */
#define TTIR_ARGS_MAX 1024

/* A piece of the text: not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

struct arg {
	struct span name;	/* its loc name; n 0: none */
	struct span type;	/* its type with its attributes */
};

struct sig {
	struct arg *arg;	/* owned */
	size_t n;
};

struct consts {
	struct span *c;		/* owned; each an arith.constant's operand */
	size_t n;
	int *matched;		/* owned; one per constant */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static struct span trim(const char *p, const char *end)
{
	while (p < end && is_space(*p))
		p++;
	while (end > p && is_space(end[-1]))
		end--;
	return (struct span){ p, (size_t)(end - p) };
}

static int span_eq(struct span a, struct span b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

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
	return end - q >= 4 && memcmp(q, "loc(", 4) == 0 && is_space(q[-1]);
}

/* Parses one argument, "%NAME: TYPE {ATTRS} loc("NAME"(#loc))". */
static int parse_arg(const char *p, const char *end, struct arg *a)
{
	struct span s = trim(p, end);
	const char *colon, *loc;

	memset(a, 0, sizeof(*a));
	if (s.n < 3 || s.p[0] != '%')
		return -EINVAL;
	end = s.p + s.n;
	colon = top_level(s.p, end, at_colon);
	if (!colon)
		return -EINVAL;
	loc = top_level(colon + 1, end, at_loc);
	a->type = trim(colon + 1, loc ? loc : end);
	if (a->type.n == 0)
		return -EINVAL;
	if (loc) {
		struct span in = trim(loc + 4, end);
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
		if (*e == ')' && sig->n == 0 && trim(p, e).n == 0)
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

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.' ||
	       c == '-';
}

/* The function whose "tt.func" ends at p: "[public|private|nested] @SYM(".
 * Returns where its argument list opens (past the '('), with *pub whether
 * it is public and *sym its symbol; NULL when p starts no signature. */
static const char *func_at(const char *p, const char *end, int *pub,
			   struct span *sym)
{
	const char *w;

	*pub = 0;
	if (p >= end || !is_space(*p))
		return NULL;	/* "tt.func_x", or the text's end */
	for (int words = 0;; words++) {
		while (p < end && is_space(*p))
			p++;
		if (p < end && *p == '@')
			break;
		for (w = p; p < end && is_ident(*p);)
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
		while (p < end && is_ident(*p))
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
		if (q && span_eq(sym, want))
			args = q;
		else if (q && pub && !first)
			first = q;
	}
	if (!args)
		args = first;
	return args ? parse_args(args, end, sig) : -EINVAL;
}

/* Every arith.constant's operand ("1024 : i32"), in order. */
static int collect_consts(const char *t, size_t len, struct consts *c)
{
	static const char op[] = "arith.constant ";
	const char *end = t + len, *p = t;
	size_t cap = 0;

	while ((p = memmem(p, (size_t)(end - p), op, sizeof(op) - 1))) {
		const char *v = p + sizeof(op) - 1;
		const char *nl = memchr(v, '\n', (size_t)(end - v));
		const char *le = nl ? nl : end;
		const char *loc = memmem(v, (size_t)(le - v), " loc(", 5);

		if (c->n == cap) {
			struct span *grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(c->c, cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			c->c = grown;
		}
		c->c[c->n++] = trim(v, loc ? loc : le);
		p = le;
	}
	c->matched = calloc(c->n + 1, sizeof(*c->matched));
	return c->matched ? 0 : -ENOMEM;
}

struct ref {
	struct span s;
	size_t i;
};

static int span_cmp(struct span a, struct span b)
{
	int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);

	return c ? c : (a.n > b.n) - (a.n < b.n);
}

static int ref_cmp(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;
	int c = span_cmp(a->s, b->s);

	return c ? c : (a->i > b->i) - (a->i < b->i);
}

static struct ref *refs_of(const struct consts *c)
{
	struct ref *r = malloc((c->n + 1) * sizeof(*r));

	for (size_t i = 0; r && i < c->n; i++)
		r[i] = (struct ref){ c->c[i], i };
	if (r)
		qsort(r, c->n, sizeof(*r), ref_cmp);
	return r;
}

/* Marks the constants a and b share, each as often as both have it: what
 * is left unmarked is what changed.  Sorted, so 60,000 constants a side
 * cost no more than a sort. */
static int mark_common(struct consts *a, struct consts *b)
{
	struct ref *ra = refs_of(a), *rb = refs_of(b);
	size_t i = 0, j = 0;

	while (ra && rb && i < a->n && j < b->n) {
		int c = span_cmp(ra[i].s, rb[j].s);

		if (c == 0) {
			a->matched[ra[i++].i] = 1;
			b->matched[rb[j++].i] = 1;
		} else if (c < 0) {
			i++;
		} else {
			j++;
		}
	}
	free(rb);
	free(ra);
	return ra && rb ? 0 : -ENOMEM;
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
		if (!used[i] && span_eq(a->arg[i].name, arg->name))
			return (long)i;
	if (j < a->n && !used[j] && (!arg->name.n || !a->arg[j].name.n))
		return (long)j;
	return -1;
}

static int diff_args(const struct sig *a, const struct sig *b, cJSON *arr)
{
	char *used = calloc(a->n + 1, 1);
	int rc = used && arr ? 0 : -ENOMEM;

	for (size_t j = 0; rc == 0 && j < b->n; j++) {
		const struct arg *to = &b->arg[j];
		long i = partner(a, used, to, j);

		if (i >= 0)
			used[i] = 1;
		if (i >= 0 && span_eq(a->arg[i].type, to->type))
			continue;
		if (cJSON_GetArraySize(arr) < TCFS_TTIR_SHOW_MAX)
			rc = add(arr, change(to, j, i >= 0 ? &a->arg[i].type
							   : NULL, &to->type));
	}
	for (size_t i = 0; rc == 0 && i < a->n; i++)
		if (!used[i] && cJSON_GetArraySize(arr) < TCFS_TTIR_SHOW_MAX)
			rc = add(arr, change(&a->arg[i], i, &a->arg[i].type,
					     NULL));
	free(used);
	return rc;
}

/* Splits "VALUE : TYPE" at its last " : "; 0 when it has none. */
static int split_const(const struct span *c, struct span *value,
		       struct span *type)
{
	for (size_t i = c->n; i >= 3; i--) {
		if (memcmp(c->p + i - 3, " : ", 3) == 0) {
			*value = (struct span){ c->p, i - 3 };
			*type = (struct span){ c->p + i, c->n - i };
			return 1;
		}
	}
	return 0;
}

/* A tensor constant of the same value in another shape. */
static int shape_only(const struct span *a, const struct span *b)
{
	struct span va, ta, vb, tb;

	return a && b && split_const(a, &va, &ta) && split_const(b, &vb, &tb) &&
	       span_eq(va, vb) && ta.n > 7 && memcmp(ta.p, "tensor<", 7) == 0 &&
	       tb.n > 7 && memcmp(tb.p, "tensor<", 7) == 0;
}

/* Whether arr already holds the change from -> to. */
static int has_change(const cJSON *arr, const cJSON *from, const cJSON *to)
{
	for (const cJSON *e = arr->child; e; e = e->next)
		if (cJSON_Compare(cJSON_GetObjectItem(e, "from"), from, 1) &&
		    cJSON_Compare(cJSON_GetObjectItem(e, "to"), to, 1))
			return 1;
	return 0;
}

/* The constants left unmarked, paired in order: the k-th that went with
 * the k-th that came. */
static int diff_consts(const struct consts *a, const struct consts *b,
		       cJSON *arr)
{
	size_t i = 0, j = 0;
	int rc = arr ? 0 : -ENOMEM;

	while (rc == 0 && cJSON_GetArraySize(arr) < TCFS_TTIR_SHOW_MAX) {
		const struct span *from, *to;
		cJSON *one;

		while (i < a->n && a->matched[i])
			i++;
		while (j < b->n && b->matched[j])
			j++;
		from = i < a->n ? &a->c[i++] : NULL;
		to = j < b->n ? &b->c[j++] : NULL;
		if (!from && !to)
			break;
		if (shape_only(from, to))
			continue;
		one = change(NULL, 0, from, to);
		/* Each change once: a BLOCK constant is often made twice. */
		if (one && has_change(arr, cJSON_GetObjectItem(one, "from"),
				      cJSON_GetObjectItem(one, "to")))
			cJSON_Delete(one);
		else
			rc = add(arr, one);
	}
	return rc;
}

int tcfs_ttir_diff(const char *a, size_t alen, const char *b, size_t blen,
		   const char *name, cJSON **out)
{
	struct sig sa = { 0 }, sb = { 0 };
	struct consts ca = { 0 }, cb = { 0 };
	cJSON *o = NULL;
	int rc = 0;

	*out = NULL;
	if (alen > TCFS_TTIR_MAX || blen > TCFS_TTIR_MAX)
		return -EFBIG;
	rc = find_sig(a, alen, name, &sa);
	if (rc == 0)
		rc = find_sig(b, blen, name, &sb);
	if (rc == 0)
		rc = collect_consts(a, alen, &ca);
	if (rc == 0)
		rc = collect_consts(b, blen, &cb);
	if (rc == 0)
		rc = mark_common(&ca, &cb);
	if (rc == 0) {
		o = cJSON_CreateObject();
		rc = o ? 0 : -ENOMEM;
	}
	if (rc == 0)
		rc = diff_args(&sa, &sb, cJSON_AddArrayToObject(o, "arguments"));
	if (rc == 0)
		rc = diff_consts(&ca, &cb, cJSON_AddArrayToObject(o, "constants"));
	free(sa.arg);
	free(sb.arg);
	free(ca.c);
	free(ca.matched);
	free(cb.c);
	free(cb.matched);
	if (rc < 0)
		cJSON_Delete(o);
	else
		*out = o;
	return rc;
}
