/* board.c: see board.h. NVML's few entry points are declared here (its header is not in every CUDA
 * toolkit); the types follow nvml.h's ABI: a device handle is an opaque pointer, enums are ints,
 * and each call returns 0 on success. */
#include "board.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

typedef struct nvml_device *nvml_device;
typedef struct nvml_violation {
  unsigned long long reference_us; /* a CPU timestamp */
  unsigned long long violation_ns; /* time below the set clocks since the driver loaded */
} nvml_violation;

enum { NVML_CLOCK_SM = 1, NVML_PERF_POLICY_POWER = 0 }; /* nvml.h's values */
enum { MAX_BOARDS = 16 };

static struct {
  int (*init)(void);
  const char *(*error_string)(int);
  int (*by_uuid)(const char *, nvml_device *);
  int (*energy)(nvml_device, unsigned long long *);
  int (*violation)(nvml_device, int, nvml_violation *);
  int (*clock)(nvml_device, int, unsigned *);
  int (*limit)(nvml_device, unsigned *);
} nv;
static char g_why[96]; /* why NVML cannot be used; "" when it can */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

struct at_board {
  char uuid[48];
  nvml_device dev;
};
static at_board g_boards[MAX_BOARDS];
static int g_nboards;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void load(void) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_why, sizeof g_why, "NVML not found (libnvidia-ml.so.1)");
    return;
  }
  *(void **)&nv.init = dlsym(h, "nvmlInit_v2");
  *(void **)&nv.error_string = dlsym(h, "nvmlErrorString");
  *(void **)&nv.by_uuid = dlsym(h, "nvmlDeviceGetHandleByUUID");
  *(void **)&nv.energy = dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
  *(void **)&nv.violation = dlsym(h, "nvmlDeviceGetViolationStatus");
  *(void **)&nv.clock = dlsym(h, "nvmlDeviceGetClockInfo");
  *(void **)&nv.limit = dlsym(h, "nvmlDeviceGetEnforcedPowerLimit");
  if (!nv.init || !nv.error_string || !nv.by_uuid || !nv.energy || !nv.violation || !nv.clock || !nv.limit) {
    snprintf(g_why, sizeof g_why, "libnvidia-ml.so.1 lacks an entry point: too old");
    return;
  }
  int r = nv.init();
  if (r) snprintf(g_why, sizeof g_why, "nvmlInit: %.70s", nv.error_string(r));
}

const at_board *at_board_open(const char *uuid, char *why, int n) {
  pthread_once(&g_once, load);
  if (g_why[0]) {
    snprintf(why, (size_t)n, "%s", g_why);
    return NULL;
  }
  const at_board *found = NULL;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_nboards && !found; i++)
    if (strcmp(g_boards[i].uuid, uuid) == 0) found = &g_boards[i];
  if (!found && g_nboards < MAX_BOARDS) {
    at_board *b = &g_boards[g_nboards];
    int r = uuid[0] ? nv.by_uuid(uuid, &b->dev) : -1;
    if (r)
      snprintf(why, (size_t)n, "NVML does not know %.50s%s%.40s", uuid[0] ? uuid : "a GPU without a UUID",
               r > 0 ? ": " : "", r > 0 ? nv.error_string(r) : "");
    else {
      snprintf(b->uuid, sizeof b->uuid, "%s", uuid);
      found = &g_boards[g_nboards++];
    }
  } else if (!found) {
    snprintf(why, (size_t)n, "more than %d boards", MAX_BOARDS);
  }
  pthread_mutex_unlock(&g_lock);
  return found;
}

void at_board_read(const at_board *b, at_board_reading *r) {
  unsigned long long e = 0;
  nvml_violation v = {0, 0};
  r->energy_j = !b || nv.energy(b->dev, &e) ? -1 : (double)e / 1e3;
  r->capped_s = !b || nv.violation(b->dev, NVML_PERF_POLICY_POWER, &v) ? -1 : (double)v.violation_ns / 1e9;
  r->t_s = at_now_s();
}

int at_board_sm_mhz(const at_board *b) {
  unsigned mhz = 0;
  return b && !nv.clock(b->dev, NVML_CLOCK_SM, &mhz) ? (int)mhz : 0;
}

int at_board_limit_w(const at_board *b) {
  unsigned mw = 0;
  return b && !nv.limit(b->dev, &mw) ? (int)(mw / 1000) : 0;
}

void at_board_span_of(const at_board_reading *from, const at_board_reading *to, at_board_span *out) {
  out->seconds = to->t_s - from->t_s;
  out->watts = out->capped_pct = -1;
  if (out->seconds <= 0) return;
  if (from->energy_j >= 0 && to->energy_j >= from->energy_j)
    out->watts = (to->energy_j - from->energy_j) / out->seconds;
  if (from->capped_s >= 0 && to->capped_s >= from->capped_s) {
    double c = to->capped_s - from->capped_s;
    out->capped_pct = c >= out->seconds ? 100 : 100 * c / out->seconds;
  }
}
