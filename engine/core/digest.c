/* Streaming digest: see digest.h. */
#include "core/digest.h"

#include <string.h>

#define K1 0x9e3779b97f4a7c15ull
#define K2 0xc2b2ae3d27d4eb4full

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= rotl(w * K2, 31) * K1;
    return rotl(h, 27) * K1 + 0x52dce729u;
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void q_digest_init(q_digest *d, uint64_t seed)
{
    d->h = seed ^ K2;
    d->length = 0;
}

void q_digest_bytes(q_digest *d, const void *data, size_t size)
{
    const unsigned char *p = data;
    uint64_t h = d->h;
    size_t i = 0;
    for (; i + 8 <= size; i += 8)
        h = mix(h, load_le64(p + i));
    if (i < size) {
        unsigned char tail[8] = {0};
        memcpy(tail, p + i, size - i);
        h = mix(h, load_le64(tail) ^ ((uint64_t)(size - i) << 59));
    }
    d->h = h;
    d->length += size;
}

void q_digest_u64(q_digest *d, uint64_t v)
{
    d->h = mix(d->h, v);
    d->length += 8;
}

uint64_t q_digest_final(const q_digest *d)
{
    uint64_t h = d->h ^ d->length;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

uint64_t q_digest_of(const void *data, size_t size, uint64_t seed)
{
    q_digest d;
    q_digest_init(&d, seed);
    q_digest_bytes(&d, data, size);
    return q_digest_final(&d);
}
