/* fxgraph: an FX graph entry's debug lines, found by walking its pickle's
 * opcodes, and two graphs' lines compared. */
#include "index/model/fxgraph.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/json.h"
#include "index/base/text.h"

/* How each opcode's argument is laid out (Python's pickletools): nothing,
 * a fixed number of bytes, a length of 1, 4 or 8 bytes and that many
 * bytes (a string for the STR ones), or text up to a newline (one or two
 * lines).  0: not an opcode of any protocol, so not a pickle. */
enum {
	OP_BAD, OP_NONE, OP_U1, OP_U2, OP_U4, OP_U8, OP_LEN1, OP_LEN4, OP_LEN8,
	OP_STR1, OP_STR4, OP_STR8, OP_LINE, OP_LINE2
};

static const unsigned char op_arg[256] = {
	['I'] = OP_LINE, ['J'] = OP_U4, ['K'] = OP_U1, ['M'] = OP_U2,
	['L'] = OP_LINE, [0x8a] = OP_LEN1, [0x8b] = OP_LEN4, ['S'] = OP_LINE,
	['T'] = OP_LEN4, ['U'] = OP_LEN1, ['B'] = OP_LEN4, ['C'] = OP_LEN1,
	[0x8e] = OP_LEN8, [0x96] = OP_LEN8, [0x97] = OP_NONE, [0x98] = OP_NONE,
	['N'] = OP_NONE, [0x88] = OP_NONE, [0x89] = OP_NONE, ['V'] = OP_LINE,
	[0x8c] = OP_STR1, ['X'] = OP_STR4, [0x8d] = OP_STR8, ['F'] = OP_LINE,
	['G'] = OP_U8, [']'] = OP_NONE, ['a'] = OP_NONE, ['e'] = OP_NONE,
	['l'] = OP_NONE, [')'] = OP_NONE, ['t'] = OP_NONE, [0x85] = OP_NONE,
	[0x86] = OP_NONE, [0x87] = OP_NONE, ['}'] = OP_NONE, ['d'] = OP_NONE,
	['s'] = OP_NONE, ['u'] = OP_NONE, [0x8f] = OP_NONE, [0x90] = OP_NONE,
	[0x91] = OP_NONE, ['0'] = OP_NONE, ['2'] = OP_NONE, ['('] = OP_NONE,
	['1'] = OP_NONE, ['g'] = OP_LINE, ['h'] = OP_U1, ['j'] = OP_U4,
	['p'] = OP_LINE, ['q'] = OP_U1, ['r'] = OP_U4, [0x94] = OP_NONE,
	[0x82] = OP_U1, [0x83] = OP_U2, [0x84] = OP_U4, ['c'] = OP_LINE2,
	[0x93] = OP_NONE, ['R'] = OP_NONE, ['b'] = OP_NONE, ['i'] = OP_LINE2,
	['o'] = OP_NONE, [0x81] = OP_NONE, [0x92] = OP_NONE, [0x80] = OP_U1,
	['.'] = OP_NONE, [0x95] = OP_U8, ['P'] = OP_LINE, ['Q'] = OP_NONE,
};

/* Names are short ("inductor_config[triton.cudagraph_trees]"); hashes
 * are base32 SHA-256, 51 characters in PyTorch 2.11. */
#define NAME_MAX_LEN 256
#define HASH_MIN 32
#define HASH_MAX 64

struct walk {
	const unsigned char *p;
	size_t len, at;
};

/* Steps over n more bytes; -EINVAL past the end. */
static int take(struct walk *w, uint64_t n)
{
	if (n > w->len - w->at)
		return -EINVAL;
	w->at += n;
	return 0;
}

/* A little-endian length of width bytes, stepped over. */
static int length(struct walk *w, unsigned width, uint64_t *n)
{
	*n = 0;
	if (width > w->len - w->at)
		return -EINVAL;
	for (unsigned i = 0; i < width; i++)
		*n |= (uint64_t)w->p[w->at + i] << (8 * i);
	w->at += width;
	return 0;
}

static int line(struct walk *w)
{
	const unsigned char *nl = memchr(w->p + w->at, '\n', w->len - w->at);

	return nl ? take(w, (uint64_t)(nl - (w->p + w->at)) + 1) : -EINVAL;
}

/* The hash of "[HASH] NAME: VALUE" at s, or 0 when s is no debug line. */
static size_t hash_len(const char *s, size_t n)
{
	size_t h = 0;

	if (n < 2 || s[0] != '[')
		return 0;
	while (1 + h < n && h <= HASH_MAX &&
	       ((s[1 + h] >= 'a' && s[1 + h] <= 'z') ||
		(s[1 + h] >= '0' && s[1 + h] <= '9')))
		h++;
	if (h < HASH_MIN || h > HASH_MAX || n < h + 3 ||
	    memcmp(s + 1 + h, "] ", 2) != 0)
		return 0;
	return h;
}

static const struct tcfs_fx_line *find(const struct tcfs_fx_details *d,
				       const char *name, size_t n)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].name_len == n && memcmp(d->v[i].name, name, n) == 0)
			return &d->v[i];
	return NULL;
}

/* Takes the string s if it is a debug line whose name is new. */
static int consider(struct tcfs_fx_details *d, const char *s, size_t n)
{
	size_t h = hash_len(s, n);
	const char *name = s + h + 3, *sep;
	struct tcfs_fx_line *v;

	if (!h)
		return 0;
	sep = memmem(name, n - (h + 3), ": ", 2);
	if (!sep || sep == name || (size_t)(sep - name) > NAME_MAX_LEN ||
	    memchr(name, '\n', (size_t)(sep - name)) ||
	    find(d, name, (size_t)(sep - name)))
		return 0;
	if (d->n == TCFS_FXGRAPH_LINES_MAX)
		return -E2BIG;
	v = realloc(d->v, (d->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->v = v;
	v[d->n++] = (struct tcfs_fx_line){
		.hash = s + 1, .hash_len = h,
		.name = name, .name_len = (size_t)(sep - name),
		.value = sep + 2, .value_len = n - (size_t)(sep + 2 - s),
	};
	return 0;
}

/* One opcode and its argument; *stop at STOP. */
static int step(struct walk *w, struct tcfs_fx_details *d, int *stop)
{
	static const unsigned char width[] = {
		[OP_U1] = 1, [OP_U2] = 2, [OP_U4] = 4, [OP_U8] = 8,
		[OP_LEN1] = 1, [OP_LEN4] = 4, [OP_LEN8] = 8,
		[OP_STR1] = 1, [OP_STR4] = 4, [OP_STR8] = 8,
	};
	unsigned op = w->p[w->at++], a = op_arg[op];
	uint64_t n;
	size_t at;
	int rc;

	*stop = op == '.';
	switch (a) {
	case OP_BAD:
		return -EINVAL;
	case OP_NONE:
		return 0;
	case OP_U1: case OP_U2: case OP_U4: case OP_U8:
		return take(w, width[a]);
	case OP_LINE:
		return line(w);
	case OP_LINE2:
		return (rc = line(w)) < 0 ? rc : line(w);
	}
	rc = length(w, width[a], &n);
	at = w->at;
	if (rc == 0)
		rc = take(w, n);
	if (rc == 0 && a >= OP_STR1 && a <= OP_STR8)
		rc = consider(d, (const char *)w->p + at, (size_t)n);
	return rc;
}

int tcfs_fx_details(const char *buf, size_t len, struct tcfs_fx_details *out)
{
	struct walk w = { (const unsigned char *)buf, len, 0 };
	int rc = 0, stop = 0;

	memset(out, 0, sizeof(*out));
	while (rc == 0 && !stop && w.at < w.len)
		rc = step(&w, out, &stop);
	if (rc == 0 && !stop)
		rc = -EINVAL;
	if (rc < 0)
		tcfs_fx_details_free(out);
	return rc;
}

void tcfs_fx_details_free(struct tcfs_fx_details *d)
{
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

static int same_hash(const struct tcfs_fx_line *x, const struct tcfs_fx_line *y)
{
	return x->hash_len == y->hash_len &&
	       memcmp(x->hash, y->hash, x->hash_len) == 0;
}

size_t tcfs_fx_distance(const struct tcfs_fx_details *a,
			const struct tcfs_fx_details *b)
{
	size_t d = 0;

	for (size_t i = 0; i < b->n; i++) {
		const struct tcfs_fx_line *x =
			find(a, b->v[i].name, b->v[i].name_len);

		d += !x || !same_hash(x, &b->v[i]);
	}
	for (size_t i = 0; i < a->n; i++)
		d += !find(b, a->v[i].name, a->v[i].name_len);
	return d;
}

/* A piece of an entry's bytes: not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

/* TensorMetadata has 11 fields; a value of more is shown whole. */
#define FIELDS_MAX 32

/* s as a JSON string cut at TCFS_FXGRAPH_TEXT_MAX; null for no s. */
static cJSON *text_of(const struct span *s)
{
	return s ? tcfs_json_cut(s->p, s->n, TCFS_FXGRAPH_TEXT_MAX) : cJSON_CreateNull();
}

/* The fields of CALL(k=v, k=v): split at the ", " outside brackets and
 * quotes.  0 when v has that shape, with *head "CALL"; -EINVAL else. */
static int fields_of(struct span v, struct span *head, struct span *f,
		     size_t *n)
{
	const char *open = memchr(v.p, '(', v.n), *end = v.p + v.n - 1;
	const char *start;
	int depth = 0;
	char quote = 0;

	if (!open || open == v.p || *end != ')' || memchr(v.p, '\n', v.n))
		return -EINVAL;
	*head = (struct span){ v.p, (size_t)(open - v.p) };
	*n = 0;
	start = open + 1;
	for (const char *c = start; c < end; c++) {
		if (quote)
			quote = *c == quote ? 0 : quote;
		else if (*c == '\'' || *c == '"')
			quote = *c;
		else if (*c == '(' || *c == '[' || *c == '{')
			depth++;
		else if (*c == ')' || *c == ']' || *c == '}')
			depth--;
		else if (*c == ',' && depth == 0) {
			if (*n == FIELDS_MAX)
				return -EINVAL;
			f[(*n)++] = (struct span){ start, (size_t)(c - start) };
			start = c + 1 < end && c[1] == ' ' ? c + 2 : c + 1;
		}
		if (depth < 0)
			return -EINVAL;
	}
	if (quote || depth || *n == FIELDS_MAX)
		return -EINVAL;
	f[(*n)++] = (struct span){ start, (size_t)(end - start) };
	return 0;
}

static int span_eq(struct span a, struct span b)
{
	return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Of two CALL(...) values with the same CALL and as many fields, the
 * fields that differ, joined with ", " on each side; -EINVAL when they
 * are not such values or no field differs. */
static int field_changes(struct span a, struct span b, struct tcfs_text *ta,
			 struct tcfs_text *tb)
{
	struct span ha, hb, fa[FIELDS_MAX], fb[FIELDS_MAX];
	size_t na, nb;

	if (fields_of(a, &ha, fa, &na) < 0 || fields_of(b, &hb, fb, &nb) < 0 ||
	    !span_eq(ha, hb) || na != nb)
		return -EINVAL;
	for (size_t i = 0; i < na; i++) {
		if (span_eq(fa[i], fb[i]))
			continue;
		if (ta->len) {
			tcfs_text_add(ta, ", ", 2);
			tcfs_text_add(tb, ", ", 2);
		}
		tcfs_text_add(ta, fa[i].p, fa[i].n);
		tcfs_text_add(tb, fb[i].p, fb[i].n);
	}
	return ta->len ? 0 : -EINVAL;
}

/* The line at *p (up to end), stepped over: its length. */
static size_t next_line(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = (size_t)((nl ? nl : end) - *p);

	*p = nl ? nl + 1 : end;
	return n;
}

/* Of two values of many lines, the first line that differs, "line N:
 * TEXT" on each side ("(none)" past its end). */
static void line_change(struct span a, struct span b, struct tcfs_text *ta,
			struct tcfs_text *tb)
{
	const char *pa = a.p, *ea = a.p + a.n, *pb = b.p, *eb = b.p + b.n;
	const char *la, *lb;
	size_t no = 1, na, nb;
	char at[32];

	for (;; no++) {
		la = pa;
		lb = pb;
		na = next_line(&pa, ea);
		nb = next_line(&pb, eb);
		if (la == ea || lb == eb || na != nb || memcmp(la, lb, na))
			break;
	}
	snprintf(at, sizeof(at), "line %zu: ", no);
	tcfs_text_str(ta, at);
	tcfs_text_str(tb, at);
	tcfs_text_add(ta, la == ea ? "(none)" : la, la == ea ? 6 : na);
	tcfs_text_add(tb, lb == eb ? "(none)" : lb, lb == eb ? 6 : nb);
}

/* {"input", "from", "to"} of one input: x or y (not both) may be NULL. */
static cJSON *change(const struct tcfs_fx_line *x, const struct tcfs_fx_line *y)
{
	const struct tcfs_fx_line *any = y ? y : x;
	struct span name = { any->name, any->name_len }, a, b;
	struct tcfs_text ta = { 0 }, tb = { 0 };
	cJSON *o = cJSON_CreateObject();

	if (x)
		a = (struct span){ x->value, x->value_len };
	if (y)
		b = (struct span){ y->value, y->value_len };
	if (x && y && (memchr(a.p, '\n', a.n) || memchr(b.p, '\n', b.n)))
		line_change(a, b, &ta, &tb);
	else if (x && y && field_changes(a, b, &ta, &tb) < 0) {
		ta.len = tb.len = 0;	/* shown whole */
	}
	if (ta.len && !ta.err && !tb.err) {
		a = (struct span){ ta.p, ta.len };
		b = (struct span){ tb.p, tb.len };
	}
	if (o && (!cJSON_AddItemToObject(o, "input", text_of(&name)) ||
		  !cJSON_AddItemToObject(o, "from", text_of(x ? &a : NULL)) ||
		  !cJSON_AddItemToObject(o, "to", text_of(y ? &b : NULL)))) {
		cJSON_Delete(o);
		o = NULL;
	}
	free(ta.p);
	free(tb.p);
	return o;
}

int tcfs_fx_diff(const struct tcfs_fx_details *a,
		 const struct tcfs_fx_details *b, cJSON **out)
{
	cJSON *arr = cJSON_CreateArray();
	size_t shown = 0;
	int rc = arr ? 0 : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < b->n + a->n; i++) {
		const struct tcfs_fx_line *x, *y;
		cJSON *c;

		if (i < b->n) {
			y = &b->v[i];
			x = find(a, y->name, y->name_len);
			if (x && same_hash(x, y))
				continue;
		} else {
			x = &a->v[i - b->n];
			y = NULL;
			if (find(b, x->name, x->name_len))
				continue;
		}
		if (shown++ == TCFS_FXGRAPH_SHOW_MAX)
			break;
		c = change(x, y);
		if (!c || !cJSON_AddItemToArray(arr, c)) {
			cJSON_Delete(c);
			rc = -ENOMEM;
		}
	}
	if (rc < 0)
		cJSON_Delete(arr);
	*out = rc < 0 ? NULL : arr;
	return rc;
}
