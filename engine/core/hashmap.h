/* Open-addressing hash map from 64-bit keys to 32-bit values.
 *
 * Linear probing with backward-shift deletion (no tombstones), power-of-two
 * capacity, load factor at most 1/2. Iteration order depends on insertion
 * history, so code whose result must be deterministic either keeps its own
 * dense array (as the voxel store does) or sorts keys before use.
 */
#ifndef Q_HASHMAP_H
#define Q_HASHMAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct q_hashmap {
    uint64_t *keys;
    uint32_t *values; /* Q_HASHMAP_EMPTY marks a free slot */
    uint32_t capacity;
    uint32_t count;
} q_hashmap;

#define Q_HASHMAP_EMPTY UINT32_MAX

/* Frees the tables; the map is empty and usable afterwards. */
void q_hashmap_free(q_hashmap *m);
/* Returns the value for key, or Q_HASHMAP_EMPTY when absent. */
uint32_t q_hashmap_get(const q_hashmap *m, uint64_t key);
/* Inserts or replaces; value must not be Q_HASHMAP_EMPTY. False when out of memory. */
bool q_hashmap_set(q_hashmap *m, uint64_t key, uint32_t value);
/* Removes key if present; returns whether it was there. */
bool q_hashmap_remove(q_hashmap *m, uint64_t key);
/* Removes every entry, keeping the tables. */
void q_hashmap_clear(q_hashmap *m);
/* Bytes held by the tables. */
uint64_t q_hashmap_bytes(const q_hashmap *m);

#endif
