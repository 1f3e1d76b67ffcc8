/*
 * layer: an image layer, a gzip'd tar, written from entries (tcfs pack)
 * and read back into a directory (tcfs unpack), refusing anything a
 * hostile image could use to write outside it or to exhaust the disk.
 */
#ifndef TCFS_TOOLS_LAYER_H
#define TCFS_TOOLS_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "oci.h"

struct layer_writer;
struct progress;

/* Starts a layer in a temp file in dir.  Entries get fixed times and
 * owners, and the gzip stream no timestamp: the same entries make the
 * same bytes, so the same digest. */
int layer_writer_open(const char *dir, struct layer_writer **out);
int layer_add_dir(struct layer_writer *w, const char *path);
int layer_add_file(struct layer_writer *w, const char *path, unsigned mode,
		   const void *bytes, size_t len);
int layer_add_symlink(struct layer_writer *w, const char *path,
		      const char *target);
/* Bytes of file data added so far. */
uint64_t layer_bytes(const struct layer_writer *w);
/* Finishes the layer: d (media type OCI_MT_LAYER_GZIP) and diff_id (the
 * uncompressed tar's digest) filled, its temp file's path in path
 * (PATH_MAX bytes; the caller moves or removes it).  Frees w, also on
 * error (the temp file removed then). */
int layer_writer_close(struct layer_writer *w, struct oci_desc *d,
		       char *diff_id, char *path);
/* Drops an unfinished layer and its temp file. */
void layer_writer_abort(struct layer_writer *w);

/* Whether a symlink to target may be in a cache image: relative and
 * never "..", so that it points down from its own dir.  Links like that
 * cannot lead out of the image however they chain; tcfs pack writes no
 * other, and tcfs unpack refuses any other. */
int layer_link_ok(const char *target);

/* Extracts the layer read from fd (from its start; left open) into dir,
 * over what the layers below put there when lower is set: its OCI
 * whiteouts remove their entries first, reached without following any
 * link.  Its entries expand to at most *budget bytes (decremented).
 * Refused, before anything of the entry is written: absolute paths,
 * "..", names over 255 bytes, links other than layer_link_ok's, devices
 * and fifos, an entry twice, a whiteout through a link, a corrupt
 * stream; where says which layer, for messages.  prog (may be NULL)
 * counts the entries. */
int layer_extract(int fd, const char *where, const char *dir, int lower,
		  uint64_t *budget, struct progress *prog);

/* Lists the regular files of a layer read from fd (a base image's,
 * already checked against its digest): fn sees each canonical path, with
 * the bytes of the one named want (up to 16 MiB) and NULL for the
 * others.  A negative return of fn stops the scan and is returned. */
int layer_scan(int fd, const char *where, const char *want,
	       int (*fn)(void *ctx, const char *path, const void *data,
			 size_t len),
	       void *ctx);

#endif
