/*
 * ttconst: the arith.constants of two kernels' TTIR, each paired with
 * the one that corresponds in the other (ttir.h reports the pairs whose
 * value changed).  Pairing them by position made one inserted constant
 * shift every later one: the matmul kernels of tests/fixtures showed 12
 * "changes" such as 32 : i32 -> dense<-2147483648> : tensor<1x128xi64>
 * where two constants had changed.
 *
 * A constant corresponds to the one that plays its part: the same loc
 * name (the SSA name Triton derives from the source's variable, "offs"
 * of %offs_17) feeding the same operand of the same op (its first use).
 * The two sequences of those parts are aligned (a longest common
 * subsequence), so an insertion stays one insertion; what the alignment
 * leaves is paired by part in order (ops reordered), then by loc name.
 *
 * Bounded: the text is ttir.h's (TCFS_TTIR_MAX), the alignment's table
 * at most TTCONST_CELLS_MAX cells (beyond, only the later passes pair).
 */
#ifndef TCFS_TTCONST_H
#define TCFS_TTCONST_H

#include <cjson/cJSON.h>
#include <stddef.h>

/*
 * Appends to arr, in b's order and then the ones a had alone, one
 * {"names"?: [N, ...], "from": C | null, "to": C | null} for every change
 * of a constant's value (null: added, removed), at most max of them;
 * *more gets how many further ones were left out.  C is "VALUE : TYPE".
 * A change is listed once however many constants make it, with their
 * loc names (at most 8; none for names made from the value: %c32_i32,
 * %cst); a tensor constant whose shape alone changed not at all (the
 * shape follows from a constant that is listed).  0 or -ENOMEM.
 */
int tcfs_ttconst_diff(const char *a, size_t alen, const char *b, size_t blen,
		      cJSON *arr, size_t max, size_t *more);

#endif
