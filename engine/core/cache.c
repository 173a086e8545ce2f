/* cache.c: see cache.h. */
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "util.h"

#define MAGIC "AUTOTUNE-CUBIN 1\n"

char *at_cache_dir(void) {
  const char *d = getenv("AUTOTUNE_CACHE");
  if (d && *d) return at_xstrdup(d);
  d = getenv("XDG_CACHE_HOME");
  if (d && *d) return at_xasprintf("%s/autotune", d);
  d = getenv("HOME");
  return at_xasprintf("%s/.cache/autotune", d && *d ? d : "/tmp");
}

static char *entry_path(const char *dir, const char *key) { return at_xasprintf("%s/%.2s/%s.cubin", dir, key, key); }

int at_cache_get(const char *dir, const char *key, at_cache_entry *e, int *damaged) {
  memset(e, 0, sizeof *e);
  *damaged = 0;
  char *path = entry_path(dir, key);
  char *data;
  size_t size;
  int rc = at_read_file(path, 0, &data, &size);
  free(path);
  if (rc) return AT_ERR_RUNTIME; /* a miss */
  *damaged = 1;
  rc = AT_ERR_RUNTIME;
  char hash[65], check[65];
  unsigned long long body_size;
  const char *body;
  if (size < strlen(MAGIC) || memcmp(data, MAGIC, strlen(MAGIC)) != 0) goto out;
  if (sscanf(data + strlen(MAGIC), "sha256=%64[0-9a-f]\nsize=%llu\n", hash, &body_size) != 2) goto out;
  body = strstr(data, "\n\n");
  if (!body) goto out;
  body += 2;
  if ((size_t)(data + size - body) != body_size) goto out;
  at_sha256_hex(body, body_size, check);
  if (strcmp(check, hash) != 0) goto out;
  const char *sep = strstr(body, "\n\n");
  if (!sep || sep > data + size) goto out;
  e->meta = at_xstrndup(body, (size_t)(sep - body) + 1);
  e->cubin_size = (size_t)(data + size - (sep + 2));
  e->cubin = at_xmalloc(e->cubin_size);
  memcpy(e->cubin, sep + 2, e->cubin_size);
  *damaged = 0;
  rc = AT_OK;
out:
  free(data);
  return rc;
}

int at_cache_put(const char *dir, const char *key, const char *meta, const void *cubin, size_t cubin_size) {
  at_buf body = {0};
  at_buf_puts(&body, meta);
  if (body.len == 0 || body.data[body.len - 1] != '\n') at_buf_puts(&body, "\n");
  at_buf_puts(&body, "\n");
  at_buf_append(&body, cubin, cubin_size);
  char hash[65];
  at_sha256_hex(body.data, body.len, hash);
  at_buf file = {0};
  at_buf_printf(&file, MAGIC "sha256=%s\nsize=%zu\n\n", hash, body.len);
  at_buf_append(&file, body.data, body.len);
  at_buf_free(&body);

  char *sub = at_xasprintf("%s/%.2s", dir, key);
  int rc = at_mkdirs(sub);
  free(sub);
  if (rc == AT_OK) {
    char *path = entry_path(dir, key);
    rc = at_write_file_atomic(path, file.data, file.len);
    free(path);
  }
  at_buf_free(&file);
  return rc;
}

void at_cache_entry_free(at_cache_entry *e) {
  free(e->meta);
  free(e->cubin);
  memset(e, 0, sizeof *e);
}

char *at_meta_get(const char *meta, const char *name) {
  size_t n = strlen(name);
  for (const char *p = meta; p && *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    if ((size_t)(eol - p) > n && strncmp(p, name, n) == 0 && p[n] == '=') return at_xstrndup(p + n + 1, (size_t)(eol - p - n - 1));
    p = *eol ? eol + 1 : eol;
  }
  return NULL;
}
