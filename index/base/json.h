/*
 * json: JSON that tcfs prints is valid JSON whatever it quotes.
 *
 * Names, command names and metadata come from caches and processes tcfs
 * does not control, and may hold bytes that are not UTF-8, which cJSON
 * copies into its output as they are: a reader's parser then rejects the
 * whole document.  Such bytes are shown as the text \xNN instead, as
 * tcfs_utf8_printable shows them to a person.
 */
#ifndef TCFS_JSON_H
#define TCFS_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

/* Rewrites, in place, every string and member name of doc that is not
 * valid UTF-8.  0, or -ENOMEM (doc is then partly rewritten, still
 * whole). */
int tcfs_json_sanitize(cJSON *doc);

/* A new JSON string of the n bytes at p, cut at max bytes with "..." and
 * any NUL (which would end it) as '?': a piece of a file from a cache,
 * shown.  A JSON null for p NULL; NULL when out of memory. */
cJSON *tcfs_json_cut(const char *p, size_t n, size_t max);

/* Add member name to o, a number printed as it is, where cJSON (1.7.15)
 * would print any number with sprintf("%1.15g") and read it back with
 * sscanf to check it: a third of list --json at 100,000 kernels.  The
 * member, or NULL when out of memory. */
cJSON *tcfs_json_add_int(cJSON *o, const char *name, int64_t v);
/* The value of a number member, whether cJSON's or printed as it is
 * (tcfs_json_add_int); 0 for anything else. */
double tcfs_json_number(const cJSON *v);
/* ns since the epoch, in seconds to the microsecond. */
cJSON *tcfs_json_add_seconds(cJSON *o, const char *name, int64_t ns);

/*
 * One JSON object written straight to a stream, byte for byte as
 * cJSON_PrintUnformatted prints the same members after
 * tcfs_json_sanitize: for a list of 100,000 objects, where building,
 * printing and freeing a cJSON tree for each was most of the work.
 * Strings and names are copied as they are written; the caller checks
 * the stream's errors (ferror).
 */
struct tcfs_json_obj {
	FILE *f;	/* not owned */
	unsigned members;
};
void tcfs_json_obj_begin(struct tcfs_json_obj *o, FILE *f);
/* v NULL: a JSON null. */
void tcfs_json_obj_str(struct tcfs_json_obj *o, const char *name,
		       const char *v);
void tcfs_json_obj_int(struct tcfs_json_obj *o, const char *name, int64_t v);
/* As tcfs_json_add_seconds. */
void tcfs_json_obj_seconds(struct tcfs_json_obj *o, const char *name,
			   int64_t ns);
void tcfs_json_obj_null(struct tcfs_json_obj *o, const char *name);
void tcfs_json_obj_end(struct tcfs_json_obj *o);

/* Prints doc, sanitized, on out with a newline, and frees it (doc may be
 * NULL: a document that could not be built).  0, or -ENOMEM. */
int tcfs_json_print(cJSON *doc, FILE *out);

#endif
