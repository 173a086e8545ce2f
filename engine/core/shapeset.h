/* shapeset.h: which shapes of a growing list came before, in constant time: the shape loaders'
 * "listed twice" check, which scanned the list for every new shape (a 64 MiB CSV of shapes took
 * hours). An open-addressed table of indices into the caller's array of shapes. */
#ifndef AT_CORE_SHAPESET_H
#define AT_CORE_SHAPESET_H

#include <stddef.h>

#include "op.h"

typedef struct at_shapeset {
  size_t cap, n;
  size_t *slot; /* index + 1 into the caller's shapes; 0: empty */
} at_shapeset;

/* shapes[idx] added, unless a shape equal to it is in the set already: then its index, and nothing
 * is added. -1 when it was added. shapes must hold every index added so far (it may have moved). */
long at_shapeset_add(at_shapeset *set, const at_shape *shapes, size_t idx);
void at_shapeset_free(at_shapeset *set);

#endif
