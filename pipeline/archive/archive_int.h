/*
 * archive_int: what the files of pipeline/archive share and nothing else
 * sees: an archive_kernel checked and turned into a store entry, so that
 * several kernels can go into the store in one transaction.
 */
#ifndef KB_PIPELINE_ARCHIVE_ARCHIVE_INT_H
#define KB_PIPELINE_ARCHIVE_ARCHIVE_INT_H

#include "store/store.h"
#include "common/crypto.h"
#include "gpu/eval_result.h"
#include "pipeline/archive/archive.h"

struct archive_built {
	struct store_archive_entry e;	/* points into k's strings and below */
	char psha[CRYPTO_SHA256_HEX], ksha[CRYPTO_SHA256_HEX];
	char *ops, *shape, *ir, *parents;	/* owned */
	struct eval_cand result;	/* k->result parsed; e's backend and device
					 * point into it */
};

/*
 * Check k as archive_add() does and build its entry (not stored). 0, or
 * -EINVAL / -ENOMEM with the reason in err (b then empty). b must not move afterwards
 * (e points into it) and is freed with archive_built_free(); k's strings
 * must outlive it.
 */
int archive_build(const struct archive_kernel *k, struct archive_built *b,
    char *err, size_t errlen);
void archive_built_free(struct archive_built *b);

#endif
