/* tail_shapes.h: shapes whose runtime plans, with the committed configs, cover every kind of tail
 * (docs/runtime.md, "The tail"): three of the last wave (a tuned (N, K) with M not a multiple of the
 * tile, and (N, K) that no file tunes: the time model's config), one whole call, one of padding (the
 * last column of tiles mostly past N), one by rows (M between a file's entries; narrow N).
 * test_stress runs, in this order, the first shapes whose plans give each kind; test_export checks
 * that `autotune query` reports those plans and that the list still holds every kind. Which shapes
 * split depends on the configs and the lookup: a retune that splits none of them needs new shapes
 * here. With the committed configs (the time model of format 3 since session 20, answering at
 * every 64 rows and between a tuned file's entries; refitted with SCALE_KB in session 26 and on the
 * two-halves templates in session 29) and lookup.c's MODEL_ABOVE_GAIN of 1.10 they cover H100 SXM
 * (132 SMs: waves from the 15th, 19th and 20th shapes, padding from the 8th, by rows from the 12th,
 * whole from the 21st) and PCIe (114: waves from the first, 8th and 10th, padding from the 9th, by
 * rows from the 13th, whole from the 21st). The H200 (132 SMs) reads its own files and time model
 * (session 42) first, where the 21st is no whole call: the 23rd is, on all three. `autotune query
 * -M m -N n -K k --sm-count 114` (and `--device NVIDIA_H200`) prints a shape's plan on any machine. */
#ifndef AT_TEST_TAIL_SHAPES_H
#define AT_TEST_TAIL_SHAPES_H

#include <stdint.h>

static const int64_t TAIL_SHAPES[][3] = {{1000, 6144, 4096}, {640, 6144, 4096},   {2000, 4608, 3584},
                                         {700, 7168, 2048},  {520, 1600, 4096},   {8192, 640, 4096},
                                         {520, 1344, 4096},  {12288, 1344, 2048}, {12288, 1856, 4096},
                                         {500, 6144, 4096},  {8192, 640, 7168},   {6000, 1792, 12288},
                                         {3000, 6144, 4096}, {2100, 384, 4096},   {2200, 4096, 1024},
                                         {12288, 1344, 4096}, {2100, 1856, 4096}, {2100, 7168, 2048},
                                         {900, 5120, 5120},  {512, 8960, 4096},   {2100, 1600, 12288},
                                         {2100, 1408, 12288}, {2100, 1792, 12288}};
enum { TAIL_SHAPES_LEN = sizeof TAIL_SHAPES / sizeof TAIL_SHAPES[0] };

#endif
