/* Private to engine/voxel: the chunk store shared by storage.c, edit.c and
 * generate.c. Everything else goes through terrain.h. */
#ifndef Q_TERRAIN_INTERNAL_H
#define Q_TERRAIN_INTERNAL_H

#include "core/array.h"
#include "core/hashmap.h"
#include "voxel/terrain.h"

typedef struct q_chunk {
    int32_t cx, cy, cz;
    q_voxel *voxels; /* Q_CHUNK_VOXELS entries, or NULL when uniform */
    q_voxel uniform;
    uint64_t version;
} q_chunk;

typedef struct q_change {
    q_box box;
    uint64_t version;
} q_change;

struct q_terrain {
    q_hashmap index;          /* chunk key -> position in chunks */
    Q_ARRAY(q_chunk) chunks;  /* dense; order depends on history, never exposed */
    uint64_t version;
    q_change log[Q_CHANGE_LOG_SIZE]; /* ring: entry i holds version log_first + i */
    uint64_t log_first;       /* oldest version still in the log */
    uint32_t log_start, log_count;
    q_jobs *jobs;
};

#define Q_VOXEL_INDEX(x, y, z) ((x) + Q_CHUNK_SIZE * ((y) + Q_CHUNK_SIZE * (z)))

static inline int32_t q_floor_div_chunk(int32_t v) { return v >> Q_CHUNK_BITS; }

static inline q_voxel q_voxel_normalise(q_voxel v)
{
    if (v.material == 0 || v.occupancy == 0)
        return (q_voxel){0, 0};
    return v;
}

/* Position of chunk (cx, cy, cz) in t->chunks, or -1. */
long q_chunk_find(const q_terrain *t, int32_t cx, int32_t cy, int32_t cz);
/* Position of the chunk, adding a uniform-air chunk when absent (callers
 * must q_chunk_settle it afterwards); -1 when out of memory. */
long q_chunk_get_or_add(q_terrain *t, int32_t cx, int32_t cy, int32_t cz);
/* Gives a uniform chunk per-voxel memory filled with its value. */
bool q_chunk_densify(q_chunk *c);
/* Shrinks a chunk that became uniform and removes an all-air one. May move
 * another chunk into position `at`. */
void q_chunk_settle(q_terrain *t, long at);
/* Starts a new version and logs the changed box. Call once per change,
 * before stamping chunks with t->version. */
void q_terrain_log_change(q_terrain *t, q_box box);

#endif
