/* workerproc.h: the parent's side of worker processes: start one per GPU, send it requests with
 * a time budget, and kill and reap it when it dies, faults or overruns. No CUDA here.
 *
 * Workers run in their own process group (a Ctrl-C at the terminal reaches the parent alone, which
 * then stops them cleanly) and die with the parent (PR_SET_PDEATHSIG), so a killed tuner leaves
 * no GPU process behind. */
#ifndef AT_WORKERPROC_H
#define AT_WORKERPROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "device.h"

typedef struct at_worker {
  pid_t pid;
  int to_fd, from_fd;
  int gpu;
  at_device_info info;
  char exit_reason[128]; /* how it ended, after a death: "killed by signal 11", "exit 1" */
} at_worker;

/* Starts `autotune worker --gpu N` and waits for its hello. */
int at_worker_start(int gpu, at_worker *w);
/* The same with one more argument, a worker of another kind: "--compare" (cli/cmd_compare.c). */
int at_worker_start_mode(int gpu, const char *mode, at_worker *w);

/* One request and its reply. Returns AT_OK (reply in *reply, type checked against want), or
 * AT_PROTO_TIMEOUT (the worker overran and was killed) or AT_PROTO_EOF (the worker died; it is
 * reaped and exit_reason says how). The reply is malloc'd. */
int at_worker_call(at_worker *w, uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
                   double timeout_s, uint32_t want, void **reply, size_t *len);

/* Asks the worker to quit, then kills it if it does not within a second. */
void at_worker_stop(at_worker *w);
void at_worker_kill(at_worker *w);
int at_worker_alive(const at_worker *w);

/* Every GPU the driver sees, through a short-lived probe worker. *n = 0 and AT_OK when there is no
 * GPU or no driver; *why then says which. */
int at_probe_devices(at_device_info **out, int *n, char *why, size_t why_len);

const char *at_self_exe(void);

#endif
