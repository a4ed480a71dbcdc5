/* Growable arrays: see array.h. */
#include "core/array.h"

#include <stdint.h>

bool q_array_grow_(void **data, size_t *capacity, size_t need, size_t elem_size)
{
    if (need <= *capacity)
        return true;
    size_t cap = *capacity < 8 ? 8 : *capacity + *capacity / 2;
    if (cap < need)
        cap = need;
    if (cap > SIZE_MAX / elem_size)
        return false;
    void *p = q_realloc(*data, *capacity * elem_size, cap * elem_size);
    if (!p)
        return false;
    *data = p;
    *capacity = cap;
    return true;
}
