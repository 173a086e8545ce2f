/* lookup.h: the configuration for a problem, from the first source that has one, in this order:
 * the DB's own results for the exact (N, K); the exported file for (N, K) (and, for the M between
 * its entries from 257 to 2048, the tag's time model's picks at every 64 rows: the path then names
 * both); the tag's time model
 * (<device>-GEMM-<tag>-model.json, timemodel.h: per M the config of least predicted time); the default file of the
 * tag (its entries for M up to 128 replaced by those of the nearest tuned (N, K)'s file, when there
 * is one: the path then names both); the op's built-in default. `autotune query` prints which source answered, and the runtime
 * library asks the same question. A source that is missing, corrupt or of another schema is
 * skipped with a warning, never a crash. Within the answer, at_config_for_m picks the entry for M:
 * the per-M entry (M_LEQ_<m>) of the smallest tuned M at or above it where the source has them,
 * else the seed's bucket. */
#ifndef AT_LOOKUP_H
#define AT_LOOKUP_H

#include "config.h"
#include "store.h"

typedef enum { AT_SRC_DB, AT_SRC_NK_FILE, AT_SRC_MODEL_FILE, AT_SRC_DEFAULT_FILE, AT_SRC_BUILTIN } at_source;
extern const char *const AT_SOURCE_NAMES[5];

/* Was the answer a guess for an (N, K) nobody tuned (the time model or the default file)? The
 * runtime's tail may then run a call whole as a tail config. By name: at_selection.source. */
int at_source_untuned(at_source s);
int at_source_name_untuned(const char *name);

typedef void (*at_warn_fn)(const char *msg);

typedef struct at_lookup_req {
  const char *op;
  const char *tag;                  /* NULL: any tag of the op */
  const char *device_names[2];      /* tried in order, e.g. the product name, then "sm90"; NULL ends */
  int64_t n, k;
  at_store *db;                     /* NULL: no DB */
  const char *configs_dir;          /* NULL: no files */
  at_warn_fn warn;                  /* NULL: warnings to stderr */
  int sm_count;                     /* the device's, for the time model; 0: the model's own */
  int no_plan;                      /* 1: the caller launches without the op's plan (the runtime with
                                       its tail off): the time model does not compose it in */
} at_lookup_req;

typedef struct at_lookup_result {
  at_config_set set;
  at_source source;
  char path[1024]; /* the file that answered */
} at_lookup_result;

/* Never fails for a known op: the built-in default is the last answer. AT_ERR_INPUT for an
 * unknown op. */
int at_lookup(const at_lookup_req *q, at_lookup_result *out);

#endif
