/* SHA-256 (FIPS 180-4), self-contained: used for the dataset cache's config_id (spec §4.6). */
#ifndef SF_SHA256_H
#define SF_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t h[8];
  uint64_t nbytes;
  unsigned char buf[64];
  size_t nbuf;
} sf_sha256_ctx;

void sf_sha256_init(sf_sha256_ctx *c);
void sf_sha256_update(sf_sha256_ctx *c, const void *data, size_t len);
void sf_sha256_final(sf_sha256_ctx *c, unsigned char out[32]);
/* One-shot digest as 64 lowercase hex digits plus NUL. */
void sf_sha256_hex(const void *data, size_t len, char out[65]);

#endif
