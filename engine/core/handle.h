/* Generational handles: small value ids that cross the C API and live inside
 * Lua userdata instead of pointers (Box2D's b2BodyId, sokol's sg_buffer).
 *
 * A handle is {slot + 1, generation}; the all-zero handle is null. A slot's
 * generation is odd while the slot is alive and even while it is free, so a
 * handle to a destroyed object never validates again, even after its slot is
 * reused.
 */
#ifndef Q_HANDLE_H
#define Q_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct q_handle {
    uint32_t index;      /* slot + 1; 0 = null */
    uint32_t generation; /* odd for a live object */
} q_handle;

#define Q_NULL_HANDLE ((q_handle){0, 0})

static inline bool q_handle_is_null(q_handle h) { return h.index == 0; }
static inline bool q_handle_equal(q_handle a, q_handle b)
{
    return a.index == b.index && a.generation == b.generation;
}

typedef struct q_handle_pool {
    uint32_t *generations;
    uint32_t *free_slots;
    uint32_t count;      /* slots ever used */
    uint32_t capacity;
    uint32_t free_count;
    uint32_t live;
} q_handle_pool;

/* Returns a new live handle, or the null handle when out of memory. */
q_handle q_handle_alloc(q_handle_pool *pool);
/* Frees a live handle; returns false (and does nothing) for a stale or null one. */
bool q_handle_release(q_handle_pool *pool, q_handle h);
/* True while h names a live object of this pool. */
bool q_handle_valid(const q_handle_pool *pool, q_handle h);
/* Slot index of a valid handle, for indexing parallel arrays. */
static inline uint32_t q_handle_slot(q_handle h) { return h.index - 1; }
void q_handle_pool_free(q_handle_pool *pool);

#endif
