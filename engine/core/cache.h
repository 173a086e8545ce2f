/* cache.h: the on-disk compile cache, shared by the tuner and the runtime library.
 *
 * Content-addressed: an entry's name is its compile key (jit.h), so a key never changes meaning
 * and entries are never updated in place. Each entry is written atomically (temporary file, then
 * rename) and carries the SHA-256 and size of its body, so a truncated or damaged entry is
 * detected on read, reported as a miss, and rebuilt by the caller.
 *
 * Entry file: "<dir>/<key[0..1]>/<key>.cubin":
 *   AUTOTUNE-CUBIN 1\n  sha256=<hex of body>\n  size=<body bytes>\n  \n  body
 *   body = meta text ("name=value\n" lines), an empty line, then the cubin bytes. */
#ifndef AT_CACHE_H
#define AT_CACHE_H

#include <stddef.h>

/* The cache directory: $AUTOTUNE_CACHE, else $XDG_CACHE_HOME/autotune, else ~/.cache/autotune.
 * malloc'd. */
char *at_cache_dir(void);

typedef struct at_cache_entry {
  char *meta;  /* "name=value\n" lines */
  void *cubin;
  size_t cubin_size;
} at_cache_entry;

/* Returns AT_OK and fills e on a hit; AT_ERR_RUNTIME on a miss or a damaged entry, with
 * *damaged set when the file existed but failed its check. */
int at_cache_get(const char *dir, const char *key, at_cache_entry *e, int *damaged);
int at_cache_put(const char *dir, const char *key, const char *meta, const void *cubin, size_t cubin_size);
void at_cache_entry_free(at_cache_entry *e);

/* A value from meta lines, or NULL; malloc'd. */
char *at_meta_get(const char *meta, const char *name);

#endif
