/* sha256.h: SHA-256, the content hash behind compile keys, cache entries and template identity. */
#ifndef AT_SHA256_H
#define AT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_sha256 {
  uint32_t h[8];
  uint64_t total;     /* bytes hashed so far */
  uint8_t block[64];  /* pending partial block */
  size_t used;        /* bytes in block */
} at_sha256;

#define AT_SHA256_HEX_LEN 64

void at_sha256_init(at_sha256 *s);
void at_sha256_update(at_sha256 *s, const void *data, size_t n);
/* Adds a string followed by a NUL, so that ("ab","c") and ("a","bc") hash differently. */
void at_sha256_field(at_sha256 *s, const char *str);
void at_sha256_final(at_sha256 *s, uint8_t out[32]);
void at_sha256_final_hex(at_sha256 *s, char out[AT_SHA256_HEX_LEN + 1]);
void at_sha256_hex(const void *data, size_t n, char out[AT_SHA256_HEX_LEN + 1]);

#endif
