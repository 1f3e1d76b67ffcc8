/* why: two kernels' TTIR (NAME.source) compared by the signature of the
 * kernel function and the constants it was specialised for, on text
 * shaped as Triton 3.6 writes it (tests/fixtures) and on text that is
 * not. */
#include <errno.h>

#include "index/model/ttir.h"
#include "tap.h"

/* add_kernel as Triton 3.6 caches it, cut short: arguments named by
 * their locations, a BLOCK of 1024, and a helper function before it. */
#define HEAD "#loc = loc(\"/w/gen.py\":17:0)\nmodule {\n"
#define HELPER                                                               \
	"  tt.func private @\"triton.language.standard.cdiv__i32__(1,)"     \
	"cconstexpr_128_\"(%x: i32 loc(\"x\"(#loc57))) -> i32 attributes "   \
	"{noinline = false} {\n    tt.return %x : i32 loc(#loc)\n  } "       \
	"loc(#loc)\n"
#define SIG(T, DIV)                                                          \
	"  tt.func public @add_kernel(%x_ptr: !tt.ptr<" T "> "               \
	"{tt.divisibility = 16 : i32} loc(\"x_ptr\"(#loc)), %y_ptr: "        \
	"!tt.ptr<" T "> {tt.divisibility = 16 : i32} loc(\"y_ptr\"(#loc)), " \
	"%n: i32" DIV " loc(\"n\"(#loc))) attributes {noinline = false} {\n"
#define BODY(B)                                                              \
	"    %pid = tt.get_program_id x : i32 loc(#loc18)\n"                 \
	"    %offs = arith.constant " B " : i32 loc(#loc19)\n"               \
	"    %offs_0 = arith.constant " B " : i32 loc(#loc19)\n"             \
	"    %offs_4 = arith.constant 2147483647 : i64 loc(#loc19)\n"        \
	"    %offs_17 = arith.constant dense<2147483647> : tensor<" B        \
	"xi64> loc(#loc21)\n"                                                \
	"    %offs_19 = arith.constant dense<-2147483648> : tensor<" B       \
	"xi64> loc(#loc21)\n"                                                \
	"    tt.return loc(#loc13)\n  } loc(#loc)\n} loc(#loc)\n"            \
	"#loc18 = loc(\"pid\"(#loc1))\n"
#define DIV16 " {tt.divisibility = 16 : i32}"
#define TTIR(T, DIV, B) HEAD HELPER SIG(T, DIV) BODY(B)

static const char f32[] = TTIR("f32", DIV16, "1024");

static cJSON *diff(const char *a, const char *b, int *rc)
{
	cJSON *o = NULL;

	*rc = tcfs_ttir_diff(a, strlen(a), b, strlen(b), "add_kernel", &o);
	return o;
}

/* The changes of one kind, as "NAME|INDEX:FROM->TO;..." (null: -). */
static const char *show(const cJSON *o, const char *kind)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (const cJSON *e = cJSON_GetObjectItem(o, kind)->child; e;
	     e = e->next) {
		const cJSON *nm = cJSON_GetObjectItem(e, "name");
		const cJSON *ix = cJSON_GetObjectItem(e, "index");
		const cJSON *names = cJSON_GetObjectItem(e, "names");
		const char *from = cJSON_GetStringValue(
			cJSON_GetObjectItem(e, "from"));
		const char *to = cJSON_GetStringValue(
			cJSON_GetObjectItem(e, "to"));

		if (nm)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s:",
					      cJSON_GetStringValue(nm));
		else if (ix)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%d:",
					      ix->valueint);
		for (const cJSON *x = names ? names->child : NULL;
		     x && n < sizeof(buf); x = x->next)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
					      cJSON_GetStringValue(x),
					      x->next ? "," : ":");
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s->%s;",
				      from ? from : "-", to ? to : "-");
		if (n >= sizeof(buf))
			break;
	}
	return buf;
}

static void expect(const char *a, const char *b, const char *args,
		   const char *consts, const char *what)
{
	int rc;
	cJSON *o = diff(a, b, &rc);

	tap_eq(rc, 0, "%s: compared", what);
	if (!o)
		return;
	if (!tap_ok(strcmp(show(o, "arguments"), args) == 0,
		    "%s: arguments %s", what, args))
		printf("#   got %s\n", show(o, "arguments"));
	if (!tap_ok(strcmp(show(o, "constants"), consts) == 0,
		    "%s: constants %s", what, consts))
		printf("#   got %s\n", show(o, "constants"));
	cJSON_Delete(o);
}

static void refused(const char *a, const char *b, int want, const char *what)
{
	int rc;
	cJSON *o = diff(a, b, &rc);

	tap_eq(rc, want, "%s: refused", what);
	tap_ok(o == NULL, "%s: nothing returned", what);
	cJSON_Delete(o);
}

static void signatures(void)
{
	expect(f32, f32, "", "", "the same text");
	expect(f32, TTIR("f16", DIV16, "1024"),
	       "x_ptr:!tt.ptr<f32> {tt.divisibility = 16 : i32}->"
	       "!tt.ptr<f16> {tt.divisibility = 16 : i32};"
	       "y_ptr:!tt.ptr<f32> {tt.divisibility = 16 : i32}->"
	       "!tt.ptr<f16> {tt.divisibility = 16 : i32};",
	       "", "pointers to f32, then to f16");
	expect(f32, TTIR("f32", "", "1024"),
	       "n:i32 {tt.divisibility = 16 : i32}->i32;", "",
	       "n no longer divisible by 16");
	expect(TTIR("f32", "", "1024"), f32,
	       "n:i32->i32 {tt.divisibility = 16 : i32};", "",
	       "n now divisible by 16");
	expect(HEAD "tt.func public @k(%arg0: i32, %arg1: f32) {\n",
	       HEAD "tt.func public @k(%arg0: i64, %arg1: f32, %arg2: i1) {\n",
	       "0:i32->i64;2:-->i1;", "",
	       "arguments with no loc name: by place, one added");
	expect(HEAD "tt.func public @k(%a: i32 loc(\"a\"(#l)), %b: i32 "
		    "loc(\"b\"(#l))) {\n",
	       HEAD "tt.func public @k(%b: i32 loc(\"b\"(#l))) {\n",
	       "a:i32->-;", "", "an argument gone, named");
	expect(HEAD "tt.func public @k() {\n", HEAD "tt.func public @k() {\n",
	       "", "", "no arguments");
}

/* 16 constants of i32: x00 to x33. */
#define C4(x)                                                                \
	"arith.constant " x "0 : i32\narith.constant " x "1 : i32\n"         \
	"arith.constant " x "2 : i32\narith.constant " x "3 : i32\n"
#define C16(x) C4(x "0") C4(x "1") C4(x "2") C4(x "3")
#define C144(x) C16(x "1") C16(x "2") C16(x "3") C16(x "4") C16(x "5")      \
	C16(x "6") C16(x "7") C16(x "8") C16(x "9")

static void constants(void)
{
	static const char many_a[] = HEAD "tt.func public @k() {\n" C144("1");
	static const char many_b[] = HEAD "tt.func public @k() {\n" C144("2");
	const cJSON *more;
	int rc;
	cJSON *o;

	expect(f32, TTIR("f32", DIV16, "512"), "", "offs:1024 : i32->512 : i32;",
	       "BLOCK 1024, then 512: once, tensors of its shape left out");
	expect(f32, HEAD HELPER SIG("f32", DIV16) BODY("1024")
		     "    %z = arith.constant 0.000000e+00 : f32\n",
	       "", "z:-->0.000000e+00 : f32;", "a constant added");
	expect(HEAD "tt.func public @k() {\n arith.constant dense<1.0> : "
		    "tensor<4xf32>\n",
	       HEAD "tt.func public @k() {\n arith.constant dense<2.0> : "
		    "tensor<4xf32>\n",
	       "", "dense<1.0> : tensor<4xf32>->dense<2.0> : tensor<4xf32>;",
	       "a tensor constant of another value");
	o = diff(many_a, many_b, &rc);
	more = cJSON_GetObjectItem(o, "unlisted");
	tap_ok(rc == 0 && o && cJSON_GetArraySize(cJSON_GetObjectItem(
				       o, "constants")) == TCFS_TTIR_SHOW_MAX,
	       "144 changed constants: %d listed", TCFS_TTIR_SHOW_MAX);
	tap_ok(cJSON_IsNumber(more) && more->valueint == 144 - TCFS_TTIR_SHOW_MAX,
	       "... and the %d others counted as unlisted",
	       144 - TCFS_TTIR_SHOW_MAX);
	cJSON_Delete(o);
}

/* A kernel function of these lines. */
#define FN(lines) HEAD "  tt.func public @k(%n: i32) {\n" lines "  }\n}\n"

/*
 * Each constant paired with the one that plays its part: by position,
 * one inserted constant shifted every later one (tcfs why showed 12
 * changes of the fixtures' matmul kernels where 4 were real).
 */
static void pairing(void)
{
	expect(FN("    %x = arith.constant 16 : i32\n"
		  "    %offs = arith.constant 1024 : i32\n"
		  "    %0 = arith.muli %n, %offs : i32\n"
		  "    %1 = arith.addi %0, %x : i32\n"),
	       FN("    %x = arith.constant 16 : i32\n"
		  "    %m = arith.constant 3 : i32\n"
		  "    %offs = arith.constant 512 : i32\n"
		  "    %0 = arith.muli %n, %offs : i32\n"
		  "    %1 = arith.addi %0, %x : i32\n"
		  "    %2 = arith.addi %1, %m : i32\n"),
	       "", "m:-->3 : i32;offs:1024 : i32->512 : i32;",
	       "one constant inserted, one changed: one line each");
	expect(FN("    %p = arith.constant 1 : i32\n"
		  "    %q = arith.constant 2 : i32\n"
		  "    %0 = arith.addi %n, %p : i32\n"
		  "    %1 = arith.muli %0, %q : i32\n"),
	       FN("    %q = arith.constant 3 : i32\n"
		  "    %p = arith.constant 5 : i32\n"
		  "    %0 = arith.addi %n, %p : i32\n"
		  "    %1 = arith.muli %0, %q : i32\n"),
	       "", "q:2 : i32->3 : i32;p:1 : i32->5 : i32;",
	       "ops reordered: each constant with its own");
	expect(FN("    %c32_i32 = arith.constant 32 : i32\n"
		  "    %c8_i32 = arith.constant 8 : i32\n"
		  "    %0 = arith.addi %n, %c32_i32 : i32\n"
		  "    %1 = arith.muli %0, %c8_i32 : i32\n"),
	       FN("    %c8_i32 = arith.constant 8 : i32\n"
		  "    %c64_i32 = arith.constant 64 : i32\n"
		  "    %0 = arith.addi %n, %c64_i32 : i32\n"
		  "    %1 = arith.muli %0, %c8_i32 : i32\n"),
	       "", "32 : i32->64 : i32;",
	       "names made from the value: paired by their use, unnamed");
	expect(FN("    %av = arith.constant 32 : i32\n"
		  "    %bv = arith.constant 32 : i32\n"
		  "    %rn = arith.constant dense<7> : tensor<1x32xi64>\n"
		  "    %0 = arith.addi %n, %av : i32\n"
		  "    %1 = arith.addi %0, %bv : i32\n"),
	       FN("    %av = arith.constant 64 : i32\n"
		  "    %bv = arith.constant 64 : i32\n"
		  "    %rn = arith.constant dense<7> : tensor<1x64xi64>\n"
		  "    %0 = arith.addi %n, %av : i32\n"
		  "    %1 = arith.addi %0, %bv : i32\n"),
	       "", "av,bv:32 : i32->64 : i32;",
	       "one change made by two constants: once, with both names");
	expect(FN("    %a_5 = arith.constant 2147483647 : i64\n"),
	       FN("    %a_6 = arith.constant 1 : i32\n"),
	       "", "a:-->1 : i32;a:2147483647 : i64->-;",
	       "unused constants of a name, of other types: not paired");
	expect(FN("    %x = arith.constant dense<0.0> : tensor<4xf32>\n"
		  "    %0 = arith.addf %y, %x : tensor<4xf32>\n"),
	       FN("    %x = arith.constant dense<0.0> : tensor<4xf16>\n"
		  "    %0 = arith.addf %y, %x : tensor<4xf16>\n"),
	       "", "x:dense<0.0> : tensor<4xf32>->dense<0.0> : tensor<4xf16>;",
	       "a tensor of another dtype: a change, not a shape");
	expect(FN("    %x = arith.constant 1 : i32\n"
		  "    %0 = arith.addi %n, %x : i32\n"
		  "  }\n  tt.func private @h() {\n"
		  "    %x = arith.constant 2 : i32\n"
		  "    %0 = arith.muli %n, %x : i32\n"),
	       FN("    %x = arith.constant 1 : i32\n"
		  "    %0 = arith.addi %n, %x : i32\n"
		  "  }\n  tt.func private @h() {\n"
		  "    %x = arith.constant 2 : i32\n"
		  "    %0 = arith.muli %n, %x : i32\n"),
	       "", "", "a name in two functions: each use its own");
}

/* A kernel function of n constants named NAME0..., each used, of values
 * from base on, near TCFS_TTIR_MAX; owned by the caller (free()). */
static char *many(size_t n, const char *name, int base)
{
	size_t cap = TCFS_TTIR_MAX, at;
	char *t = malloc(cap);

	at = (size_t)snprintf(t, cap, "%s", FN(""));
	at -= strlen("  }\n}\n");
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(t + at, cap - at,
				       "%%%s%zu = arith.constant %zu : i32\n"
				       "%%u%zu = arith.addi %%n, %%%s%zu : i32\n",
				       name, i, i + (size_t)base, i, name, i);
	return t;
}

/* Kernels of thousands of constants: every one paired, or none (past the
 * alignment's table), within the bounds. */
static void large(void)
{
	char *a = many(6000, "v", 0), *b = many(6000, "v", 1);
	char *c = many(6000, "w", 1);
	const cJSON *more;
	int rc;
	cJSON *o = diff(a, b, &rc);

	more = cJSON_GetObjectItem(o, "unlisted");
	tap_ok(rc == 0 && cJSON_GetArraySize(cJSON_GetObjectItem(
				  o, "constants")) == TCFS_TTIR_SHOW_MAX &&
		       cJSON_IsNumber(more) &&
		       more->valueint == 6000 - TCFS_TTIR_SHOW_MAX,
	       "6000 constants each changed: %d listed, the rest counted",
	       TCFS_TTIR_SHOW_MAX);
	cJSON_Delete(o);
	o = diff(a, c, &rc);
	more = cJSON_GetObjectItem(o, "unlisted");
	tap_ok(rc == 0 && cJSON_IsNumber(more) &&
		       more->valueint == 12000 - TCFS_TTIR_SHOW_MAX,
	       "6000 constants, none of whose parts the other has: 6000 "
	       "added, 6000 removed");
	cJSON_Delete(o);
	free(c);
	free(b);
	free(a);
}

/* Text that is not TTIR as Triton writes it, or is cut short. */
static void hostile(void)
{
	static char big[TCFS_TTIR_MAX + 2];
	char nul[] = HEAD "tt.func public @k(%a: i\0 32) {\n";
	char deep[600] = HEAD "tt.func public @k(%a: ";
	char *cut;
	int rc, bad = 0;
	cJSON *o;

	refused("", f32, -EINVAL, "an empty text");
	refused(f32, "module {\n}\n", -EINVAL, "no tt.func");
	refused(f32, HEAD "tt.func public @k(%a: !tt.ptr<f32 {x}) {\n",
		-EINVAL, "brackets that do not pair");
	refused(f32, HEAD "tt.func public @k(%a: i32 loc(\"a\n\")) {\n",
		-EINVAL, "a string cut by a line");
	refused(f32, HEAD "tt.func public @k(%a i32) {\n", -EINVAL,
		"an argument with no type");
	refused(f32, HEAD "tt.func public @k(a: i32) {\n", -EINVAL,
		"an argument with no %");
	refused(f32, HEAD "tt.funcpublic @k(%a: i32) {\n", -EINVAL,
		"tt.func run into its next word");
	for (size_t i = strlen(deep); i < sizeof(deep) - 2; i++)
		deep[i] = '<';
	refused(f32, deep, -EINVAL, "brackets nested 500 deep");
	memset(big, ' ', sizeof(big) - 1);
	refused(f32, big, -EFBIG, "a text over TCFS_TTIR_MAX");
	rc = tcfs_ttir_diff(f32, strlen(f32), nul, sizeof(nul) - 1, "k", &o);
	tap_ok(rc == 0 && o && strstr(show(o, "arguments"), "i? 32"),
	       "a NUL in a type: compared, shown as ?");
	cJSON_Delete(o);
	/* Every prefix of a real text: compared or refused, never read past
	 * its end (ASan). */
	for (size_t n = 0; n < sizeof(f32) - 1; n++) {
		cut = malloc(n + !n);	/* exactly n: ASan sees a read past */
		memcpy(cut, f32, n);
		rc = tcfs_ttir_diff(f32, strlen(f32), cut, n, "add_kernel", &o);
		bad += rc != 0 && rc != -EINVAL;
		cJSON_Delete(o);
		free(cut);
	}
	tap_eq(bad, 0, "every prefix of a kernel's TTIR: compared or EINVAL");
}

int main(void)
{
	signatures();
	constants();
	pairing();
	large();
	hostile();
	return tap_done();
}
