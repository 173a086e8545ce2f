/* board.h: what the GPU board does while we time on it: its power, how long its power limit held
 * the clocks down, and its SM clock, read through NVML (libnvidia-ml.so.1, part of the driver,
 * opened with dlopen on first use like libcuda). NVML makes no CUDA context, so the parent may read
 * it too.
 *
 * Why: a GPU kept busy reaches its power limit and the driver lowers the SM clock (the H200 of the
 * device tool: 1,980 MHz down to 1,380-1,965, changing within a second, at 590-650 W of a 700 W
 * limit), which no CUDA event shows. Providers timed in turn see the same clocks, so their ratio
 * stands; their absolute times do not, and a pass over a list that follows idle time (compiles)
 * runs at higher clocks than the next (docs/perf.md, "Clocks under the power limit").
 *
 * Granularity (measured there): the energy and violation counters move in steps of about 100 ms,
 * so over a few milliseconds they read 0 W or several times the limit, and 0% or 100% capped: read
 * them over seconds (a compare round), never over one shape. The SM clock is an instant reading,
 * though the value NVML reports changes only every few tens of milliseconds; a shape's clock is the
 * median of many reads.
 *
 * Nothing here fails a measurement: without NVML every reading says not known, and why. */
#ifndef AT_CORE_BOARD_H
#define AT_CORE_BOARD_H

typedef struct at_board at_board;

/* The board of the GPU with this UUID ("GPU-..."; core/device.h): NULL with why[] filled when NVML
 * or the board is not there. One per process and UUID, kept for the process's life. */
const at_board *at_board_open(const char *uuid, char *why, int n);

/* The board's counters now; -1 for a counter the board does not keep. */
typedef struct at_board_reading {
  double t_s;      /* host monotonic time (core/util.h at_now_s) */
  double energy_j; /* energy since the driver loaded */
  double capped_s; /* time the power limit held the clocks below their set value, since then */
} at_board_reading;
void at_board_read(const at_board *b, at_board_reading *r);

/* The SM clock now, and the enforced power limit; 0 when not read. */
int at_board_sm_mhz(const at_board *b);
int at_board_limit_w(const at_board *b);

/* Between two readings: wall seconds, average watts, the share of the time capped (percent, at
 * most 100: the counter and the host clock are read apart); -1 where a counter is missing. */
typedef struct at_board_span {
  double seconds, watts, capped_pct;
} at_board_span;
void at_board_span_of(const at_board_reading *from, const at_board_reading *to, at_board_span *out);

#endif
