/* A streaming 64-bit digest for world:hash() and save-file checksums.
 *
 * Not cryptographic. Words are mixed with multiply-rotate steps and the result
 * goes through Murmur3's finalizer; the output depends only on the bytes fed
 * in and their order, never on pointers or platform endianness of the host
 * (input is read as little-endian words).
 */
#ifndef Q_DIGEST_H
#define Q_DIGEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct q_digest {
    uint64_t h;
    uint64_t length;
} q_digest;

void q_digest_init(q_digest *d, uint64_t seed);
void q_digest_bytes(q_digest *d, const void *data, size_t size);
void q_digest_u64(q_digest *d, uint64_t v);
uint64_t q_digest_final(const q_digest *d);
/* One-shot digest of a buffer. */
uint64_t q_digest_of(const void *data, size_t size, uint64_t seed);

#endif
