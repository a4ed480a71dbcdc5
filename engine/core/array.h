/* Growable arrays of any element type, memory from q_alloc.
 *
 *   Q_ARRAY(int) a = {0};
 *   if (!q_array_push(&a, 42)) ... out of memory ...
 *   q_array_free(&a);
 */
#ifndef Q_ARRAY_H
#define Q_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/alloc.h"

#define Q_ARRAY(T)                                                                                 \
    struct {                                                                                       \
        T *data;                                                                                   \
        size_t count, capacity;                                                                    \
    }

/* Ensures capacity for `need` elements (growing by 1.5x at least); false when
 * out of memory, with the array unchanged. */
bool q_array_grow_(void **data, size_t *capacity, size_t need, size_t elem_size);

#define q_array_reserve(a, n)                                                                      \
    ((n) <= (a)->capacity || q_array_grow_((void **)&(a)->data, &(a)->capacity, (n), sizeof *(a)->data))
#define q_array_push(a, v)                                                                         \
    (q_array_reserve((a), (a)->count + 1) ? ((a)->data[(a)->count++] = (v), true) : false)
#define q_array_free(a)                                                                            \
    (q_free((a)->data, (a)->capacity * sizeof *(a)->data), (a)->data = NULL, (a)->count = 0,        \
     (a)->capacity = 0)

#endif
