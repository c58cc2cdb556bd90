// sha256.h: SHA-256 (FIPS 180-4) for provenance hashes and download verification.
#ifndef HIFA4_SHA256_H
#define HIFA4_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
    uint32_t h[8];
    uint64_t len;      // bytes hashed so far
    uint8_t buf[64];
    size_t n;          // bytes pending in buf
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[32]);
// One-shot helpers; hex is 64 lower-case digits + NUL.
void sha256_hex(const void *data, size_t len, char hex[65]);
void sha256_to_hex(const uint8_t d[32], char hex[65]);

#endif
