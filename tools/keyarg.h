/*
 * keyarg: a kernel key as a user types it, abbreviated as git takes a
 * hash, made whole for every command that takes one (why, trust).
 */
#ifndef TCFS_KEYARG_H
#define TCFS_KEYARG_H

#include <stddef.h>

struct tcfs_store;

/* The whole key that key begins (index/model/kernel.h's
 * tcfs_kernel_resolve, FX graphs too with fx_dir) into out, of len bytes;
 * where none does, key itself, for the command to say what it finds
 * there.  CLI_OK; CLI_USAGE when key begins several keys (the error names
 * them, and git too exits so); CLI_FAIL when the store cannot be read or
 * key is over len. */
int keyarg(const char *cmd, struct tcfs_store *s, const char *key,
	   const char *fx_dir, char *out, size_t len);

#endif
