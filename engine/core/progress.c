/* progress.c: see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct at_progress {
  char label[64];
  int64_t total, done;
  double t0, last_draw;
  int tty, quiet, drawn;
};

at_progress *at_progress_start(const char *label, int64_t total) {
  at_progress *p = at_xcalloc(1, sizeof *p);
  snprintf(p->label, sizeof p->label, "%s", label);
  p->total = total;
  p->t0 = at_now_s();
  const char *mode = getenv("AUTOTUNE_PROGRESS");
  p->quiet = mode && strcmp(mode, "none") == 0;
  p->tty = !(mode && strcmp(mode, "plain") == 0) && isatty(2);
  return p;
}

static void fmt_time(double s, char *out, size_t n) {
  if (s < 0 || s > 99 * 3600) {
    snprintf(out, n, "--:--");
    return;
  }
  int t = (int)(s + 0.5);
  if (t >= 3600)
    snprintf(out, n, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(out, n, "%d:%02d", t / 60, t % 60);
}

static void draw(at_progress *p, const char *extra, int final) {
  double el = at_now_s() - p->t0;
  double rate = el > 0 ? (double)p->done / el : 0;
  char eta[32], elapsed[32];
  fmt_time(rate > 0 ? (double)(p->total - p->done) / rate : -1, eta, sizeof eta);
  fmt_time(el, elapsed, sizeof elapsed);
  int pct = p->total > 0 ? (int)(100 * p->done / p->total) : 100;
  if (p->tty) {
    char bar[31];
    int fill = pct * 30 / 100;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r\033[K%-10s [%s] %3d%% %lld/%lld  %.1f/s  %s %s%s%s", p->label, bar, pct, (long long)p->done,
            (long long)p->total, rate, final ? "in" : "ETA", final ? elapsed : eta, extra ? "  " : "",
            extra ? extra : "");
    if (final) fputc('\n', stderr);
  } else {
    fprintf(stderr, "%s: %lld/%lld (%d%%), %.1f/s, %s %s%s%s\n", p->label, (long long)p->done, (long long)p->total,
            pct, rate, final ? "elapsed" : "ETA", final ? elapsed : eta, extra ? ", " : "", extra ? extra : "");
  }
  fflush(stderr);
  p->drawn = 1;
}

void at_progress_update(at_progress *p, int64_t done, const char *extra) {
  p->done = done;
  if (p->quiet) return;
  double now = at_now_s();
  double every = p->tty ? 0.1 : 5.0;
  if (now - p->last_draw < every && done < p->total) return;
  p->last_draw = now;
  draw(p, extra, 0);
}

void at_progress_set_total(at_progress *p, int64_t total) { p->total = total; }

void at_progress_note(at_progress *p, const char *msg) {
  if (p && p->tty && p->drawn && !p->quiet) fprintf(stderr, "\r\033[K");
  fprintf(stderr, "%s\n", msg);
  if (p && p->tty && p->drawn && !p->quiet) draw(p, NULL, 0);
}

void at_progress_finish(at_progress *p, const char *extra) {
  if (!p->quiet) draw(p, extra, 1);
  free(p);
}
