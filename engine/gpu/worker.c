/* worker.c: the worker process's loop (see core/proto.h for the protocol). It owns one GPU and
 * the current shape's input sets; the parent owns everything else. Replies always go out before
 * the process ends, so the parent learns why a worker it loses had to stop. */
#include "worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/proto.h"
#include "../core/util.h"
#include "devinfo.h"
#include "evaluate.h"
#include "gpuctx.h"
#include "peak.h"

static int send_error(int fd, const char *msg) { return at_msg_send(fd, AT_MSG_ERROR, msg, strlen(msg) + 1); }

int at_worker_probe(int out_fd) {
  const at_cuda_api *cu;
  if (at_cuda_load(&cu)) return send_error(out_fd, at_errmsg()), AT_OK;
  int count = 0;
  if (cu->DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return send_error(out_fd, "the driver sees no GPU"), AT_OK;
  for (int i = 0; i < count; i++) {
    at_device_info d;
    if (at_gpu_device_info(i, &d)) return send_error(out_fd, at_errmsg()), AT_OK;
    AT_TRY(at_msg_send(out_fd, AT_MSG_HELLO, &d, sizeof d));
  }
  return AT_OK;
}

int at_worker_sets_for(const at_gpu *g, const at_gpu_op *op, const at_shape_req *r) {
  at_shape s = {r->m, r->n, r->k};
  double per = op->set_bytes(&s);
  int sets = (int)ceil(r->l2_multiple * (double)g->info.l2_bytes / per);
  size_t free_b = 0, total_b = 0;
  at_cu->MemGetInfo(&free_b, &total_b);
  int cap = (int)((double)free_b * 0.25 / per);
  if (sets > cap) sets = cap;
  if (sets > 1024) sets = 1024;
  return sets < 1 ? 1 : sets;
}

static void shape_setup(at_eval_ctx *c, const at_shape_req *req, at_shape_reply *rep) {
  memset(rep, 0, sizeof *rep);
  if (c->state) c->gop->teardown(c->state);
  c->state = NULL;
  c->op = at_op_find(req->op);
  c->gop = at_gpu_op_find(req->op);
  if (!c->op || !c->gop) {
    snprintf(rep->message, sizeof rep->message, "this worker has no GPU support for op %s", req->op);
    return;
  }
  c->shape = (at_shape){req->m, req->n, req->k};
  c->sets = at_worker_sets_for(c->g, c->gop, req);
  if (c->gop->setup(c->g, &c->shape, req->seed, c->sets, &c->state)) {
    snprintf(rep->message, sizeof rep->message, "%s", at_errmsg());
    return;
  }
  if (req->gamma > 0 && !(c->gop->reference_abs && c->gop->reference_abs(c->state))) {
    snprintf(rep->message, sizeof rep->message,
             "op %s makes no |A|*|B| reference, so its check cannot use gamma (%g): set check.gamma to 0", req->op,
             req->gamma);
    return;
  }
  rep->ok = 1;
  rep->vendor_check_ratio = -1;
  rep->sets = c->sets;
  rep->set_bytes = c->gop->set_bytes(&c->shape);
  at_bench_cfg cfg = {c->sets, req->warmup, req->samples, 0, 0};
  at_bench_result b;
  if (c->gop->time_reference(c->state, &cfg, &b) == AT_OK)
    rep->ref_us = b.median_us;
  else
    snprintf(rep->message, sizeof rep->message, "reference not timed: %s", at_errmsg());
  if (req->baselines) {
    char note[400] = "";
    const at_check_bound bound = {req->atol, req->rtol, req->gamma};
    if (c->gop->time_vendor(c->state, &cfg, &bound, &b, &rep->vendor_check_ratio, rep->vendor_name,
                            sizeof rep->vendor_name, note, sizeof note) == AT_OK &&
        b.samples)
      rep->vendor_us = b.median_us;
    else if (note[0])
      snprintf(rep->message, sizeof rep->message, "%s", note);
  }
  /* A fault in the reference or the baselines must not be blamed on the candidates after it. */
  CUresult r = at_cu->CtxSynchronize();
  if (r != CUDA_SUCCESS) {
    rep->ok = 0;
    rep->sticky = at_cu_is_sticky(r);
    snprintf(rep->message, sizeof rep->message, "the GPU failed while preparing the shape: %s (%s)", at_cu_error_name(r),
             at_cu_error_text(r));
  }
}

static int serve_retime(at_eval_ctx *c, const char *p, size_t len, int out) {
  uint32_t n;
  if (len < sizeof n) return send_error(out, "RETIME: short message");
  memcpy(&n, p, sizeof n);
  at_eval_req *reqs = at_xcalloc(n ? n : 1, sizeof *reqs);
  const void **cubins = at_xcalloc(n ? n : 1, sizeof *cubins);
  size_t off = sizeof n;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t sz;
    if (off + sizeof reqs[i] + sizeof sz > len) break;
    memcpy(&reqs[i], p + off, sizeof reqs[i]);
    off += sizeof reqs[i];
    memcpy(&sz, p + off, sizeof sz);
    off += sizeof sz;
    cubins[i] = p + off;
    off += sz;
  }
  at_eval_reply *reps = at_xcalloc(n ? n : 1, sizeof *reps);
  int rc = at_retime(c, (int)n, reqs, cubins, reps);
  int sticky = 0;
  for (uint32_t i = 0; i < n; i++) sticky |= reps[i].sticky;
  if (rc == AT_OK) {
    at_buf b = {0};
    at_buf_append(&b, &n, sizeof n);
    at_buf_append(&b, reps, sizeof *reps * n);
    rc = at_msg_send(out, AT_MSG_RETIME_REPLY, b.data, b.len);
    at_buf_free(&b);
  } else {
    send_error(out, at_errmsg());
  }
  free(reqs);
  free(cubins);
  free(reps);
  if (sticky) _exit(3); /* the context is unusable: a fresh worker takes over */
  return rc;
}

int at_worker_main(int gpu, int in, int out) {
  at_gpu g;
  if (at_gpu_open(gpu, &g)) {
    send_error(out, at_errmsg());
    return AT_ERR_RUNTIME;
  }
  AT_TRY(at_msg_send(out, AT_MSG_HELLO, &g.info, sizeof g.info));
  at_eval_ctx c;
  memset(&c, 0, sizeof c);
  c.g = &g;
  for (;;) {
    uint32_t type;
    void *p;
    size_t len;
    int rc = at_msg_recv(in, -1, &type, &p, &len);
    if (rc == AT_PROTO_EOF) return AT_OK;
    if (rc) return rc;
    switch (type) {
    case AT_MSG_PEAK: {
      at_peak_reply r;
      at_measure_peaks(&g, &r);
      rc = at_msg_send(out, AT_MSG_PEAK_REPLY, &r, sizeof r);
      break;
    }
    case AT_MSG_SHAPE: {
      at_shape_req req;
      at_shape_reply rep;
      memcpy(&req, p, sizeof req < len ? sizeof req : len);
      shape_setup(&c, &req, &rep);
      rc = at_msg_send(out, AT_MSG_SHAPE_REPLY, &rep, sizeof rep);
      if (rep.sticky) {
        free(p);
        _exit(3);
      }
      break;
    }
    case AT_MSG_EVAL: {
      at_eval_req req;
      at_eval_reply rep;
      if (len < sizeof req || !c.state) {
        rc = send_error(out, c.state ? "EVAL: short message" : "EVAL before SHAPE");
        break;
      }
      memcpy(&req, p, sizeof req);
      at_evaluate(&c, &req, (const char *)p + sizeof req, len - sizeof req, &rep);
      rc = at_msg_send(out, AT_MSG_EVAL_REPLY, &rep, sizeof rep);
      if (rep.sticky) {
        free(p);
        _exit(3); /* the context is unusable: a fresh worker takes over */
      }
      break;
    }
    case AT_MSG_RETIME:
      rc = c.state ? serve_retime(&c, p, len, out) : send_error(out, "RETIME before SHAPE");
      break;
    case AT_MSG_QUIT:
      free(p);
      return AT_OK;
    default:
      rc = send_error(out, "unknown request");
    }
    free(p);
    if (rc) return rc;
  }
}
