/* fxgraph: an FX graph entry's debug lines found in its pickle without
 * unpickling it, on pickles shaped as PyTorch 2.11 writes them and on
 * hostile bytes (cut short, lying lengths, unknown opcodes, too many
 * lines), and two graphs' lines compared. */
#include <errno.h>
#include <stdint.h>

#include "index/model/fxgraph.h"
#include "tap.h"

#define H1 "2sqenegeve2isdxup4aqhrgg66y7radrecbjclnflcmohmkzwfe"
#define H2 "ytckt2sp73ygvpoo7e44utzsdo7sagvhrw3rf3dlaoqxs64ixdd"
#define TM(SHAPE, DT)                                                        \
	"TensorMetadata(dtype=torch." DT ", shape=torch.Size([" SHAPE "]), " \
	"stride=(1, 1), device=device(type='cuda', index=0))"

/* A pickle under construction. */
struct pk {
	unsigned char b[1 << 20];
	size_t n;
};

static void op(struct pk *p, unsigned c)
{
	p->b[p->n++] = (unsigned char)c;
}

static void le(struct pk *p, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		op(p, (unsigned)(v >> (8 * i)) & 0xff);
}

/* A string as SHORT_BINUNICODE when short, else BINUNICODE. */
static void str(struct pk *p, const char *s)
{
	size_t n = strlen(s);

	if (n < 256) {
		op(p, 0x8c);
		le(p, n, 1);
	} else {
		op(p, 'X');
		le(p, n, 4);
	}
	memcpy(p->b + p->n, s, n);
	p->n += n;
	op(p, 0x94);	/* MEMOIZE, as Python writes after each */
}

static void start(struct pk *p)
{
	p->n = 0;
	op(p, 0x80);		/* PROTO 4 */
	op(p, 4);
	op(p, 0x95);		/* FRAME */
	le(p, 1000, 8);
	op(p, 'c');		/* GLOBAL, two lines */
	memcpy(p->b + p->n, "torch\nX\n", 8);
	p->n += 8;
	op(p, ']');		/* EMPTY_LIST */
	op(p, '(');		/* MARK */
}

static void finish(struct pk *p)
{
	op(p, 'e');		/* APPENDS */
	op(p, 'K');		/* BININT1 */
	op(p, 7);
	op(p, 'G');		/* BINFLOAT */
	le(p, 0, 8);
	op(p, 'I');		/* INT, a line */
	memcpy(p->b + p->n, "12\n", 3);
	p->n += 3;
	op(p, '.');		/* STOP */
}

static struct pk a, b;

static int details(const struct pk *p, struct tcfs_fx_details *d)
{
	return tcfs_fx_details((const char *)p->b, p->n, d);
}

static int has(const struct tcfs_fx_details *d, size_t i, const char *name,
	       const char *value)
{
	return i < d->n && d->v[i].name_len == strlen(name) &&
	       memcmp(d->v[i].name, name, strlen(name)) == 0 &&
	       d->v[i].value_len == strlen(value) &&
	       memcmp(d->v[i].value, value, strlen(value)) == 0;
}

static void test_found(void)
{
	struct tcfs_fx_details d;

	start(&a);
	str(&a, "[" H1 "] gm: <lambda>()\ndef forward(self, x):\n    return x");
	str(&a, "not a line");
	str(&a, "[" H2 "] example_inputs[0]: " TM("8, 16", "float32"));
	str(&a, "[short] x: 1");
	str(&a, "[" H1 "]no space: 1");
	str(&a, "[" H1 "] no colon");
	str(&a, "[" H1 "] example_inputs[0]: a second of a name");
	str(&a, "[" H1 "] cache_key_tag: ");
	finish(&a);
	tap_eq(details(&a, &d), 0, "a pickle's debug lines found");
	tap_eq(d.n, 3, "three: not the strings of another shape, nor a "
	       "name twice");
	tap_ok(has(&d, 0, "gm", "<lambda>()\ndef forward(self, x):\n    "
		   "return x"), "a value of many lines whole");
	tap_ok(has(&d, 1, "example_inputs[0]", TM("8, 16", "float32")),
	       "the first line of a name kept");
	tap_ok(has(&d, 2, "cache_key_tag", ""), "an empty value");
	tap_ok(d.n && d.v[0].hash_len == strlen(H1) &&
	       memcmp(d.v[0].hash, H1, strlen(H1)) == 0, "its hash");
	tcfs_fx_details_free(&d);
}

static void test_hostile(void)
{
	struct tcfs_fx_details d;
	size_t bad = 0;
	static const unsigned char unknown[] = { 0x80, 4, 0xff, '.' };
	static const unsigned char lying[] = { 0x80, 4, 'X', 0xff, 0xff, 0xff,
					       0xff, 'a', '.' };
	static const unsigned char lying8[] = { 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x80,
						'.' };
	static const unsigned char noline[] = { 'I', '1', '2' };
	static const unsigned char nostop[] = { 0x80, 4, ']' };

	for (size_t n = 0; n < a.n; n++)
		bad += tcfs_fx_details((const char *)a.b, n, &d) == -EINVAL;
	tap_eq(bad, a.n, "every pickle cut short is refused (%zu cuts)", a.n);
	tap_eq(tcfs_fx_details((const char *)unknown, sizeof(unknown), &d),
	       -EINVAL, "an opcode of no protocol is refused");
	tap_eq(tcfs_fx_details((const char *)lying, sizeof(lying), &d),
	       -EINVAL, "a string longer than what is left is refused");
	tap_eq(tcfs_fx_details((const char *)lying8, sizeof(lying8), &d),
	       -EINVAL, "a length of 2^63 is refused");
	tap_eq(tcfs_fx_details((const char *)noline, sizeof(noline), &d),
	       -EINVAL, "a text argument without its newline is refused");
	tap_eq(tcfs_fx_details((const char *)nostop, sizeof(nostop), &d),
	       -EINVAL, "no STOP is refused");
	tap_eq(tcfs_fx_details("", 0, &d), -EINVAL, "nothing is refused");
	tap_ok(d.v == NULL && d.n == 0, "nothing is left to free");
}

static void test_too_many(void)
{
	struct tcfs_fx_details d;
	char s[128];

	start(&a);
	for (int i = 0; i <= TCFS_FXGRAPH_LINES_MAX; i++) {
		snprintf(s, sizeof(s), "[" H1 "] inductor_config[k%d]: 1", i);
		str(&a, s);
	}
	finish(&a);
	tap_eq(details(&a, &d), -E2BIG, "past %d lines is refused",
	       TCFS_FXGRAPH_LINES_MAX);
	a.n = 0;
	start(&a);
	finish(&a);
	tap_eq(details(&a, &d), 0, "a pickle of no debug lines is read");
	tap_eq(d.n, 0, "with none");
	tcfs_fx_details_free(&d);
}

/* The differences of two entries' lines; "INPUT|FROM|TO;..." (null: -). */
static const char *show(const char *const *la, size_t na,
			const char *const *lb, size_t nb, size_t *dist)
{
	static char buf[1 << 14];
	struct tcfs_fx_details da, db;
	cJSON *o = NULL, *c;
	size_t len = 0;

	start(&a);
	for (size_t i = 0; i < na; i++)
		str(&a, la[i]);
	finish(&a);
	start(&b);
	for (size_t i = 0; i < nb; i++)
		str(&b, lb[i]);
	finish(&b);
	buf[0] = '\0';
	if (details(&a, &da) < 0 || details(&b, &db) < 0)
		return "not read";
	*dist = tcfs_fx_distance(&da, &db);
	if (tcfs_fx_diff(&da, &db, &o) < 0)
		return "no memory";
	cJSON_ArrayForEach(c, o) {
		const char *v[3] = {
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "input")),
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "from")),
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "to")),
		};

		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%s%s|%s|%s", len ? ";" : "",
					v[0] ? v[0] : "-", v[1] ? v[1] : "-",
					v[2] ? v[2] : "-");
	}
	cJSON_Delete(o);
	tcfs_fx_details_free(&da);
	tcfs_fx_details_free(&db);
	return buf;
}

#define N(x) (sizeof(x) / sizeof(*(x)))

static void test_diff(void)
{
	static const char *const x[] = {
		"[" H1 "] gm: def f(a):\n    b = a + 1\n    return b",
		"[" H1 "] example_inputs[0]: " TM("128, 1024", "float32"),
		"[" H1 "] inductor_config[max_autotune]: False",
		"[" H1 "] only_in_x: 1",
	};
	static const char *const y[] = {
		"[" H2 "] gm: def f(a):\n    b = a * 2\n    return b",
		"[" H2 "] example_inputs[0]: " TM("128, 512", "float16"),
		"[" H2 "] inductor_config[max_autotune]: True",
		"[" H2 "] only_in_y: 2",
	};
	static const char *const same_hash[] = {
		"[" H1 "] gm: something else, the same hash",
	};
	static const char *const unbalanced[] = {
		"[" H1 "] t: T(a=(1, b=2)", "[" H1 "] u: T(a=1, b=2)",
	};
	static const char *const unbalanced2[] = {
		"[" H2 "] t: T(a=(2, b=2)", "[" H2 "] u: U(a=1, b=3)",
	};
	size_t d = 0;

	tap_ok(!strcmp(show(x, N(x), y, N(y), &d),
		       "gm|line 2:     b = a + 1|line 2:     b = a * 2;"
		       "example_inputs[0]|dtype=torch.float32, "
		       "shape=torch.Size([128, 1024])|dtype=torch.float16, "
		       "shape=torch.Size([128, 512]);"
		       "inductor_config[max_autotune]|False|True;"
		       "only_in_y|-|2;only_in_x|1|-"),
	       "the code's first line that differs, a call's fields that "
	       "differ, a value whole, and inputs on one side: %s",
	       show(x, N(x), y, N(y), &d));
	tap_eq(d, 5, "five inputs set them apart");
	tap_ok(!strcmp(show(x, 1, same_hash, 1, &d), ""),
	       "an input of the same hash does not differ");
	tap_eq(d, 0, "so the distance is 0");
	tap_ok(!strcmp(show(unbalanced, 2, unbalanced2, 2, &d),
		       "t|T(a=(1, b=2)|T(a=(2, b=2);u|T(a=1, b=2)|U(a=1, b=3)"),
	       "values not of one call's shape are shown whole: %s",
	       show(unbalanced, 2, unbalanced2, 2, &d));
}

static void test_bounds(void)
{
	static char lx[TCFS_FXGRAPH_SHOW_MAX + 8][128];
	static char ly[TCFS_FXGRAPH_SHOW_MAX + 8][128];
	const char *px[TCFS_FXGRAPH_SHOW_MAX + 8], *py[TCFS_FXGRAPH_SHOW_MAX + 8];
	static char long_a[1024], long_b[1024];
	const char *la[1] = { long_a }, *lb[1] = { long_b };
	const char *r;
	size_t d = 0, n = 0;

	for (int i = 0; i < TCFS_FXGRAPH_SHOW_MAX + 8; i++) {
		snprintf(lx[i], sizeof(lx[i]), "[" H1 "] k%d: 1", i);
		snprintf(ly[i], sizeof(ly[i]), "[" H2 "] k%d: 2", i);
		px[i] = lx[i];
		py[i] = ly[i];
	}
	r = show(px, N(px), py, N(py), &d);
	for (const char *c = r; *c; c++)
		n += *c == ';';
	tap_eq(n + 1, TCFS_FXGRAPH_SHOW_MAX, "at most %d differences shown",
	       TCFS_FXGRAPH_SHOW_MAX);
	tap_eq(d, TCFS_FXGRAPH_SHOW_MAX + 8, "all of them counted");
	snprintf(long_a, sizeof(long_a), "[" H1 "] v: %0900d", 1);
	snprintf(long_b, sizeof(long_b), "[" H2 "] v: %0900d", 2);
	r = show(la, 1, lb, 1, &d);
	tap_ok(strlen(r) == 3 + 2 * (TCFS_FXGRAPH_TEXT_MAX + 3) &&
	       strstr(r, "...|"), "a long value cut at %d bytes with ...",
	       TCFS_FXGRAPH_TEXT_MAX);
}

int main(void)
{
	test_found();
	test_hostile();
	test_too_many();
	test_diff();
	test_bounds();
	return tap_done();
}
