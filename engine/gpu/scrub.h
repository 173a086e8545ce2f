/* scrub.h: L2 filled with a buffer of its own before a sample, where kernels are timed in turn.
 *
 * Why: the input sets of a timed unit are rotated past twice the L2 (bench.h), which is enough
 * when a kernel follows itself: what it left in L2 is gone before it reads it again. When another
 * kernel ran just before, what that kernel read last (the last input sets, at the default cache
 * priority) may still be in L2 when this one gets there, if this one loads with evict_first (the
 * sm90 family's weights at decode sizes): its own lines are evicted first, the other kernel's
 * stay. On the H100 that made our decode calls 2-7% faster beside cuBLASLt than alone, and not
 * cuBLASLt's (docs/perf.md, "Each provider alone"). A read of twice the L2 from a buffer of its
 * own (clean lines, default priority) before each sample of a round-robin leaves nothing of the
 * kernel before. It is enqueued before the sample's start event: not timed. */
#ifndef AT_GPU_SCRUB_H
#define AT_GPU_SCRUB_H

#include "gpuctx.h"

/* Enqueues the scrub on g's stream; the buffer (2 x L2, zeroed) is made on first use and kept for
 * the process (a worker has one context). */
int at_l2_scrub(const at_gpu *g);

#endif
