/* jit.c: see jit.h. */
#include "jit.h"

#include <ctype.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "install.h"
#include "sha256.h"
#include "util.h"

#define NVRTC_CHECK(expr) AT_API_CHECK("NVRTC", nvrtcResult, expr, NVRTC_SUCCESS, nvrtcGetErrorString, nvrtc_text)

static const char *nvrtc_text(nvrtcResult r) {
  (void)r;
  return "";
}

/* Bumped when anything about how a source becomes a cubin changes outside the hashed inputs. */
#define AT_JIT_FORMAT "autotune-jit-1"

/* AT_TEMPLATES_DIR: the source tree's templates/, for a build that is not installed; with
 * AT_TEMPLATES_FIXED, a directory the build was told to use (meson's templates_dir option). */
#ifndef AT_TEMPLATES_DIR
#define AT_TEMPLATES_DIR "templates"
#endif
#ifndef AT_TEMPLATES_FIXED
#define AT_TEMPLATES_FIXED 0
#endif

static char g_templates[4096];
static pthread_once_t g_templates_once = PTHREAD_ONCE_INIT;

static void find_templates(void) {
  const char *data = AT_TEMPLATES_FIXED ? NULL : at_install_data_dir();
  if (data) snprintf(g_templates, sizeof g_templates, "%s/templates", data);
  struct stat st;
  if (!data || stat(g_templates, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(g_templates, sizeof g_templates, "%s", AT_TEMPLATES_DIR);
}

const char *at_templates_dir(void) {
  const char *d = getenv("AUTOTUNE_TEMPLATES");
  if (d && *d) return d;
  pthread_once(&g_templates_once, find_templates);
  return g_templates;
}

static char g_nvrtc_version[32];
static int g_nvrtc_own_cache; /* NVRTC 12.9+: it has a cache of its own, and --no-cache */
static pthread_once_t g_nvrtc_version_once = PTHREAD_ONCE_INIT;

static void read_nvrtc_version(void) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  snprintf(g_nvrtc_version, sizeof g_nvrtc_version, "%d.%d", major, minor);
  g_nvrtc_own_cache = major > 12 || (major == 12 && minor >= 9);
}

const char *at_nvrtc_version(void) {
  pthread_once(&g_nvrtc_version_once, read_nvrtc_version);
  return g_nvrtc_version;
}

/* ---- the include closure ---------------------------------------------------------------------- */

static int has_header(const at_jit_source *s, const char *name) {
  for (size_t i = 0; i < s->nheaders; i++)
    if (strcmp(s->header_names[i], name) == 0) return 1;
  return 0;
}

static int scan_includes(at_jit_source *s, const char *text, const char *from_dir, const char *tpl_dir,
                         const char *templates_dir, int depth) {
  if (depth > 32) return at_fail(AT_ERR_INPUT, "%s: #include nesting deeper than 32", s->path);
  for (const char *p = text; p && *p;) {
    const char *line = p;
    const char *eol = strchr(p, '\n');
    p = eol ? eol + 1 : NULL;
    while (*line == ' ' || *line == '\t') line++;
    if (*line != '#') continue;
    line++;
    while (*line == ' ' || *line == '\t') line++;
    if (strncmp(line, "include", 7) != 0) continue;
    line += 7;
    while (*line == ' ' || *line == '\t') line++;
    if (*line != '"') continue; /* <...> headers come with NVRTC, whose version is in the key */
    const char *end = strchr(line + 1, '"');
    if (!end || (eol && end > eol)) continue;
    char *name = at_xstrndup(line + 1, (size_t)(end - line - 1));
    if (has_header(s, name)) {
      free(name);
      continue;
    }
    const char *dirs[3] = {from_dir, tpl_dir, templates_dir};
    char *found = NULL, *data = NULL;
    size_t size;
    for (int i = 0; i < 3 && !found; i++) {
      if (!dirs[i]) continue;
      char *cand = at_path_join(dirs[i], name);
      if (at_file_exists(cand) && at_read_file(cand, 0, &data, &size) == AT_OK)
        found = cand;
      else
        free(cand);
    }
    if (!found) {
      int rc = at_fail(AT_ERR_INPUT, "%s: #include \"%s\" not found next to the template or in %s", s->path, name,
                       templates_dir ? templates_dir : "(no templates dir)");
      free(name);
      return rc;
    }
    s->header_names = at_xrealloc(s->header_names, sizeof(char *) * (s->nheaders + 1));
    s->header_texts = at_xrealloc(s->header_texts, sizeof(char *) * (s->nheaders + 1));
    s->header_names[s->nheaders] = name;
    s->header_texts[s->nheaders] = data;
    s->nheaders++;
    char *dir = at_dirname(found);
    free(found);
    int rc = scan_includes(s, data, dir, tpl_dir, templates_dir, depth + 1);
    free(dir);
    if (rc) return rc;
  }
  return AT_OK;
}

int at_jit_source_load(const char *template_path, const char *templates_dir, at_jit_source **out) {
  *out = NULL;
  at_jit_source *s = at_xcalloc(1, sizeof *s);
  s->path = at_xstrdup(template_path);
  size_t size;
  int rc = at_read_file(template_path, 0, &s->text, &size);
  if (rc == AT_OK) {
    char *dir = at_dirname(template_path);
    rc = scan_includes(s, s->text, dir, dir, templates_dir, 0);
    free(dir);
  }
  if (rc) {
    at_jit_source_free(s);
    return rc;
  }
  at_sha256 h;
  at_sha256_init(&h);
  at_sha256_field(&h, s->text);
  for (size_t i = 0; i < s->nheaders; i++) {
    at_sha256_field(&h, s->header_names[i]);
    at_sha256_field(&h, s->header_texts[i]);
  }
  at_sha256_final_hex(&h, s->hash);
  *out = s;
  return AT_OK;
}

void at_jit_source_free(at_jit_source *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nheaders; i++) {
    free(s->header_names[i]);
    free(s->header_texts[i]);
  }
  free(s->header_names);
  free(s->header_texts);
  free(s->path);
  free(s->text);
  free(s);
}

/* ---- options and key -------------------------------------------------------------------------- */

enum { MAX_OPTS = 12 };

static int build_options(const at_jit_options *o, const char *pch_dir, char store[MAX_OPTS][512], const char **opts) {
  int n = 0;
  snprintf(store[n], 512, "--gpu-architecture=%s", o->arch);
  opts[n] = store[n], n++;
  opts[n++] = "-std=c++17";
  opts[n++] = "-Xptxas=-v"; /* the resource report we parse */
  opts[n++] = "-DAUTOTUNE_NVRTC=1";
  if (o->use_pch && pch_dir) {
    opts[n++] = "--pch";
    snprintf(store[n], 512, "--pch-dir=%s", pch_dir);
    opts[n] = store[n], n++;
  }
  return n;
}

void at_jit_key(const at_jit_source *s, const char *name_expr, const at_jit_options *o, char key[65]) {
  char store[MAX_OPTS][512];
  const char *opts[MAX_OPTS];
  /* PCH changes how fast the cubin is made, not the cubin: it is left out of the key. */
  at_jit_options plain = *o;
  plain.use_pch = 0;
  int n = build_options(&plain, NULL, store, opts);
  at_sha256 h;
  at_sha256_init(&h);
  at_sha256_field(&h, AT_JIT_FORMAT);
  at_sha256_field(&h, s->hash);
  at_sha256_field(&h, name_expr ? name_expr : "");
  for (int i = 0; i < n; i++) at_sha256_field(&h, opts[i]);
  at_sha256_field(&h, o->arch);
  at_sha256_field(&h, at_nvrtc_version());
  at_sha256_final_hex(&h, key);
}

/* Bumped when what a candidate key covers beside its kernel's key changes. */
#define AT_CAND_FORMAT "autotune-cand-1"

void at_cand_key(const char jit_key[65], const char *launch_json, char key[65]) {
  if (!launch_json) {
    memcpy(key, jit_key, 65);
    return;
  }
  at_sha256 h;
  at_sha256_init(&h);
  at_sha256_field(&h, AT_CAND_FORMAT);
  at_sha256_field(&h, jit_key);
  at_sha256_field(&h, launch_json);
  at_sha256_final_hex(&h, key);
}

/* ---- resources from the ptxas report ---------------------------------------------------------- */

static int num_before(const char *text, const char *end, const char *suffix, int *out) {
  const char *p = strstr(text, suffix);
  if (!p || (end && p > end)) return 0;
  const char *q = p;
  while (q > text && q[-1] == ' ') q--;
  while (q > text && isdigit((unsigned char)q[-1])) q--;
  *out = atoi(q);
  return 1;
}

static void parse_resources(const char *log, const char *lowered, at_jit_result *r) {
  /* The section of our kernel: from "entry function '<lowered>'" to the next entry function. */
  char *needle = at_xasprintf("entry function '%s'", lowered);
  const char *start = strstr(log, needle);
  free(needle);
  if (!start) start = log;
  const char *end = strstr(start + 1, "Compiling entry function");
  const char *used = strstr(start, "Used ");
  if (used && (!end || used < end)) {
    r->regs = atoi(used + 5);
    num_before(used, end, " bytes smem", &r->static_smem);
  }
  num_before(start, end, " bytes stack frame", &r->stack_bytes);
  num_before(start, end, " bytes spill stores", &r->spill_stores);
  num_before(start, end, " bytes spill loads", &r->spill_loads);
}

/* $AUTOTUNE_DUMP_PTX=DIR: the PTX of every compile (not of cache hits) as DIR/<key>.ptx. */
static void dump_ptx(const char *ptx, const char *key, const char *name_expr, const char *arch) {
  const char *dir = getenv("AUTOTUNE_DUMP_PTX");
  if (!ptx || !dir || !*dir || at_mkdirs(dir) != AT_OK) return;
  char *path = at_xasprintf("%s/%s.ptx", dir, key);
  char *text = at_xasprintf("// %s for %s\n%s", name_expr ? name_expr : "(support kernels)", arch, ptx);
  if (at_write_file_atomic(path, text, strlen(text)) != AT_OK)
    fprintf(stderr, "autotune: warning: AUTOTUNE_DUMP_PTX: %s\n", at_errmsg());
  free(text);
  free(path);
}

/* The ptxas advisories of a compile log, "(C7514) (C7517)": each code of a "(Cnnnn)" in a ptxas
 * line, once, in order. They are kept in the cache entry because a kernel taken from the cache has
 * no log, and an advisory such as C7514 (every wgmma serialized) marks a kernel that passes every
 * check and runs 5-15% slower: without it, only a fresh compile would show it. */
static char *advisories_of(const char *log) {
  char *out = at_xstrdup("");
  for (const char *p = log; p && *p;) {
    const char *eol = strchr(p, '\n');
    const size_t n = eol ? (size_t)(eol - p) : strlen(p);
    if (memmem(p, n, "ptxas", 5))
      for (const char *c = p; c + 7 <= p + n; c++) {
        if (c[0] != '(' || c[1] != 'C' || c[6] != ')') continue;
        if (!isdigit((unsigned char)c[2]) || !isdigit((unsigned char)c[3]) || !isdigit((unsigned char)c[4]) ||
            !isdigit((unsigned char)c[5]))
          continue;
        char code[8];
        memcpy(code, c, 7), code[7] = 0;
        if (!strstr(out, code)) {
          char *more = at_xasprintf("%s%s%s", out, *out ? " " : "", code);
          free(out), out = more;
        }
      }
    p = eol ? eol + 1 : NULL;
  }
  return out;
}

static char *meta_of(const at_jit_result *r) {
  char *adv = advisories_of(r->log);
  char *meta = at_xasprintf("lowered=%s\nregs=%d\nspill_stores=%d\nspill_loads=%d\nstatic_smem=%d\nstack_bytes=%d\n"
                            "advisories=%s\n",
                            r->lowered_name, r->regs, r->spill_stores, r->spill_loads, r->static_smem, r->stack_bytes, adv);
  free(adv);
  return meta;
}

static int meta_int(const char *meta, const char *name) {
  char *v = at_meta_get(meta, name);
  int x = v ? atoi(v) : 0;
  free(v);
  return x;
}

static int from_cache(const char *cache_dir, const char *key, int cubin_only, at_jit_result *r) {
  at_cache_entry e;
  int damaged = 0;
  if (!cache_dir || at_cache_get(cache_dir, key, &e, &damaged) != AT_OK) {
    r->cache_damaged = damaged;
    return 0;
  }
  r->lowered_name = at_meta_get(e.meta, "lowered");
  /* A kernel with no registers: an entry whose compile was answered by NVRTC's own cache (before
   * --no-cache), whose log had no resource report. Compiled again, as a damaged entry is, for a
   * caller that records the figures; its cubin is sound, so a caller that only loads it takes it (a
   * runtime on a read-only cache would otherwise compile it at every start). */
  if (!cubin_only && r->lowered_name && r->lowered_name[0] && meta_int(e.meta, "regs") == 0) {
    free(r->lowered_name);
    r->lowered_name = NULL;
  }
  if (!r->lowered_name) {
    at_cache_entry_free(&e);
    r->cache_damaged = 1;
    return 0;
  }
  r->regs = meta_int(e.meta, "regs");
  r->spill_stores = meta_int(e.meta, "spill_stores");
  r->spill_loads = meta_int(e.meta, "spill_loads");
  r->static_smem = meta_int(e.meta, "static_smem");
  r->stack_bytes = meta_int(e.meta, "stack_bytes");
  r->cubin = e.cubin;
  r->cubin_size = e.cubin_size;
  e.cubin = NULL;
  /* No log for a kernel from the cache, but for the advisories its compile had (entries written
   * before they were kept have none). */
  char *adv = at_meta_get(e.meta, "advisories");
  r->log = adv && *adv ? at_xasprintf("ptxas advisories of this kernel's compile (from the compile cache): %s\n", adv)
                       : at_xstrdup("");
  free(adv);
  at_cache_entry_free(&e);
  r->ok = r->cache_hit = 1;
  at_sha256_hex(r->cubin, r->cubin_size, r->cubin_hash);
  return 1;
}

int at_jit_compile(const at_jit_source *s, const char *name_expr, const at_jit_options *o, const char *cache_dir,
                   at_jit_result *r) {
  memset(r, 0, sizeof *r);
  char key[65];
  at_jit_key(s, name_expr, o, key);
  int damaged = 0;
  if (from_cache(cache_dir, key, o->cubin_only, r)) return AT_OK;
  damaged = r->cache_damaged;

  double t0 = at_now_s();
  nvrtcProgram prog;
  NVRTC_CHECK(nvrtcCreateProgram(&prog, s->text, s->path, (int)s->nheaders, (const char *const *)s->header_texts,
                                 (const char *const *)s->header_names));
  int rc = AT_OK;
  nvrtcResult res = name_expr ? nvrtcAddNameExpression(prog, name_expr) : NVRTC_SUCCESS;
  if (res != NVRTC_SUCCESS) {
    rc = at_fail_api("NVRTC", "nvrtcAddNameExpression", __FILE__, __LINE__, res, nvrtcGetErrorString(res), name_expr);
    nvrtcDestroyProgram(&prog);
    return rc;
  }
  char store[MAX_OPTS][512];
  const char *opts[MAX_OPTS];
  char *pch_dir = (o->use_pch && cache_dir) ? at_xasprintf("%s/pch", cache_dir) : NULL;
  if (pch_dir) at_mkdirs(pch_dir);
  int nopts = build_options(o, pch_dir, store, opts);
  /* NVRTC 12.9+ keeps PTX and cubins in the driver's compute cache where a driver is installed (the
   * GPU hosts, not a build machine), and a hit there skips ptxas: no resource report and no
   * advisories in the log, so the kernel would be recorded with 0 registers. Ours is the cache. Like
   * --pch, left out of the key: it changes how the cubin is made, not the cubin. Earlier NVRTC has
   * no such cache and refuses the option. */
  at_nvrtc_version();
  if (g_nvrtc_own_cache) opts[nopts++] = "--no-cache";
  nvrtcResult cres = nvrtcCompileProgram(prog, nopts, opts);
  free(pch_dir);

  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  r->log = at_xcalloc(log_size + 1, 1);
  if (log_size) nvrtcGetProgramLog(prog, r->log);

  if (cres == NVRTC_SUCCESS) {
    const char *lowered = "";
    if (name_expr && (res = nvrtcGetLoweredName(prog, name_expr, &lowered)) != NVRTC_SUCCESS) {
      rc = at_fail_api("NVRTC", "nvrtcGetLoweredName", __FILE__, __LINE__, res, nvrtcGetErrorString(res), name_expr);
    } else if ((res = nvrtcGetCUBINSize(prog, &r->cubin_size)) != NVRTC_SUCCESS || r->cubin_size == 0) {
      rc = at_fail_api("NVRTC", "nvrtcGetCUBINSize", __FILE__, __LINE__, res, nvrtcGetErrorString(res),
                       "no cubin: is the arch a real sm_XX target?");
    } else {
      r->lowered_name = at_xstrdup(lowered);
      r->cubin = at_xmalloc(r->cubin_size);
      if ((res = nvrtcGetCUBIN(prog, r->cubin)) != NVRTC_SUCCESS)
        rc = at_fail_api("NVRTC", "nvrtcGetCUBIN", __FILE__, __LINE__, res, nvrtcGetErrorString(res), "");
    }
  } else if (cres != NVRTC_ERROR_COMPILATION) {
    rc = at_fail_api("NVRTC", "nvrtcCompileProgram", __FILE__, __LINE__, cres, nvrtcGetErrorString(cres), r->log);
  }
  char *prog_ptx = NULL; /* kept for $AUTOTUNE_DUMP_PTX */
  size_t ptx_size = 0;
  if (cres == NVRTC_SUCCESS && getenv("AUTOTUNE_DUMP_PTX") && nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS) {
    prog_ptx = at_xcalloc(ptx_size + 1, 1);
    if (nvrtcGetPTX(prog, prog_ptx) != NVRTC_SUCCESS) free(prog_ptx), prog_ptx = NULL;
  }
  nvrtcDestroyProgram(&prog);
  r->compile_ms = (at_now_s() - t0) * 1e3;
  r->cache_damaged = damaged;
  if (rc || cres != NVRTC_SUCCESS) {
    free(prog_ptx);
    return rc; /* a compile error: ok = 0, log kept */
  }

  parse_resources(r->log, r->lowered_name, r);
  dump_ptx(prog_ptx, key, name_expr, o->arch);
  free(prog_ptx);
  at_sha256_hex(r->cubin, r->cubin_size, r->cubin_hash);
  r->ok = 1;
  if (cache_dir) {
    /* A cache that cannot be written costs the next compile, not this one. */
    char *meta = meta_of(r);
    if (at_cache_put(cache_dir, key, meta, r->cubin, r->cubin_size) != AT_OK) r->cache_unwritable = 1;
    free(meta);
  }
  return AT_OK;
}

void at_jit_result_free(at_jit_result *r) {
  free(r->log);
  free(r->lowered_name);
  free(r->cubin);
  memset(r, 0, sizeof *r);
}

char *at_jit_first_error(const char *log) {
  for (const char *p = log; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    if (memmem(p, n, "error", 5)) return at_xstrndup(p, n);
    p = eol ? eol + 1 : NULL;
  }
  const char *eol = log ? strchr(log, '\n') : NULL;
  return log ? at_xstrndup(log, eol ? (size_t)(eol - log) : strlen(log)) : at_xstrdup("");
}
