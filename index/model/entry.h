/*
 * entry: what a cache probe finds, by where its name sits.  Triton's key
 * dirs have their rule in kernel.h (tcfs_kernel_key_dir_at); this is the
 * rule for the caches above Triton's, Inductor's and vLLM's, whose entries
 * are recognised by their names and the dirs they sit in
 * (tests/fixtures/inductor-2.11-trace.txt):
 *
 *   fxgraph/XX/FKEY           an FX graph (a dir of entries), XX its
 *                             key's 2nd and 3rd characters
 *   aotautograd/AKEY          an AOTAutograd entry (a dir)
 *   XX/CKEY.py                a compiled module, XX as above
 *   XX/HASH.best_config       autotune results, in a dir of two characters
 *   rank_I_J/[PREFIX/]artifact_compile_range_*   vLLM's compiled artifacts
 *
 * Every one of them is looked up before it is read or written.  A user's
 * own dir (fs/users.c: .tcfs-private-UID) holds that user's entries in
 * the place they name, so it is seen through: its parent is the place.
 */
#ifndef TCFS_ENTRY_H
#define TCFS_ENTRY_H

#include "index/base/name.h"
#include "index/model/event.h"
#include "index/tree/nsread.h"

struct tcfs_store;

/* The kind of probe that looking up name (of artifact art, as
 * tcfs_name_artifact says) in dir parent is, for the caches above
 * Triton's; 0 for none (Triton's own: kernel.h). */
enum tcfs_probe tcfs_entry_kind(struct tcfs_store *s,
				const struct tcfs_node *parent,
				const char *name, enum tcfs_artifact art);

/* Whether dir is where files that are entries sit (a dir of two
 * characters, a vLLM rank's dir or one below it): a file written there
 * under a temp name and renamed onto an entry's name is one. */
int tcfs_entry_place(struct tcfs_store *s, const struct tcfs_node *dir);

#endif
