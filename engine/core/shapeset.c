/* shapeset.c: see shapeset.h. */
#include "shapeset.h"

#include <stdint.h>
#include <stdlib.h>

#include "util.h"

static size_t hash_of(const at_shape *s) {
  uint64_t h = (uint64_t)s->m * 0x9E3779B97F4A7C15ull ^ (uint64_t)s->n * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)s->k * 0x165667B19E3779F9ull;
  return (size_t)(h ^ (h >> 31));
}

static int same(const at_shape *a, const at_shape *b) { return a->m == b->m && a->n == b->n && a->k == b->k; }

static void grow(at_shapeset *set, const at_shape *shapes) {
  size_t cap = set->cap ? 2 * set->cap : 64, *slot = at_xcalloc(cap, sizeof *slot);
  for (size_t i = 0; i < set->cap; i++)
    if (set->slot[i]) {
      size_t j = hash_of(&shapes[set->slot[i] - 1]) & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = set->slot[i];
    }
  free(set->slot);
  set->slot = slot, set->cap = cap;
}

long at_shapeset_add(at_shapeset *set, const at_shape *shapes, size_t idx) {
  if (2 * (set->n + 1) > set->cap) grow(set, shapes); /* at most half full: probes stay short */
  size_t j = hash_of(&shapes[idx]) & (set->cap - 1);
  for (; set->slot[j]; j = (j + 1) & (set->cap - 1))
    if (same(&shapes[set->slot[j] - 1], &shapes[idx])) return (long)(set->slot[j] - 1);
  set->slot[j] = idx + 1;
  set->n++;
  return -1;
}

void at_shapeset_free(at_shapeset *set) {
  free(set->slot);
  *set = (at_shapeset){0};
}
