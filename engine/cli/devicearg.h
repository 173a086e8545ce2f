/* devicearg.h: the device a command answers for without running on it (`query`, `warm`): the
 * names the lookup tries (lookup.h), as the runtime library would on that GPU.
 *
 * --device names it (a product name like NVIDIA_H200, whose files are read first and then its
 * arch's, or an arch name like sm90); without it, this machine's first GPU (through a probe
 * worker: the parent never touches CUDA), its product name then its arch name, with its SM count
 * and compute capability; without a GPU, when `infer` is set, the one device the configs directory
 * has files for, or the one arch name among several (said on stderr), else an error asking for
 * --device. */
#ifndef AT_CLI_DEVICEARG_H
#define AT_CLI_DEVICEARG_H

#include "../core/store.h"

typedef struct at_device_arg {
  char names[2][128]; /* tried in order; names[1] is "" when there is one */
  int sm_count;       /* the probed GPU's; 0 otherwise */
  int cc;             /* the probed GPU's compute capability (90); 0 otherwise */
} at_device_arg;

/* cmd names the command in messages. AT_ERR_INPUT when no device can be inferred. */
int at_device_arg_resolve(const char *cmd, const char *device, const char *configs_dir, int infer, at_device_arg *out);

/* A --device that neither the DB (may be NULL) nor the configs directory (may be NULL) knows, nor
 * its arch_name (may be NULL) when the caller looks that up after it, can only get the built-in
 * config, whatever the user meant (a typo, "H100" for "sm90"): a warning on stderr naming the
 * devices they do know. */
void at_device_arg_warn_unknown(const char *cmd, const char *device, const char *arch_name, at_store *db,
                                const char *configs_dir);

#endif
