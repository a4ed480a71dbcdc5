/* Hash map: see hashmap.h. */
#include "core/hashmap.h"

#include "core/alloc.h"

#include <string.h>

/* Murmur3's 64-bit finalizer: chunk keys pack three small integers, which
 * would cluster badly under a plain modulo. */
static uint32_t slot_of(uint64_t key, uint32_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return (uint32_t)key & mask;
}

void q_hashmap_free(q_hashmap *m)
{
    q_free(m->keys, (size_t)m->capacity * sizeof *m->keys);
    q_free(m->values, (size_t)m->capacity * sizeof *m->values);
    memset(m, 0, sizeof *m);
}

uint32_t q_hashmap_get(const q_hashmap *m, uint64_t key)
{
    if (m->count == 0)
        return Q_HASHMAP_EMPTY;
    uint32_t mask = m->capacity - 1;
    for (uint32_t i = slot_of(key, mask);; i = (i + 1) & mask) {
        if (m->values[i] == Q_HASHMAP_EMPTY)
            return Q_HASHMAP_EMPTY;
        if (m->keys[i] == key)
            return m->values[i];
    }
}

static bool rehash(q_hashmap *m, uint32_t capacity)
{
    uint64_t *keys = q_alloc((size_t)capacity * sizeof *keys);
    uint32_t *values = q_alloc((size_t)capacity * sizeof *values);
    if (!keys || !values) {
        q_free(keys, (size_t)capacity * sizeof *keys);
        q_free(values, (size_t)capacity * sizeof *values);
        return false;
    }
    memset(values, 0xff, (size_t)capacity * sizeof *values);
    uint32_t mask = capacity - 1;
    for (uint32_t j = 0; j < m->capacity; j++) {
        if (m->values[j] == Q_HASHMAP_EMPTY)
            continue;
        uint32_t i = slot_of(m->keys[j], mask);
        while (values[i] != Q_HASHMAP_EMPTY)
            i = (i + 1) & mask;
        keys[i] = m->keys[j];
        values[i] = m->values[j];
    }
    q_free(m->keys, (size_t)m->capacity * sizeof *m->keys);
    q_free(m->values, (size_t)m->capacity * sizeof *m->values);
    m->keys = keys;
    m->values = values;
    m->capacity = capacity;
    return true;
}

bool q_hashmap_set(q_hashmap *m, uint64_t key, uint32_t value)
{
    if ((m->count + 1) * 2 > m->capacity) {
        if (m->capacity >= (1u << 30) || !rehash(m, m->capacity ? m->capacity * 2 : 16))
            return false;
    }
    uint32_t mask = m->capacity - 1;
    uint32_t i = slot_of(key, mask);
    while (m->values[i] != Q_HASHMAP_EMPTY) {
        if (m->keys[i] == key) {
            m->values[i] = value;
            return true;
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return true;
}

bool q_hashmap_remove(q_hashmap *m, uint64_t key)
{
    if (m->count == 0)
        return false;
    uint32_t mask = m->capacity - 1;
    uint32_t i = slot_of(key, mask);
    for (;; i = (i + 1) & mask) {
        if (m->values[i] == Q_HASHMAP_EMPTY)
            return false;
        if (m->keys[i] == key)
            break;
    }
    /* Backward shift: pull later members of the probe run into the hole as
     * long as that does not move them before their home slot. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & mask; m->values[j] != Q_HASHMAP_EMPTY; j = (j + 1) & mask) {
        uint32_t home = slot_of(m->keys[j], mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->values[hole] = m->values[j];
            hole = j;
        }
    }
    m->values[hole] = Q_HASHMAP_EMPTY;
    m->count--;
    return true;
}

void q_hashmap_clear(q_hashmap *m)
{
    if (m->values)
        memset(m->values, 0xff, (size_t)m->capacity * sizeof *m->values);
    m->count = 0;
}

uint64_t q_hashmap_bytes(const q_hashmap *m)
{
    return (uint64_t)m->capacity * (sizeof *m->keys + sizeof *m->values);
}
