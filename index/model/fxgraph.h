/*
 * fxgraph: what an Inductor FX graph cache entry says of the graph's key.
 *
 * Inductor names an FX graph (XX/FKEY/ENTRY in its dir: entry.h) by a
 * hash of its inputs: the graph module, the example inputs' metadata,
 * the kwargs, the configuration, the versions.  PyTorch (2.11 here, and every release
 * whose CompiledFxGraph has _fx_graph_cache_debug_lines) pickles, into
 * the entry, one line per input it hashed:
 *
 *   [HASH] NAME: VALUE
 *
 * ("[2sqe...] example_inputs[0]: TensorMetadata(dtype=torch.float32,
 * shape=torch.Size([128, 1024]), ...)").  Two graphs' lines say which
 * inputs set them apart, as two kernels' metadata does (why.h).
 *
 * The entry is a pickle from the cache: hostile bytes.  It is never
 * unpickled.  Its opcodes are only walked, each argument's length checked
 * against what is left, to find the strings that have a debug line's
 * shape; nothing is built or called.  At most TCFS_FXGRAPH_MAX bytes are
 * read and TCFS_FXGRAPH_LINES_MAX lines taken.
 */
#ifndef TCFS_FXGRAPH_H
#define TCFS_FXGRAPH_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Entries bundle their Triton kernels' binaries: a few hundred KB for a
 * small model, tens of MB for a big one. */
#define TCFS_FXGRAPH_MAX (128u << 20)
/* PyTorch 2.11 writes about 400 lines; past this the entry is not its. */
#define TCFS_FXGRAPH_LINES_MAX 8192
/* At most this many differences are reported, each side's text cut at
 * TCFS_FXGRAPH_TEXT_MAX bytes with "...". */
#define TCFS_FXGRAPH_SHOW_MAX 64
#define TCFS_FXGRAPH_TEXT_MAX 200

/* One debug line; its pieces point into the entry's bytes (not
 * NUL-terminated), which must outlive it. */
struct tcfs_fx_line {
	const char *name, *hash, *value;
	size_t name_len, hash_len, value_len;
};

/* The lines of one entry, in its order, one per name (the first). */
struct tcfs_fx_details {
	struct tcfs_fx_line *v;		/* owned: tcfs_fx_details_free */
	size_t n;
};

/*
 * Finds the debug lines in the pickle buf[0..len).  0 on success (n may
 * be 0: an entry from a PyTorch that writes none); -EINVAL when buf is
 * not a pickle (an unknown opcode, an argument past its end, no STOP);
 * -E2BIG past TCFS_FXGRAPH_LINES_MAX lines; -ENOMEM.
 */
int tcfs_fx_details(const char *buf, size_t len, struct tcfs_fx_details *out);
void tcfs_fx_details_free(struct tcfs_fx_details *d);

/* How many inputs set b apart from a: names whose hash differs, or that
 * only one of them has. */
size_t tcfs_fx_distance(const struct tcfs_fx_details *a,
			const struct tcfs_fx_details *b);

/*
 * What sets b (the graph asked about) apart from a (the nearest cached),
 * as a new array owned by the caller (cJSON_Delete), in b's order then
 * the names only a has:
 *   [{"input": NAME, "from": A, "to": B}, ...]
 * A and B are the values, null for a side that lacks the input.  Of a
 * value written as CALL(k=v, ...) (TensorMetadata) only the fields that
 * differ are given; of a value of many lines (the graph module's code)
 * the first line that differs, as "line N: TEXT".  -ENOMEM.
 */
int tcfs_fx_diff(const struct tcfs_fx_details *a,
		 const struct tcfs_fx_details *b, cJSON **out);

#endif
