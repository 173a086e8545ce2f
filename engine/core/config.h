/* config.h: a kernel configuration as it leaves the tuner (exported JSON) and reaches the runtime:
 * which template variant, how to instantiate it, and its parameters; and the entries that map a
 * problem's M to one configuration: the seed's M buckets (DESIGN.md, "Buckets") and, finer, one
 * entry per tuned M (M_LEQ_<m>). docs/formats.md describes the files. */
#ifndef AT_CONFIG_H
#define AT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"
#include "json.h"
#include "proto.h"

enum {
  AT_BUCKET_SMALL,  /* M < 32 */
  AT_BUCKET_M32,    /* M == 32 */
  AT_BUCKET_M64,    /* 32 < M <= 64 */
  AT_BUCKET_M128,   /* 64 < M <= 128 */
  AT_BUCKET_LARGE,  /* 128 < M <= 256 */
  AT_BUCKET_XLARGE, /* M > 256 */
  AT_BUCKET_ANY,    /* the winner at the largest tuned M: the fallback of a missing bucket */
  AT_NBUCKETS
};
extern const char *const AT_BUCKET_NAMES[AT_NBUCKETS];

/* The rule for names that end up in file names or kernel names: tags, variant and constraint names
 * are letters, digits and _. One rule for names read from a search space and names read back from
 * a DB, which may have been edited by hand. */
int at_name_ok(const char *s);

/* The bucket of an M (>= 1); never AT_BUCKET_ANY. */
int at_bucket_of(int64_t m);

/* Per-M entries: M_LEQ_<m> holds the winner at the tuned M m and answers every M above the next
 * smaller tuned M up to m. At most AT_MAX_MLEQ per set; m at most AT_MLEQ_MAX_M (the runtime's
 * largest M), so that a name fits 16 bytes. An entry index (at_config_for_m) below AT_NBUCKETS is a
 * bucket, else the M_LEQ entry index - AT_NBUCKETS. */
enum { AT_MAX_MLEQ = 48, AT_MAX_ENTRIES = AT_NBUCKETS + AT_MAX_MLEQ };
#define AT_MLEQ_MAX_M (1LL << 28)

typedef struct at_config {
  int valid;
  char variant[64];
  char family[32];
  char template_name[128]; /* file name in the templates directory */
  char entry[512];         /* name-expression pattern, parameters by name */
  int nparams;             /* sorted by name */
  char names[AT_MAX_PARAMS][32];
  int64_t values[AT_MAX_PARAMS];
} at_config;

/* The buckets and per-M entries of one (op, tag, device, N, K); N = K = 0 for a default file. */
typedef struct at_config_set {
  char op[64], tag[64], device[128], device_name[128], arch[16];
  int64_t n, k;
  at_config bucket[AT_NBUCKETS];
  int ntuned[AT_NBUCKETS];
  int64_t tuned_m[AT_NBUCKETS][16]; /* the tuned M that chose each bucket */
  double time_us[AT_NBUCKETS][16];
  int from_sets; /* default file: how many (N, K) it summarises */
  int nmleq;     /* per-M entries; 0 in a file of the seed's format: the buckets answer */
  int64_t mleq_m[AT_MAX_MLEQ]; /* ascending, distinct */
  at_config mleq[AT_MAX_MLEQ]; /* one not valid (not launchable): its M fall back to the buckets */
  double mleq_time_us[AT_MAX_MLEQ]; /* the config's time at that M; 0 when not known (default file) */
} at_config_set;

/* params: a JSON object text like {"BLOCK_M":64,...}. Fails on anything but integer values. */
int at_config_set_params(at_config *c, const char *params_json);
char *at_config_params_json(const at_config *c); /* canonical, keys sorted; malloc'd */
char *at_config_name_expr(const at_config *c);   /* entry with the values substituted; malloc'd */
int at_config_same(const at_config *a, const at_config *b);
/* The same family, template and parameters (names in the same order), whatever the variant's
 * name: files and the time model's menu name one config differently. */
int at_config_same_kernel(const at_config *a, const at_config *b);

/* The index of op's shape parameter (op.h, shape_param) in c when c has it nonzero, else -1. */
int at_config_shape_param(const at_op *op, const at_config *c);
/* at_config_same_kernel, but a nonzero value of op's shape parameter (op.h) matches any nonzero
 * value: one config to the time model, whatever shape it was measured on. */
int at_config_same_but_shape(const at_op *op, const at_config *a, const at_config *b);
/* Gives c the value of op's shape parameter for (n, k) (op.h, shape_value) when it has it nonzero:
 * 1 when c keeps it (or has none to keep), 0 when the shape cannot hold it and c now has 0 there
 * (the config's form without it, with the rest of its parameters: for SCALE_KB, the stages it
 * was given beside its slots). A config measured on one (N, K) goes through this before it is
 * launched on another. */
int at_config_for_shape(const at_op *op, at_config *c, int64_t n, int64_t k);
char *at_config_set_to_json(const at_config_set *cs); /* malloc'd, ends with a newline */
/* Reads and validates a config file's content; AT_ERR_INPUT naming what is wrong. */
int at_config_set_from_json(const char *name, const at_json *j, at_config_set *out);

/* One config object ({"variant", "family", "template", "entry", "params"}, as in a bucket or
 * per-M entry); where names it in errors (AT_ERR_INPUT). */
int at_config_from_json(const char *where, const at_json *c, at_config *cfg);

/* The configuration for M: the M_LEQ entry of the smallest tuned M >= M, "any" beyond the largest;
 * in a set without M_LEQ entries (or where that entry is not valid), M's bucket, else "any". NULL
 * when none is valid. *entry gets the entry index used (see AT_MAX_ENTRIES). Reads the set only: no
 * allocation, cheap enough for the launch path (a loop over at most AT_MAX_MLEQ integers). */
const at_config *at_config_for_m(const at_config_set *cs, int64_t m, int *entry);

/* An entry by index: NULL when out of range or not valid. */
const at_config *at_config_entry(const at_config_set *cs, int entry);

/* An entry's name ("small", ..., "any", "M_LEQ_512"); out of at least 16 bytes. */
void at_config_entry_name(const at_config_set *cs, int entry, char *out, size_t n);

/* Parses an M_LEQ key: 0 and *m for "M_LEQ_<m>" with m a decimal from 1 to AT_MLEQ_MAX_M, no sign
 * or leading zero; -1 otherwise. */
int at_mleq_parse(const char *key, int64_t *m);

/* Do two sets answer every M with the same configs (buckets and M_LEQ entries)? */
int at_config_set_same(const at_config_set *a, const at_config_set *b);

/* The config's parameters as the op's functions take them; names must hold AT_MAX_PARAMS. */
at_params at_config_params(const at_config *c, const char **names);

/* Does the part of an entry after '<' mention this name as a whole identifier? */
int at_entry_mentions(const char *entry, const char *name);

/* Instantiates an entry pattern: every parameter name replaced by its value. malloc'd. */
char *at_entry_instantiate(const char *entry, const char *const *names, const int64_t *values, int n);

#endif
