/* select.h: which configuration each M bucket and each per-M entry gets, from what the DB knows
 * (DESIGN.md, "Buckets"). The seed's buckets:
 *  - a bucket covering one tuned M takes that M's winner (decided by the side-by-side re-timing);
 *  - a bucket covering several takes the config with the lowest sum, over those M, of its time
 *    relative to each M's best, among configs that passed at every one of them;
 *  - `any` is the winner at the largest tuned M;
 *  - a bucket with no tuned M takes the config of the nearest tuned M (in log2 distance from the
 *    bucket's typical M), so that every bucket of an exported file is filled;
 *  - the default file takes, per bucket, the config chosen most often across the tag's (N, K),
 *    ties broken by the lower summed relative time across all of them.
 * And, finer, one entry M_LEQ_<m> per tuned M (config.h; the lookup prefers them to the buckets):
 *  - in an (N, K) set, the winner at m (as a bucket with one tuned M);
 *  - in the default file, per M tuned in any (N, K) of the tag, the winner at m of most of the
 *    (N, K) that tuned m, ties broken by the lower summed relative time at m over them;
 *  - at most AT_MAX_MLEQ: beyond, evenly spaced tuned M, the smallest and largest kept. */
#ifndef AT_SELECT_H
#define AT_SELECT_H

#include "config.h"
#include "store.h"

/* The buckets of one (op, tag, N, K) on a device; AT_ERR_RUNTIME "nothing tuned" when the DB has
 * no checked result for it. */
int at_select_nk(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int64_t n, int64_t k,
                 at_config_set *out);

/* The default file of (op, tag) on a device, from every (N, K) of that tag in the DB. */
int at_select_default(at_store *db, const at_device_entry *dev, const char *op, const char *tag, at_config_set *out);

/* An (op, tag) read from the DB, checked as a search space's are: a known op, a tag of letters,
 * digits and _ (it names files). Fails with "PATH: corrupt DB: ..." otherwise. at_select_nk and
 * at_select_default check it, and every config they read, themselves. */
int at_select_check_names(at_store *db, const char *op, const char *tag);

/* The device names used in file names: "sm90" per arch, or the product with spaces as
 * underscores. */
void at_device_file_name(const at_device_entry *dev, int product, char *out, size_t n);

/* A --device-name argument of a command (cmd, for messages): arch (*product 0) or product (1). */
int at_device_name_kind(const char *arg, const char *cmd, int *product);

/* Before a command (cmd, for messages) writes files named after a DB's devices and tags: no two
 * devices that would get the same file name, and every (op, tag) a name may be made of
 * (at_select_check_names). AT_ERR_INPUT or a corrupt DB's error otherwise. */
int at_select_check_output(at_store *db, const at_device_entry *devs, size_t ndev, int product, const char *cmd);

#endif
