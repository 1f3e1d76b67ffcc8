/*
 * wire: what a kernel is in Redis, in Triton's format and tcfs's.
 *
 * Triton's RemoteCacheManager stores each file of a key dir as one string
 * (keyfmt.h), and the group as __grp__NAME.json =
 * json.dumps({"child_paths": sorted(names)}): names, not paths.  tcfs
 * writes exactly that, and beside it a sidecar, __tcfs__NAME.json (for a
 * group) or __tcfs__FILE.json (for a single file such as a launcher
 * module), which stock Triton never reads:
 *
 *   {"tcfs": 1, "key": KEY, "name": NAME-or-FILE, "kind": "group"|"file",
 *    "files": [{"name": F, "size": N, "sha256": HEX}, ...],
 *    "inputs": [[NAME, HASH], ...],
 *    "hmac": HEX}
 *
 * inputs, optional, only in an FX graph entry's sidecar: the names and
 * hashes of the entry's debug lines (fxgraph.h), in its order, so that
 * `tcfs why --remote` compares graphs without fetching their entries.
 * files lists every file the group names plus the group file itself (for a
 * single file: that file), sorted by name.  hmac, present only when the
 * writer had a key, is HMAC-SHA256 over tcfs_sidecar_signed_text: the
 * sidecar proves bytes whole, the HMAC who wrote them.
 *
 * Everything here parses bytes from the network: hostile until checked.
 */
#ifndef TCFS_REMOTE_WIRE_H
#define TCFS_REMOTE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/name.h"

/* Children of one group at most, and a group or sidecar value's size. */
#define TCFS_WIRE_FILES_MAX 64
#define TCFS_WIRE_JSON_MAX (64u << 10)
/* A sidecar's: an FX graph's inputs make it tens of KB (540 for a small
 * model, 56 KB), a big model's more. */
#define TCFS_WIRE_SIDECAR_MAX (1u << 20)

/* The Redis file names of a kernel NAME and a single file FILE: 0,
 * -ENAMETOOLONG (over len, or over TCFS_NAME_MAX), or -EINVAL for a name
 * that is not a plain file name. */
int tcfs_wire_group_file(const char *name, char *buf, size_t len);
int tcfs_wire_sidecar_file(const char *name_or_file, char *buf, size_t len);

/* A group's children, by name. */
struct tcfs_wire_names {
	size_t n;
	char name[TCFS_WIRE_FILES_MAX][TCFS_NAME_MAX + 1];
};

/* Renders {"child_paths": [sorted names]} as json.dumps does (", " and
 * ": " separators, ensure_ascii escapes), *out owned by the caller
 * (free()).  The names need not be sorted on entry.  0, -ENOMEM, or
 * -EILSEQ and -E2BIG as tcfs_sidecar_render. */
int tcfs_wire_group_render(const struct tcfs_wire_names *names, char **out,
			   size_t *len);

/* Parses a group value: {"child_paths": [...]} (Triton's remote format) or
 * {"child_paths": {"F": path, ...}} (its file format: the keys are the
 * names).  Every name must be a plain file name (tcfs_name_check: no "/",
 * not "." nor ".."), none a group file, sidecar or temp name
 * (__grp__*, __tcfs__*, tmp.pid_*, *.tmp.pid_*: each means something
 * else in a key dir), none twice, at most TCFS_WIRE_FILES_MAX, and the
 * value at most TCFS_WIRE_JSON_MAX bytes.  0, or -EBADMSG with a message
 * saying which name or what is wrong. */
int tcfs_wire_group_parse(const char *json, size_t len,
			  struct tcfs_wire_names *out);

struct tcfs_sidecar_file {
	char name[TCFS_NAME_MAX + 1];
	uint64_t size;
	unsigned char sha256[32];
};

/* Bounds of an "inputs" list: as many pairs as fxgraph.h takes lines,
 * a name or hash at most this long (PyTorch's are about 30 and 52). */
#define TCFS_WIRE_INPUTS_MAX 8192
#define TCFS_WIRE_INPUT_NAME_MAX 256
#define TCFS_WIRE_INPUT_HASH_MAX 128

struct tcfs_sidecar_input {
	char *name, *hash;		/* NUL-terminated, owned */
};

/* A heap array, so that the many sidecars without inputs (every
 * kernel's) cost one pointer. */
struct tcfs_sidecar_inputs {
	size_t n, cap;
	struct tcfs_sidecar_input *v;
};

struct tcfs_sidecar {
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];	/* NAME of a group, FILE of a file */
	int group;			/* 1: "group", 0: "file" */
	size_t n;
	struct tcfs_sidecar_file f[TCFS_WIRE_FILES_MAX + 1];
	int has_hmac;
	unsigned char hmac[32];
	/* NULL: none.  Owned: tcfs_sidecar_release. */
	struct tcfs_sidecar_inputs *inputs;
};

/* Frees sc's inputs (sc->inputs becomes NULL); the rest of sc is plain
 * data.  Every sidecar that tcfs_sidecar_parse filled or
 * tcfs_sidecar_input_add grew must be released. */
void tcfs_sidecar_release(struct tcfs_sidecar *sc);

/* Appends the input (name, hash) of nlen and hlen bytes to sc: 0, or
 * -EINVAL (empty, over TCFS_WIRE_INPUT_NAME_MAX or _HASH_MAX, or a NUL
 * in it), -E2BIG past TCFS_WIRE_INPUTS_MAX, -ENOMEM. */
int tcfs_sidecar_input_add(struct tcfs_sidecar *sc, const char *name,
			   size_t nlen, const char *hash, size_t hlen);

/* The one entry of sc named name, or NULL. */
const struct tcfs_sidecar_file *tcfs_sidecar_find(const struct tcfs_sidecar *sc,
						  const char *name);

/* Adds a file (its bytes hashed with SHA-256) to sc: 0, or -E2BIG when
 * sc is full, -EEXIST when it has the name, -ENAMETOOLONG over
 * TCFS_NAME_MAX. */
int tcfs_sidecar_add(struct tcfs_sidecar *sc, const char *name,
		     const void *bytes, size_t len);

/* The text the HMAC signs, so that the JSON's layout (member order,
 * spacing, escapes) does not matter, and no name can pass for another
 * line: each string as its byte length in decimal, ':' and its bytes;
 * the files sorted by name (strcmp); sizes in decimal, hashes in
 * lowercase hex:
 *
 *   tcfs-sidecar-v1\n
 *   key LEN:KEY\n
 *   name LEN:NAME\n
 *   kind group|file\n
 *   files COUNT\n
 *   LEN:FILE SIZE SHA256HEX\n          (one line per file)
 *   inputs COUNT\n                      (only with inputs)
 *   LEN:NAME LEN:HASH\n                 (one line per input, in order)
 *
 * (a sidecar without inputs signs the text it always did).
 * e.g. in Python: hmac.new(key, text, hashlib.sha256).hexdigest().
 * *text owned by the caller (free()).  0 or -ENOMEM. */
int tcfs_sidecar_signed_text(const struct tcfs_sidecar *sc, char **text,
			     size_t *len);

/* Renders sc (files sorted by name), signed with key (klen bytes) when
 * klen > 0.  *out owned by the caller (free()).  0, -ENOMEM, -EILSEQ
 * (a name that is not UTF-8, which JSON cannot carry) or -E2BIG (over
 * TCFS_WIRE_SIDECAR_MAX: no reader would take it), with a message. */
int tcfs_sidecar_render(const struct tcfs_sidecar *sc,
			const unsigned char *key, size_t klen, char **out,
			size_t *len);

/* Parses a sidecar value (at most TCFS_WIRE_SIDECAR_MAX bytes), checking
 * that it is version 1 with no member twice nor unknown, names key and
 * name (any plain name when name is NULL), that its file names are plain and distinct, and that it lists
 * the group file (a group's) or that one file alone (a file's), and that
 * inputs, when present, is a list of [NAME, HASH] string pairs within the
 * bounds above.  out is overwritten (release its inputs first).  0,
 * -ENOMEM, or -EBADMSG with a message (out is then zeroed). */
int tcfs_sidecar_parse(const char *json, size_t len, const char *key,
		       const char *name, struct tcfs_sidecar *out);

/* 0 when sc carries an HMAC that key (klen bytes) makes; -EPERM when it
 * carries none or another (message says which). */
int tcfs_sidecar_verify(const struct tcfs_sidecar *sc,
			const unsigned char *key, size_t klen);

/* 0 when bytes are the file name's as sc lists it (size and SHA-256);
 * -EBADMSG with a message otherwise (not listed, size, hash). */
int tcfs_sidecar_check(const struct tcfs_sidecar *sc, const char *name,
		       const void *bytes, size_t len);

#endif
