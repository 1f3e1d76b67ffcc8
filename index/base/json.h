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

/* Prints doc, sanitized, on out with a newline, and frees it (doc may be
 * NULL: a document that could not be built).  0, or -ENOMEM. */
int tcfs_json_print(cJSON *doc, FILE *out);

#endif
