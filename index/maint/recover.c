/* recover: a writer's first step, putting right what a dead one left. */
#include "index/maint/recover.h"

#include <stdint.h>

#include "index/blob/cas.h"
#include "index/maint/damage.h"
#include "index/blob/durable.h"
#include "index/tree/ns.h"
#include "index/store/store.h"

static int drop_users(void *ctx, const struct tcfs_hash *h,
		      uint64_t *dropped)
{
	return tcfs_damage_drop_users(ctx, h, NULL, NULL, dropped);
}

int tcfs_recover(struct tcfs_store *s, int storefd,
		 struct tcfs_durable_report *out)
{
	int rc;

	/* Run for a writer only: no other can be running, so what a dead
	 * one left in staging/ and in limbo is nobody's any more. */
	rc = tcfs_cas_clean_staging(tcfs_store_cas(s), NULL);
	if (rc == 0)
		rc = tcfs_ns_purge_unlinked(s);
	if (rc == 0)
		rc = tcfs_durable_recover(tcfs_store_db(s), tcfs_store_cas(s),
					  storefd, tcfs_store_path(s),
					  drop_users, s, out);
	return rc;
}
