/* Terrain islands: regions of solid voxels that are not connected to an
 * anchor (the world floor or voxels a script names), found incrementally
 * after edits (issue 10; seed 000 names the idea: "basic connectivity
 * analysis ... disjoint connected voxel regions into a freely moving object").
 *
 * Connectivity. A voxel is solid when its material is not air and not liquid
 * and its occupancy is >= 128 (at least half full: the mesher's inside test,
 * mesh/dc.h). Two solid voxels are connected when they share a FACE (6
 * neighbours). Voxels that touch only along an edge or at a corner are NOT
 * connected: two cubes meeting along an edge are two regions.
 *
 * Anchors. By default every solid voxel with y <= floor_y (def.floor_y, 0 by
 * default: the lowest layer the generator writes, whose box is [0, size))
 * is anchored, and so is everything connected to it. Scripts may replace or
 * add anchor voxels (q_islands_set_anchors): a named voxel anchors its region
 * when it is solid, nothing otherwise. An island is a maximal connected set
 * of solid voxels holding no anchored voxel.
 *
 * How it stays cheap. Each stored 32^3 chunk keeps a summary: the connected
 * components of its own solid voxels (labelled by runs of x rows with a
 * union-find), each with its voxel count, box and lowest voxel, the component
 * labels on its six faces, and the component pairs that touch across each
 * face. Components are the nodes of a graph whose edges are those pairs. An
 * update reads the terrain's change log, relabels only chunks whose version
 * changed, and searches the graph only from the components of changed chunks
 * and the components of their neighbours that touch the shared faces: a
 * best-first search that goes down (lowest voxel first) and stops at the
 * first anchored component, or exhausts the region, which is then an island.
 * Islands found before and untouched by the change are kept. The first
 * update, an overflowed change log, a different terrain, changed anchors or
 * a material turning liquid (or back) relabel everything once.
 *
 * Order. Islands are sorted by their seed, the first voxel in (z, y, x) order;
 * results never depend on history, hash-map order or threads.
 *
 * Memory. A summary holds 12 KiB of face labels per non-uniform chunk (none
 * for uniform ones) plus the component and pair lists: 22 MB for a
 * 1024x128x1024 hills world whose voxels take 118 MB.
 *
 * Detaching (what a caller such as the world step does): update with a chunk
 * budget; when done, for each island that is not too_large, allocate
 * q_box_volume(q_islands_extract_box(island)) bytes twice, call
 * q_islands_extract (the voxels leave the terrain there), write the arrays
 * into an empty scratch terrain at the same box and q_dc_mesh that box (its
 * one-voxel margin of air closes the surface); the mass is the sum over the
 * arrays of occupancy / 255 * material density * voxel_size^3.
 */
#ifndef Q_ISLANDS_H
#define Q_ISLANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

typedef struct q_islands_def {
    int32_t floor_y;     /* solid voxels at y <= floor_y are anchored (default 0) */
    uint64_t max_voxels; /* size cap (default 2^20): bigger islands stay terrain,
                            reported with too_large */
} q_islands_def;

q_islands_def q_default_islands_def(void);

typedef struct q_island {
    q_box box;         /* tight half-open box of its solid voxels */
    uint64_t voxels;   /* solid voxels in it */
    int32_t seed[3];   /* its first voxel in (z, y, x) order */
    bool too_large;    /* voxels > max_voxels, or extracting it would read more
                          than Q_READ_MAX_VOXELS (its box grown by 2): it stays
                          terrain */
} q_island;

typedef struct q_islands q_islands;

/* Creates an empty tracker (no terrain yet); def may be NULL for defaults.
 * NULL when out of memory. The tracker follows one terrain at a time: a call
 * with another terrain starts over. It keeps no pointer into the terrain
 * between calls other than to recognise it. */
q_islands *q_islands_create(const q_islands_def *def);
void q_islands_destroy(q_islands *s);

/* Anchors: the floor (y <= floor_y) when use_floor, plus each voxel of
 * points[count] (voxel coordinates). A change of anchors makes the next
 * update search the whole graph again (no voxel rescans). */
q_status q_islands_set_anchors(q_islands *s, bool use_floor, const int32_t (*points)[3], size_t count);

/* Brings the tracker up to date with t. chunk_budget limits the chunks
 * relabelled in this call (0 = no limit); when it runs out, *done is false,
 * the previous result stays readable (but cannot be extracted) and the next
 * call goes on where this one stopped. The graph search runs within the call
 * that relabels the last chunk; its cost is per component, not per voxel.
 * Q_ERR_MEMORY leaves the tracker empty and due for a full rebuild. */
q_status q_islands_update(q_islands *s, const q_terrain *t, uint32_t chunk_budget, bool *done, char *err,
                          size_t errlen);

/* Result of the last complete update, sorted by seed. Pointers stay valid
 * until the next update. */
size_t q_islands_count(const q_islands *s);
const q_island *q_islands_get(const q_islands *s, size_t index);

/* Box that q_islands_extract fills: the island's box grown by one voxel on
 * every side (for the partly filled voxels around it, see below). */
q_box q_islands_extract_box(const q_island *island);

/* Extracts island `index` and removes it from t in the same step.
 * materials and occupancy (both required) hold q_box_volume(extract box)
 * bytes, x fastest, then y, then z; they receive the island's voxels and air
 * elsewhere. What leaves the terrain: the island's solid voxels, and the
 * partly filled non-liquid voxels (0 < occupancy < 128) that touch the island
 * (faces, edges or corners) and touch no other solid voxel, so a floating
 * ball takes its soft skin with it. The extracted voxels can be written into
 * an empty scratch terrain (q_terrain_write) and meshed with q_dc_mesh over
 * the extract box. *taken (may be NULL) receives the voxels removed.
 * Only valid right after a complete update, or after other extractions
 * since: Q_ERR_ARGUMENT when the terrain changed otherwise, for a bad index
 * or an island already extracted; Q_ERR_TOO_LARGE for a too_large island.
 * Other islands of the result stay valid and extractable. */
q_status q_islands_extract(q_islands *s, q_terrain *t, size_t index, uint8_t *materials, uint8_t *occupancy,
                           uint64_t *taken, char *err, size_t errlen);

typedef struct q_islands_stats {
    size_t chunks;       /* chunk summaries held (chunks with solid voxels) */
    size_t components;   /* graph nodes */
    size_t bytes;        /* memory held */
    /* last update: */
    size_t relabelled;   /* chunks relabelled */
    size_t candidates;   /* components searched from */
    size_t visited;      /* graph nodes visited by the searches */
    bool full;           /* whether it searched the whole graph */
} q_islands_stats;
q_islands_stats q_islands_get_stats(const q_islands *s);

#endif
