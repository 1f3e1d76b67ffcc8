/* ttconst: two kernels' arith.constants, paired by the part each plays. */
#include "index/model/ttconst.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/json.h"
#include "index/model/ttir.h"
#include "index/model/ttspan.h"

/* The alignment's table: 2 bytes a cell, so 8 MiB at most.  The common
 * ends are left out of it first: a BLOCK changed leaves nothing to align
 * (the parts are the same), one constant inserted a table of one row. */
#define TTCONST_CELLS_MAX (4u << 20)
/* A change names at most this many of the constants that make it. */
#define TTCONST_NAMES_MAX 8

struct konst {
	struct span val;	/* "1024 : i32" */
	struct span ssa;	/* its SSA name, "offs_17"; n 0: none */
	struct span name;	/* its loc name, "offs"; n 0: none */
	struct span op;		/* the op of its first use; n 0: unused */
	size_t pos;		/* the operand it is there */
	size_t line;
	/* What it is paired by (ttconst.h): its name, op and pos (role),
	 * with its type less a tensor's shape (part); its name and that
	 * type (named); the key of the pass under way. */
	uint64_t role, part, named, key;
	long peer;		/* its partner in the other text; -1: none */
};

struct side {
	struct konst *c;	/* owned */
	size_t n, cap;
};

/* A change to report: from (a's) or to (b's) may be NULL, not both. */
struct change {
	const struct konst *from, *to;
	size_t order;
	int dup;		/* made by an earlier one too */
	struct change *next;	/* the next that makes it again */
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Past the SSA name a line defines ("%NAME = ", "%NAME:2 = "), which
 * *ssa gets; else the line's first word, and *ssa none. */
static const char *result_of(const char *p, const char *le, struct span *ssa)
{
	const char *q;

	*ssa = (struct span){ NULL, 0 };
	while (p < le && tt_is_space(*p))
		p++;
	if (p == le || *p != '%')
		return p;
	for (q = p + 1; q < le && tt_is_ident(*q);)
		q++;
	ssa->p = p + 1;
	ssa->n = (size_t)(q - p - 1);
	while (q < le && (*q == ':' || is_digit(*q)))
		q++;
	while (q < le && *q == ' ')
		q++;
	if (q == le || *q != '=') {
		*ssa = (struct span){ NULL, 0 };
		return p;
	}
	for (q++; q < le && *q == ' ';)
		q++;
	return q;
}

/* The op at p: a word, or a generic op's quoted name. */
static struct span op_at(const char *p, const char *le)
{
	const char *q = p;

	if (q < le && *q == '"') {
		for (q++; q < le && *q != '"';)
			q++;
		return (struct span){ p, (size_t)(q - p) };
	}
	while (q < le && tt_is_ident(*q))
		q++;
	return (struct span){ p, (size_t)(q - p) };
}

static int is_word(struct span s, const char *w)
{
	return tt_span_eq(s, (struct span){ w, strlen(w) });
}

/* The loc name in an SSA name: less the "_N" MLIR adds to keep names
 * apart; none when the name is made from the value (%c32_i32, %cst_3,
 * %true) or a number (%12), as those tell no part. */
static struct span loc_name(struct span ssa)
{
	struct span s = ssa;
	size_t i = s.n;

	while (i > 0 && is_digit(s.p[i - 1]))
		i--;
	if (i > 1 && i < s.n && s.p[i - 1] == '_')
		s.n = i - 1;
	if (s.n == 0 || is_digit(s.p[0]) ||
	    (s.p[0] == 'c' && s.n > 1 && (is_digit(s.p[1]) || s.p[1] == '-')) ||
	    is_word(s, "cst") || is_word(s, "true") || is_word(s, "false"))
		return (struct span){ NULL, 0 };
	return s;
}

static int add_const(struct side *s, const char *p, const char *le,
		     const char *v, size_t line)
{
	const char *loc = memmem(v, (size_t)(le - v), " loc(", 5);
	struct konst *k;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct konst *grown = realloc(s->c, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->c = grown;
		s->cap = cap;
	}
	k = &s->c[s->n++];
	memset(k, 0, sizeof(*k));
	k->val = tt_trim(v, loc ? loc : le);
	result_of(p, le, &k->ssa);
	k->name = loc_name(k->ssa);
	k->line = line;
	k->peer = -1;
	return 0;
}

/* Calls fn for each line of the text, with its number. */
static int each_line(const char *t, size_t len, void *ctx,
		     int (*fn)(void *ctx, const char *p, const char *le,
			       size_t line))
{
	const char *end = t + len;
	size_t line = 0;
	int rc = 0;

	for (const char *p = t; rc == 0 && p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		rc = fn(ctx, p, nl ? nl : end, line);
		p = nl ? nl + 1 : end;
	}
	return rc;
}

static int const_line(void *ctx, const char *p, const char *le, size_t line)
{
	static const char op[] = "arith.constant ";
	const char *v = memmem(p, (size_t)(le - p), op, sizeof(op) - 1);

	return v ? add_const(ctx, p, le, v + sizeof(op) - 1, line) : 0;
}

/* The constants by SSA name, then line: where a use finds its own. */
struct uses {
	struct side *s;
	const struct konst **by_ssa;	/* owned */
};

static int ssa_cmp(const void *x, const void *y)
{
	const struct konst *a = *(const struct konst *const *)x;
	const struct konst *b = *(const struct konst *const *)y;
	int c = tt_span_cmp(a->ssa, b->ssa);

	return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* The constant named ssa that a use on line line means: the last one of
 * that name before it (a name is reused in another function), found by
 * halves however often it is. */
static struct konst *defined(const struct uses *u, struct span ssa,
			     size_t line)
{
	size_t lo = 0, hi = u->s->n;

	while (lo < hi) {	/* the first at or past (ssa, line) */
		size_t mid = lo + (hi - lo) / 2;
		int c = tt_span_cmp(u->by_ssa[mid]->ssa, ssa);

		if (c < 0 || (c == 0 && u->by_ssa[mid]->line < line))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !tt_span_eq(u->by_ssa[lo - 1]->ssa, ssa))
		return NULL;
	return (struct konst *)u->by_ssa[lo - 1];
}

/* Notes, for each constant a line's operands name, that this op (and
 * operand) is its first use. */
static int use_line(void *ctx, const char *p, const char *le, size_t line)
{
	const struct uses *u = ctx;
	struct span res, op;
	size_t pos = 0;
	const char *q = result_of(p, le, &res);

	op = op_at(q, le);
	for (q += op.n; q < le; pos++) {
		const char *w;
		struct konst *k;

		q = memchr(q, '%', (size_t)(le - q));
		if (!q)
			break;
		for (w = ++q; q < le && tt_is_ident(*q);)
			q++;
		k = defined(u, (struct span){ w, (size_t)(q - w) }, line);
		if (k && !k->op.n) {
			k->op = op;
			k->pos = pos;
		}
	}
	return 0;
}

/* Splits "VALUE : TYPE" at its last " : "; 0 when it has none. */
static int split_const(struct span c, struct span *value, struct span *type)
{
	for (size_t i = c.n; i >= 3; i--) {
		if (memcmp(c.p + i - 3, " : ", 3) == 0) {
			*value = (struct span){ c.p, i - 3 };
			*type = (struct span){ c.p + i, c.n - i };
			return 1;
		}
	}
	return 0;
}

static int is_tensor(struct span type)
{
	return type.n > 7 && memcmp(type.p, "tensor<", 7) == 0;
}

/* A constant's type less a tensor's shape: "i32" of "tensor<4x8xi32>",
 * marked T; a scalar's as it is. */
static struct span elem_type(const struct konst *k, int *tensor)
{
	struct span v, t;

	*tensor = 0;
	if (!split_const(k->val, &v, &t))
		return (struct span){ NULL, 0 };
	*tensor = is_tensor(t) && t.p[t.n - 1] == '>';
	if (!*tensor)
		return t;
	for (size_t i = t.n - 1; i > 7; i--)
		if (t.p[i - 1] == 'x' || t.p[i - 1] == '<')
			return (struct span){ t.p + i, t.n - 1 - i };
	return t;
}

/* FNV-1a of s, onto h. */
static uint64_t fnv(uint64_t h, const void *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)s)[i]) * 0x100000001b3ull;
	return h;
}

/* The keys the passes pair k by. */
static void keys(struct konst *k)
{
	const uint64_t basis = 0xcbf29ce484222325ull;
	int tensor;
	struct span e = elem_type(k, &tensor);
	uint64_t name = fnv(basis, k->name.p, k->name.n);
	uint64_t type = fnv(fnv(basis, e.p, e.n), &tensor, sizeof(tensor));

	k->role = fnv(fnv(fnv(name, "", 1), k->op.p, k->op.n), &k->pos,
		      sizeof(k->pos));
	k->part = fnv(k->role, &type, sizeof(type));
	k->named = fnv(name, &type, sizeof(type));
}

static int collect(const char *t, size_t len, struct side *s)
{
	struct uses u = { s, NULL };
	int rc = each_line(t, len, s, const_line);

	if (rc == 0 && s->n) {
		u.by_ssa = malloc(s->n * sizeof(*u.by_ssa));
		rc = u.by_ssa ? 0 : -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < s->n; i++)
		u.by_ssa[i] = &s->c[i];
	if (rc == 0 && s->n) {
		qsort(u.by_ssa, s->n, sizeof(*u.by_ssa), ssa_cmp);
		rc = each_line(t, len, &u, use_line);
	}
	for (size_t i = 0; rc == 0 && i < s->n; i++)
		keys(&s->c[i]);
	free(u.by_ssa);
	return rc;
}

static void pair(struct side *a, size_t i, struct side *b, size_t j)
{
	a->c[i].peer = (long)j;
	b->c[j].peer = (long)i;
}

/* Pairs the constants of equal part along a longest common subsequence
 * of the parts, after their common ends. */
static int align(struct side *a, struct side *b)
{
	size_t lo = 0, ha = a->n, hb = b->n, n, m, i = 0, j = 0;
	uint16_t *t;

	for (; lo < ha && lo < hb && a->c[lo].part == b->c[lo].part; lo++)
		pair(a, lo, b, lo);
	for (; ha > lo && hb > lo && a->c[ha - 1].part == b->c[hb - 1].part;)
		pair(a, --ha, b, --hb);
	n = ha - lo;
	m = hb - lo;
	if (n == 0 || m == 0 || n + 1 > TTCONST_CELLS_MAX / (m + 1))
		return 0;	/* nothing to align, or too much: by part */
	t = calloc((n + 1) * (m + 1), sizeof(*t));
	if (!t)
		return -ENOMEM;
	/* t[i][j]: the LCS of what is left from a's i and b's j.  At most
	 * min(n, m) <= 2048, within 16 bits. */
#define T(i, j) t[(i) * (m + 1) + (j)]
	for (size_t x = n; x-- > 0;)
		for (size_t y = m; y-- > 0;)
			T(x, y) = a->c[lo + x].part == b->c[lo + y].part
					  ? (uint16_t)(T(x + 1, y + 1) + 1)
				  : T(x + 1, y) >= T(x, y + 1) ? T(x + 1, y)
							       : T(x, y + 1);
	while (i < n && j < m) {
		if (a->c[lo + i].part == b->c[lo + j].part)
			pair(a, lo + i++, b, lo + j++);
		else if (T(i + 1, j) >= T(i, j + 1))
			i++;
		else
			j++;
	}
#undef T
	free(t);
	return 0;
}

/* The passes after the alignment, each over what the ones before left. */
enum pass {
	BY_PART,	/* moved: ops reordered */
	BY_NAME,	/* of one name and type, unused or used elsewhere */
	BY_ROLE,	/* of one name and use, of another type (a dtype) */
};

/* k's key in pass p; 0: k takes no part in it (a constant with no loc
 * name or no use tells too little to be paired by it). */
static uint64_t key_of(const struct konst *k, enum pass p)
{
	if (p == BY_PART)
		return k->part | 1;
	if (p == BY_NAME)
		return k->name.n ? k->named | 1 : 0;
	return k->name.n && k->op.n ? k->role | 1 : 0;
}

static int key_cmp(const void *x, const void *y)
{
	const struct konst *a = *(const struct konst *const *)x;
	const struct konst *b = *(const struct konst *const *)y;

	if (a->key != b->key)
		return a->key > b->key ? 1 : -1;
	return (a > b) - (a < b);
}

/* The constants of s not paired yet that pass p may pair, by key, then
 * place; NULL: no memory. */
static struct konst **left(struct side *s, enum pass p, size_t *n)
{
	struct konst **v = malloc((s->n + 1) * sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < s->n; i++) {
		s->c[i].key = key_of(&s->c[i], p);
		if (s->c[i].peer < 0 && s->c[i].key)
			v[(*n)++] = &s->c[i];
	}
	if (v)
		qsort(v, *n, sizeof(*v), key_cmp);
	return v;
}

/* Pairs what is left of a and b by pass p's key, the k-th of a key in a
 * with the k-th in b. */
static int pair_left(struct side *a, struct side *b, enum pass p)
{
	size_t na, nb, i = 0, j = 0;
	struct konst **va = left(a, p, &na);
	struct konst **vb = left(b, p, &nb);

	while (va && vb && i < na && j < nb) {
		if (va[i]->key == vb[j]->key)
			pair(a, (size_t)(va[i++] - a->c), b,
			     (size_t)(vb[j++] - b->c));
		else if (va[i]->key < vb[j]->key)
			i++;
		else
			j++;
	}
	free(vb);
	free(va);
	return va && vb ? 0 : -ENOMEM;
}

/* Nothing to report: the same value, or a tensor of the same value and
 * element type in another shape. */
static int unchanged(const struct change *c)
{
	struct span va, ta, vb, tb;
	int xa, xb;

	if (!c->from || !c->to)
		return 0;
	if (tt_span_eq(c->from->val, c->to->val))
		return 1;
	return split_const(c->from->val, &va, &ta) &&
	       split_const(c->to->val, &vb, &tb) && tt_span_eq(va, vb) &&
	       tt_span_eq(elem_type(c->from, &xa), elem_type(c->to, &xb)) &&
	       xa && xb;
}

/* Orders pieces that may be missing: none first. */
static int val_cmp(const struct konst *x, const struct konst *y)
{
	if (!x || !y)
		return !!x - !!y;
	return tt_span_cmp(x->val, y->val);
}

/* The same change: from and to. */
static int change_cmp(const struct change *x, const struct change *y)
{
	int c = val_cmp(x->from, y->from);

	return c ? c : val_cmp(x->to, y->to);
}

static int sort_change(const void *x, const void *y)
{
	const struct change *a = *(const struct change *const *)x;
	const struct change *b = *(const struct change *const *)y;
	int c = change_cmp(a, b);

	return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Marks each change made again, chained to its first: a BLOCK constant
 * is made again wherever it is used. */
static int mark_dups(struct change *v, size_t n)
{
	const struct change **s = malloc((n + 1) * sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s[i] = &v[i];
	qsort(s, n, sizeof(*s), sort_change);
	for (size_t i = 1; i < n; i++) {
		if (change_cmp(s[i - 1], s[i]) == 0) {
			v[s[i] - v].dup = 1;
			v[s[i - 1] - v].next = &v[s[i] - v];
		}
	}
	free(s);
	return 0;
}

/* A constant's value as a JSON string, cut; null for none. */
static cJSON *text_of(const struct konst *k)
{
	return k ? tcfs_json_cut(k->val.p, k->val.n, TCFS_TTIR_TEXT_MAX)
		 : cJSON_CreateNull();
}

/* The loc names of the constants that make change c, each once, in
 * order, TTCONST_NAMES_MAX at most; NULL: no memory. */
static cJSON *names_of(const struct change *c)
{
	cJSON *names = cJSON_CreateArray();
	struct span seen[TTCONST_NAMES_MAX];
	size_t n = 0, i;

	for (; names && c && n < TTCONST_NAMES_MAX; c = c->next) {
		struct span nm = c->to ? c->to->name : c->from->name;
		cJSON *one;

		for (i = 0; i < n && !tt_span_eq(seen[i], nm); i++)
			;
		if (!nm.n || i < n)
			continue;
		seen[n++] = nm;
		one = tcfs_json_cut(nm.p, nm.n, TCFS_TTIR_TEXT_MAX);
		if (!one || !cJSON_AddItemToArray(names, one)) {
			cJSON_Delete(one);
			cJSON_Delete(names);
			names = NULL;
		}
	}
	return names;
}

static cJSON *change_json(const struct change *c)
{
	cJSON *names = names_of(c);
	cJSON *o = names ? cJSON_CreateObject() : NULL;
	int want = cJSON_GetArraySize(names) ? 3 : 2;

	if (o && want == 3 && cJSON_AddItemToObject(o, "names", names))
		names = NULL;
	if (o) {
		cJSON_AddItemToObject(o, "from", text_of(c->from));
		cJSON_AddItemToObject(o, "to", text_of(c->to));
	}
	cJSON_Delete(names);
	if (o && cJSON_GetArraySize(o) != want) {
		cJSON_Delete(o);
		o = NULL;
	}
	return o;
}

/* The changes, in b's order, then those a had alone. */
static int changes(const struct side *a, const struct side *b,
		   struct change **out, size_t *n)
{
	struct change *v = malloc((a->n + b->n + 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t j = 0; j < b->n; j++) {
		long i = b->c[j].peer;

		v[k] = (struct change){ i >= 0 ? &a->c[i] : NULL, &b->c[j],
					k, 0, NULL };
		k += !unchanged(&v[k]);
	}
	for (size_t i = 0; i < a->n; i++)
		if (a->c[i].peer < 0) {
			v[k] = (struct change){ &a->c[i], NULL, k, 0, NULL };
			k++;
		}
	*out = v;
	*n = k;
	return mark_dups(v, k);
}

static int report(const struct side *a, const struct side *b, cJSON *arr,
		  size_t max, size_t *more)
{
	struct change *v = NULL;
	size_t n = 0;
	int rc = changes(a, b, &v, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		cJSON *one;

		if (v[i].dup)
			continue;
		if ((size_t)cJSON_GetArraySize(arr) >= max) {
			(*more)++;
			continue;
		}
		one = change_json(&v[i]);
		if (!one || !cJSON_AddItemToArray(arr, one)) {
			cJSON_Delete(one);
			rc = -ENOMEM;
		}
	}
	free(v);
	return rc;
}

int tcfs_ttconst_diff(const char *a, size_t alen, const char *b, size_t blen,
		      cJSON *arr, size_t max, size_t *more)
{
	struct side sa = { 0 }, sb = { 0 };
	int rc = arr ? 0 : -ENOMEM;

	*more = 0;
	if (rc == 0)
		rc = collect(a, alen, &sa);
	if (rc == 0)
		rc = collect(b, blen, &sb);
	if (rc == 0)
		rc = align(&sa, &sb);
	for (enum pass p = BY_PART; rc == 0 && p <= BY_ROLE; p++)
		rc = pair_left(&sa, &sb, p);
	if (rc == 0)
		rc = report(&sa, &sb, arr, max, more);
	free(sa.c);
	free(sb.c);
	return rc;
}
