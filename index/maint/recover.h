/*
 * recover: what a writer that did not stop cleanly left behind, put right
 * before the next writer uses the store.
 *
 * Not part of opening a store (store.c knows nothing of the tree or of
 * repairs): whoever opens one as a writer hands tcfs_recover to
 * tcfs_store_open (tcfs_store_opts.recover), which runs it with the
 * writer lock held, before the store is used or handed out.
 */
#ifndef TCFS_RECOVER_H
#define TCFS_RECOVER_H

struct tcfs_store;
struct tcfs_durable_report;

/* Removes what dead writers left in staging/ and in limbo (tcfs_ns_forget),
 * then checks the blobs a writer that did not stop cleanly may not have
 * made durable, dropping the files of those lost (tcfs_durable_recover,
 * damage.h); what it found goes to *out.  storefd (borrowed) is the store
 * directory. */
int tcfs_recover(struct tcfs_store *s, int storefd,
		 struct tcfs_durable_report *out);

#endif
