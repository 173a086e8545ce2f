/* shapefile.h: a list of problem shapes from a file of its own (`autotune compare --shapes`): a CSV
 * file (name ending in .csv) with the header M,N,K and one shape per line, or a YAML file of shape
 * groups written like a space's `shapes:` section. Every shape is checked against the op's rules;
 * errors are AT_ERR_INPUT and name the file and line ("file:line: ...", YAML adds the column). */
#ifndef AT_SHAPEFILE_H
#define AT_SHAPEFILE_H

#include <stddef.h>

#include "../ops/op.h"

/* *shapes is malloc'd, in file order; a file with no shape is an error. */
int at_shapes_load(const char *path, const at_op *op, at_shape **shapes, size_t *n);

/* The CSV form from text already read (path only names it in errors). */
int at_shapes_parse_csv(const char *path, const char *text, const at_op *op, at_shape **shapes, size_t *n);

#endif
