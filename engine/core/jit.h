/* jit.h: NVRTC compilation of one kernel instantiation to a cubin, behind the disk cache.
 *
 * A template is loaded once per variant together with every header it includes ("..." includes,
 * followed recursively, found next to the including file, next to the template, or in the
 * engine's templates directory). The headers are handed to NVRTC from memory, never through -I,
 * so the compiler sees exactly the bytes that were hashed: a header the scan missed is a compile
 * error, not a stale cache hit.
 *
 * The compile key (the kernel key) is the SHA-256 of: a format tag, the template and header
 * contents with their names, the name expression, the NVRTC options, the target arch and the NVRTC
 * version. It names a cubin in the cache. A candidate's key (its identity in the DB) is the same key
 * when its variant has no launch parameters, else a hash of it and the launch parameters' values
 * (at_cand_key): candidates that differ only in what is passed at launch share one kernel. */
#ifndef AT_JIT_H
#define AT_JIT_H

#include <stddef.h>

typedef struct at_jit_source {
  char *path;          /* the template file */
  char *text;
  char **header_names; /* as written in #include "..." */
  char **header_texts;
  size_t nheaders;
  char hash[65]; /* over the template and every header, with names */
} at_jit_source;

/* templates_dir may be NULL. Fails (AT_ERR_INPUT) naming an include that cannot be found. */
int at_jit_source_load(const char *template_path, const char *templates_dir, at_jit_source **out);
void at_jit_source_free(at_jit_source *s);

/* The engine's templates directory: $AUTOTUNE_TEMPLATES; else, for an installed autotune (binary
 * or library), <prefix>/share/autotune/templates of its own prefix (install.h); else the source
 * tree's (or the one meson's templates_dir option names). Not malloc'd. */
const char *at_templates_dir(void);

/* "13.0": the NVRTC version, which is part of every key. */
const char *at_nvrtc_version(void);

typedef struct at_jit_options {
  const char *arch; /* "sm_90a" */
  int use_pch;      /* NVRTC automatic precompiled headers */
  int cubin_only;   /* the caller loads the cubin and reads none of ptxas's figures (the runtime): a
                       cache entry without them (0 registers) serves it. Neither this nor use_pch is
                       part of the key. */
} at_jit_options;

void at_jit_key(const at_jit_source *s, const char *name_expr, const at_jit_options *o, char key[65]);

/* A candidate's key from its kernel's: jit_key itself when launch_json is NULL (no launch
 * parameters: the identity of spaces and DBs from before launch parameters), else the SHA-256 of a
 * format tag, jit_key and launch_json (the canonical JSON of the launch parameters' values). */
void at_cand_key(const char jit_key[65], const char *launch_json, char key[65]);

typedef struct at_jit_result {
  int ok;             /* compiled (or found in the cache) */
  int cache_hit;
  int cache_damaged;  /* a damaged cache entry was found and rebuilt */
  int cache_unwritable; /* compiled, but the cache could not store it */
  char *log;          /* NVRTC's log: errors, or the ptxas resource report */
  char *lowered_name; /* the mangled kernel name to look up in the cubin */
  void *cubin;
  size_t cubin_size;
  char cubin_hash[65];
  int regs, spill_stores, spill_loads, static_smem, stack_bytes;
  double compile_ms; /* wall time of this compile (0 on a cache hit) */
} at_jit_result;

/* Compiles one instantiation, or takes it from cache_dir. name_expr NULL compiles the program's
 * extern "C" kernels as they are (support kernels); lowered_name is then "". A compile error is not a failure of
 * this function: it returns AT_OK with r->ok = 0 and the log. AT_ERR_RUNTIME is for NVRTC itself
 * failing (out of memory, bad option). */
int at_jit_compile(const at_jit_source *s, const char *name_expr, const at_jit_options *o, const char *cache_dir,
                   at_jit_result *r);
void at_jit_result_free(at_jit_result *r);

/* The first line of a compile log that says "error", for summaries; malloc'd. */
char *at_jit_first_error(const char *log);

#endif
