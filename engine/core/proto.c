/* proto.c: framing over pipes; see proto.h. */
#include "proto.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return errno == EPIPE ? AT_PROTO_EOF : at_fail(AT_ERR_RUNTIME, "pipe write: %s", strerror(errno));
    c += w;
    n -= (size_t)w;
  }
  return AT_OK;
}

int at_msg_send2(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
  uint32_t hdr[2] = {type, (uint32_t)(alen + blen)};
  AT_TRY(write_all(fd, hdr, sizeof hdr));
  if (alen) AT_TRY(write_all(fd, a, alen));
  if (blen) AT_TRY(write_all(fd, b, blen));
  return AT_OK;
}

int at_msg_send(int fd, uint32_t type, const void *payload, size_t len) { return at_msg_send2(fd, type, payload, len, NULL, 0); }

/* Reads exactly n bytes before the deadline (a monotonic time; < 0 for none). */
static int read_all(int fd, void *p, size_t n, double deadline) {
  char *c = p;
  while (n) {
    if (deadline >= 0) {
      double left = deadline - at_now_s();
      if (left <= 0) return AT_PROTO_TIMEOUT;
      struct pollfd pfd = {fd, POLLIN, 0};
      int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (pr < 0 && errno == EINTR) continue;
      if (pr < 0) return at_fail(AT_ERR_RUNTIME, "poll: %s", strerror(errno));
      if (pr == 0) continue; /* re-check the deadline */
    }
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return AT_PROTO_EOF;
    if (r < 0) return errno == ECONNRESET ? AT_PROTO_EOF : at_fail(AT_ERR_RUNTIME, "pipe read: %s", strerror(errno));
    c += r;
    n -= (size_t)r;
  }
  return AT_OK;
}

int at_msg_recv(int fd, double timeout_s, uint32_t *type, void **payload, size_t *len) {
  *payload = NULL;
  *len = 0;
  double deadline = timeout_s < 0 ? -1 : at_now_s() + timeout_s;
  uint32_t hdr[2];
  AT_TRY(read_all(fd, hdr, sizeof hdr, deadline));
  if (hdr[1] > (1u << 30)) return at_fail(AT_ERR_RUNTIME, "pipe: frame of %u bytes is not plausible", hdr[1]);
  char *p = at_xmalloc(hdr[1] + 1);
  int rc = read_all(fd, p, hdr[1], deadline);
  if (rc) {
    free(p);
    return rc;
  }
  p[hdr[1]] = 0;
  *type = hdr[0];
  *payload = p;
  *len = hdr[1];
  return AT_OK;
}
