/* Generational handles: see handle.h. */
#include "core/handle.h"

#include "core/alloc.h"

#include <string.h>

static void q_handle_pool_free_arrays_(q_handle_pool *pool)
{
    q_free(pool->generations, pool->capacity * sizeof *pool->generations);
    q_free(pool->free_slots, pool->capacity * sizeof *pool->free_slots);
}

q_handle q_handle_alloc(q_handle_pool *pool)
{
    uint32_t slot;
    if (pool->free_count > 0) {
        slot = pool->free_slots[--pool->free_count];
    } else {
        if (pool->count == pool->capacity) {
            uint32_t cap = pool->capacity ? pool->capacity * 2 : 16;
            if (cap > (1u << 28))
                return Q_NULL_HANDLE;
            uint32_t *g = q_alloc(cap * sizeof *g);
            uint32_t *f = q_alloc(cap * sizeof *f);
            if (!g || !f) {
                q_free(g, cap * sizeof *g);
                q_free(f, cap * sizeof *f);
                return Q_NULL_HANDLE;
            }
            if (pool->count) {
                memcpy(g, pool->generations, pool->count * sizeof *g);
                memcpy(f, pool->free_slots, pool->free_count * sizeof *f);
            }
            q_handle_pool_free_arrays_(pool);
            pool->generations = g;
            pool->free_slots = f;
            pool->capacity = cap;
        }
        slot = pool->count++;
        pool->generations[slot] = 0;
    }
    pool->generations[slot]++; /* even -> odd: alive */
    pool->live++;
    return (q_handle){slot + 1, pool->generations[slot]};
}

bool q_handle_valid(const q_handle_pool *pool, q_handle h)
{
    return h.index != 0 && h.index <= pool->count && (h.generation & 1u) &&
           pool->generations[h.index - 1] == h.generation;
}

bool q_handle_release(q_handle_pool *pool, q_handle h)
{
    if (!q_handle_valid(pool, h))
        return false;
    uint32_t slot = h.index - 1;
    pool->generations[slot]++; /* odd -> even: free */
    pool->live--;
    if (pool->generations[slot] == UINT32_MAX - 1)
        return true; /* retire the slot rather than wrap its generation */
    pool->free_slots[pool->free_count++] = slot;
    return true;
}

void q_handle_pool_free(q_handle_pool *pool)
{
    q_handle_pool_free_arrays_(pool);
    memset(pool, 0, sizeof *pool);
}
