/* pool.c: see pool.h. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "util.h"

struct at_pool {
  pthread_mutex_t mu;
  pthread_cond_t done_cv;
  pthread_t *threads;
  int nthreads;
  size_t njobs;
  size_t next;     /* next job to hand out */
  size_t started;  /* jobs handed out */
  size_t reported; /* finished jobs returned by next_done */
  size_t *done;    /* ring of finished, unreported jobs */
  size_t done_head, done_count;
  int stopping;
  at_pool_fn fn;
  void *ctx;
};

static void *run(void *arg) {
  at_pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    if (p->stopping || p->next >= p->njobs) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    size_t job = p->next++;
    p->started++;
    pthread_mutex_unlock(&p->mu);
    p->fn(p->ctx, job);
    pthread_mutex_lock(&p->mu);
    p->done[(p->done_head + p->done_count) % p->njobs] = job;
    p->done_count++;
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

at_pool *at_pool_start(int threads, size_t njobs, at_pool_fn fn, void *ctx) {
  at_pool *p = at_xcalloc(1, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->njobs = njobs;
  p->done = at_xcalloc(njobs ? njobs : 1, sizeof(size_t));
  p->fn = fn;
  p->ctx = ctx;
  if (threads < 1) threads = 1;
  if ((size_t)threads > njobs) threads = njobs ? (int)njobs : 1;
  p->threads = at_xcalloc((size_t)threads, sizeof(pthread_t));
  for (int i = 0; i < threads; i++)
    if (pthread_create(&p->threads[p->nthreads], NULL, run, p) == 0) p->nthreads++;
  if (p->nthreads == 0) run(p); /* no threads at all: do the work here */
  return p;
}

ssize_t at_pool_next_done(at_pool *p) {
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (p->done_count) {
      size_t job = p->done[p->done_head];
      p->done_head = (p->done_head + 1) % p->njobs;
      p->done_count--;
      p->reported++;
      pthread_mutex_unlock(&p->mu);
      return (ssize_t)job;
    }
    int more = p->reported < p->started || (!p->stopping && p->next < p->njobs);
    if (!more) {
      pthread_mutex_unlock(&p->mu);
      return -1;
    }
    pthread_cond_wait(&p->done_cv, &p->mu);
  }
}

void at_pool_stop(at_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_mutex_unlock(&p->mu);
}

void at_pool_join(at_pool *p) {
  at_pool_stop(p);
  for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->done_cv);
  free(p->threads);
  free(p->done);
  free(p);
}
