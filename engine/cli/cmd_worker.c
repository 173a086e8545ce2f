/* cmd_worker.c: `autotune worker` (internal): the process that owns one GPU for the tuner.
 *   autotune worker --gpu N    serve requests on fds 3 (in) and 4 (out), see core/proto.h
 *   autotune worker --gpu N --compare   the same for `autotune compare` (gpu/compare.h)
 *   autotune worker --probe    report every GPU on fd 4 and exit */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../gpu/compare.h"
#include "../gpu/worker.h"
#include "commands.h"

int cmd_worker(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return at_worker_probe(4);
  if (argc == 3 && strcmp(argv[1], "--gpu") == 0) return at_worker_main(atoi(argv[2]), 3, 4);
  if (argc == 4 && strcmp(argv[1], "--gpu") == 0 && strcmp(argv[3], "--compare") == 0)
    return at_compare_worker_main(atoi(argv[2]), 3, 4);
  return at_fail(AT_ERR_INPUT, "worker: internal command; usage: autotune worker --gpu N [--compare] | --probe");
}
