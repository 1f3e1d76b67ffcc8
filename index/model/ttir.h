/*
 * ttir: what sets two Triton kernels' TTIR apart, where their metadata
 * does not (why.h).  Triton caches a kernel's TTIR, MLIR text, as
 * NAME.source; two kernels of one name whose metadata is the same most
 * often differ in the kernel function's signature (an argument's type or
 * its divisibility, from the arguments' dtypes and alignment) or in the
 * constants it was specialised for (a BLOCK constexpr).
 *
 * The text comes from the cache: anything, of any size.  It is read only
 * up to TCFS_TTIR_MAX bytes, never trusted to be well formed or
 * NUL-terminated, and what it yields is bounded (TCFS_TTIR_SHOW_MAX
 * entries of TCFS_TTIR_TEXT_MAX bytes).
 */
#ifndef TCFS_TTIR_H
#define TCFS_TTIR_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* TTIR larger than this is not compared (the fixtures' largest is 26 KB;
 * the biggest Inductor kernels a few hundred KB). */
#define TCFS_TTIR_MAX (512u << 10)
/* At most this many arguments and this many constants are listed: more
 * than a person reads (tcfs why shows 20 unless --all), few enough that
 * tcfs stats --json, which holds one list per new kernel, stays small. */
#define TCFS_TTIR_SHOW_MAX 128
/* An argument's type or a constant longer than this is cut, with "...". */
#define TCFS_TTIR_TEXT_MAX 200

/*
 * Compares a (the nearest cached kernel's TTIR) with b (the kernel
 * asked about) for the kernel function name (the tt.func of that symbol;
 * else the first public one).  On success *out is a new object, owned by
 * the caller (cJSON_Delete):
 *   {"arguments": [{"name": N | "index": I, "from": T, "to": T}, ...],
 *    "constants": [{"names"?: [N, ...], "from": C, "to": C}, ...],
 *    "unlisted": U}
 * where an argument is named by its loc name (else its position) and T
 * is its type with its attributes ("!tt.ptr<f32> {tt.divisibility = 16 :
 * i32}"), null where one side lacks it; C is an arith.constant's value
 * and type ("1024 : i32"), null for one added or removed: each constant
 * paired with the one that plays its part in the other (ttconst.h), and
 * each change once, with the loc names of the constants that make it
 * (none for names made from the value).  In b's order, then what a had
 * alone.  Tensor constants whose value is the same and only their shape
 * changed are left out: the shape follows from a constant that is
 * reported.  U counts the changes left out past TCFS_TTIR_SHOW_MAX.
 * Returns -EFBIG when either text is larger than TCFS_TTIR_MAX, -EINVAL
 * when either has no kernel function whose signature parses, -ENOMEM.
 */
int tcfs_ttir_diff(const char *a, size_t alen, const char *b, size_t blen,
		   const char *name, cJSON **out);

#endif
