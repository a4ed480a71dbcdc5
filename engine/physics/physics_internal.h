/* Private to engine/physics: the broadphase table and the chunk cache. */
#ifndef Q_PHYSICS_INTERNAL_H
#define Q_PHYSICS_INTERNAL_H

#include "core/array.h"
#include "core/hashmap.h"
#include "mesh/dc.h"
#include "physics/kdtree.h"
#include "physics/terrain_physics.h"
#include "voxel/material.h"

/* Physics chunk keys pack x and z in 22 bits and y in 20, so queries reach
 * voxels within +-2^24 horizontally and +-2^22 vertically. */
#define Q_PHYS_LIMIT (1 << 24)
#define Q_PHYS_LIMIT_Y (1 << 22)

enum { Q_BP_NONE = 0, Q_BP_MASK = 1, Q_BP_FULL = 2 };

typedef struct q_bp_masks {
    uint64_t solid[8], water[8]; /* word per Y slice, bit x + 8 z */
    uint8_t solid_tag, water_tag;
} q_bp_masks;

typedef struct q_bp_entry {
    int32_t cx, cy, cz;
    uint8_t solid_tag, water_tag;
    uint32_t slot[2]; /* solid and water mask slots, for MASK tags; else UINT32_MAX */
} q_bp_entry;

typedef struct q_mask_slot {
    uint64_t bits[8];
} q_mask_slot;

/* Masks of one kind (solid or water): 64-byte slots with a free list, so a
 * chunk pays only for the masks it has. */
typedef struct q_mask_pool {
    Q_ARRAY(q_mask_slot) slots;
    Q_ARRAY(uint32_t) free;
} q_mask_pool;

/* A cached chunk: its solid and water meshes and their trees. Positions are
 * 16-bit integers relative to the chunk corner in units of 1/Q_DC_GRID voxel:
 * exact, since the mesher snaps vertices to that grid (6 bytes a vertex
 * instead of 12). */
typedef struct q_chunk_mesh {
    int16_t *positions;
    uint8_t *materials;
    uint16_t *indices;
    uint32_t vertex_count, triangle_count;
    q_kdtree tree;
} q_chunk_mesh;

typedef struct q_cache_entry {
    int32_t cx, cy, cz;
    q_chunk_mesh surface[2]; /* Q_SURFACE_SOLID, Q_SURFACE_WATER */
    size_t bytes;
} q_cache_entry;

/* An entry's neighbours in the use order (indices into the cache array,
 * Q_LRU_NONE at the ends): the least recently used entry is evicted first,
 * found in O(1) rather than by a scan of the whole cache. The links live
 * in an array of their own, parallel to the entries: a hit relinks three
 * of them, and 8-byte links stay in the data cache where 288-byte entries
 * would not. */
typedef struct q_lru_link {
    uint32_t older, newer;
} q_lru_link;

#define Q_LRU_NONE UINT32_MAX

struct q_terrain_physics {
    q_terrain *terrain;
    double voxel_size;
    size_t budget;
    uint64_t version;
    bool synced;

    q_hashmap bp_index;
    Q_ARRAY(q_bp_entry) bp;
    q_mask_pool pool[2]; /* solid, water */

    q_hashmap cache_index;
    Q_ARRAY(q_cache_entry) cache;
    Q_ARRAY(q_lru_link) lru; /* cache.count links, entry by entry */
    size_t cache_bytes;
    uint32_t lru_oldest, lru_newest; /* ends of the use order; Q_LRU_NONE when empty */
    uint64_t evictions; /* entries evicted for room so far (a chunk built for a
                           later query may push out one built for an earlier) */

    size_t gridsort_batches;
    /* Frozen (q_tp_freeze): several threads query at once; nothing is
     * synced, built, evicted or touched, and a chunk mesh not already in
     * the cache is a miss (frozen_missed, set atomically) instead of being
     * built. */
    bool frozen, frozen_missed;

    /* per-call scratch, reused */
    void *dc_scratch;
    q_dc_output out;
    uint8_t mat10[1000], occ10[1000];
    bool liquid[Q_MATERIAL_MAX];
};

uint64_t q_phys_key(int32_t cx, int32_t cy, int32_t cz);
const q_bp_entry *q_bp_find(const q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz);
/* Computes the masks of one chunk from the terrain (broadphase.c). */
bool q_bp_build_chunk(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz, q_bp_masks *out);

/* The cached solid (surface 0) or water (1) mesh of a chunk, built on
 * demand (collide_terrain.c); NULL when out of memory. Valid only until the
 * next call that may touch the cache (the cache array can move). */
const q_chunk_mesh *q_tp_chunk_mesh(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz, int surface);

/* Read-only phases for parallel queries (rigid bodies' terrain contacts):
 * sync and warm the cache first, freeze, query from any thread, thaw. A
 * query that needed a chunk mesh the cache lacked sets the miss flag
 * (q_tp_take_missed reads and clears it): some answer of the frozen phase
 * is incomplete and the phase must be redone after thawing. (A flag in the
 * cache, not a thread-local: thread-locals in a dlopen'ed module are what
 * LeakSanitizer's exit scan trips over.) */
void q_tp_freeze(q_terrain_physics *p, bool frozen);
bool q_tp_take_missed(q_terrain_physics *p);

#endif
