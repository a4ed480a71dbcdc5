/* Voxel terrain: sparse chunked storage, shape edits, box reads and writes,
 * generation and change tracking.
 *
 * Coordinates. Voxel (x, y, z) covers [x, x+1) on each axis in voxel units;
 * its sample point is the centre (x+0.5, y+0.5, z+0.5). Functions taking
 * `double` positions work in voxel units: the world scales by voxel_size
 * before calling. Integer boxes are half-open [min, max). Every coordinate
 * must lie in [-Q_TERRAIN_LIMIT, Q_TERRAIN_LIMIT).
 *
 * Voxels. A material id (voxel/material.h) and an occupancy 0..255. Storage
 * keeps one invariant: occupancy 0 <=> material air. Writes that break it are
 * normalised (air gets occupancy 0, occupancy 0 becomes air).
 *
 * Storage. 32^3 chunks in a hash map keyed by chunk coordinates. A chunk whose
 * voxels are all equal stores that one value (no per-voxel memory); an
 * all-air chunk is not stored at all. Edits shrink chunks back when they
 * become uniform, so equal content always has the same representation.
 *
 * Errors. Functions that can fail return a q_status and write a message into
 * the caller's buffer; on failure the terrain is unchanged.
 */
#ifndef Q_TERRAIN_H
#define Q_TERRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/jobs.h"

#define Q_CHUNK_BITS 5
#define Q_CHUNK_SIZE (1 << Q_CHUNK_BITS)
#define Q_CHUNK_VOXELS (Q_CHUNK_SIZE * Q_CHUNK_SIZE * Q_CHUNK_SIZE)

/* Voxel coordinates are limited to +-2^24 (16.7 million voxels each way). */
#define Q_TERRAIN_LIMIT (1 << 24)
/* An edit's bounding box may hold at most 2^27 voxels (a ball of radius ~254,
 * a 512^3 block); fill_region allows 2^33 because whole chunks take a fast
 * path. Larger requests fail with Q_ERR_TOO_LARGE instead of taking minutes. */
#define Q_EDIT_MAX_VOXELS (1ull << 27)
#define Q_REGION_MAX_VOXELS (1ull << 33)
/* read/write boxes are materialised in memory: at most 2^26 voxels. Smoothing
 * snapshots its box, so it allows 2^24 (a ball of radius ~127). */
#define Q_READ_MAX_VOXELS (1ull << 26)
#define Q_SMOOTH_MAX_VOXELS (1ull << 24)

typedef enum q_status {
    Q_OK = 0,
    Q_ERR_ARGUMENT,  /* a value out of range */
    Q_ERR_TOO_LARGE, /* over one of the limits above */
    Q_ERR_MEMORY,
    Q_ERR_IO,
    Q_ERR_FORMAT, /* corrupt or unsupported data */
    Q_ERR_OUTPUT, /* caller-owned output arrays too small */
} q_status;

typedef struct q_voxel {
    uint8_t material;
    uint8_t occupancy;
} q_voxel;

typedef struct q_box {
    int32_t min[3], max[3]; /* half-open */
} q_box;

typedef struct q_terrain q_terrain;

/* Whether a box lies within the coordinate limits and is not inverted. */
bool q_box_in_limits(q_box b);
/* Voxels in a box (0 when inverted on any axis). */
uint64_t q_box_volume(q_box b);

/* Creates an empty terrain. jobs (may be NULL) is borrowed for parallel work
 * and must outlive the terrain. NULL when out of memory. */
q_terrain *q_terrain_create(q_jobs *jobs);
void q_terrain_destroy(q_terrain *t);

/* ---- reading ---- */

/* The voxel at (x, y, z); air outside stored chunks and outside the limits. */
q_voxel q_terrain_get(const q_terrain *t, int32_t x, int32_t y, int32_t z);

/* Copies the box into caller arrays of (max-min) product length, x fastest,
 * then y, then z. Either array may be NULL. */
q_status q_terrain_read(const q_terrain *t, q_box box, uint8_t *materials, uint8_t *occupancy,
                        char *err, size_t errlen);

/* Solid density at a point (voxel units): occupancy of non-liquid voxels,
 * trilinearly interpolated between voxel centres, in 0..1. The surface the
 * mesher extracts is where this crosses 1/2. */
double q_terrain_solid_density(const q_terrain *t, const double p[3]);

/* Tight box around all non-air voxels; false when the terrain is empty. */
bool q_terrain_bounds(const q_terrain *t, q_box *out);

/* ---- editing ---- */

typedef enum q_edit_op {
    Q_EDIT_FILL,   /* raise occupancy to the shape's coverage, set material */
    Q_EDIT_CARVE,  /* lower occupancy to 1 - coverage */
    Q_EDIT_PAINT,  /* set material where coverage >= 1/2 and not air */
    Q_EDIT_SMOOTH, /* blend occupancy towards its 3^3 average by strength * coverage */
} q_edit_op;

typedef enum q_shape_kind { Q_SHAPE_BALL, Q_SHAPE_BLOCK, Q_SHAPE_CYLINDER } q_shape_kind;

/* A solid in voxel units. Coverage of a voxel is clamp(1/2 + d, 0, 1) where d
 * is the exact signed distance from the voxel centre to the surface
 * (positive inside): exact for a plane crossing a voxel along an axis, and
 * what gives the mesher sub-voxel surfaces. */
typedef struct q_shape {
    q_shape_kind kind;
    double center[3];
    double radius;      /* ball, cylinder */
    double size[3];     /* block: full extents */
    double height;      /* cylinder: full height along Y */
    double rotation[4]; /* block: unit quaternion w, x, y, z */
} q_shape;

typedef struct q_edit {
    q_edit_op op;
    q_shape shape;
    uint8_t material; /* FILL and PAINT */
    double strength;  /* SMOOTH: 0..1 */
} q_edit;

/* Applies an edit. Fails with Q_ERR_ARGUMENT for non-finite or non-positive
 * sizes, Q_ERR_TOO_LARGE past Q_EDIT_MAX_VOXELS or the coordinate limits. */
q_status q_terrain_edit(q_terrain *t, const q_edit *e, char *err, size_t errlen);

/* Sets every voxel of the box to (material, 255), or to air. */
q_status q_terrain_fill_region(q_terrain *t, q_box box, uint8_t material, char *err, size_t errlen);

/* Inverse of q_terrain_read (both arrays required); values are normalised
 * (see the invariant above) and material ids must be defined. */
q_status q_terrain_write(q_terrain *t, q_box box, const uint8_t *materials, const uint8_t *occupancy,
                         char *err, size_t errlen);

/* Removes every voxel. */
void q_terrain_clear(q_terrain *t);

/* ---- generation (generate.c) ---- */

typedef enum q_terrain_kind { Q_GEN_FLAT, Q_GEN_HILLS, Q_GEN_CAVES, Q_GEN_ISLANDS } q_terrain_kind;

typedef struct q_generate_def {
    q_terrain_kind kind;
    int32_t size[3];    /* voxels; the generated box is [0, size) */
    uint64_t seed;
    bool has_water;     /* islands always have water */
    double water_level; /* voxel Y of the water surface, when has_water */
} q_generate_def;

q_generate_def q_default_generate_def(void);

/* Replaces the whole terrain with a generated world. Output depends only on
 * the definition (never on thread count). Size at most 4096 per axis and
 * 2^31 voxels in all. */
q_status q_terrain_generate(q_terrain *t, const q_generate_def *def, char *err, size_t errlen);

/* ---- change tracking ---- */

/* Version of the content: bumped by every call that changed a voxel. */
uint64_t q_terrain_version(const q_terrain *t);

typedef void (*q_change_fn)(void *ud, q_box box, uint64_t version);

/* Calls fn for every box changed after version `since`, oldest first. The
 * log keeps the last Q_CHANGE_LOG_SIZE changes: when `since` is older, it
 * returns false without calling fn and the caller treats everything as
 * changed. */
#define Q_CHANGE_LOG_SIZE 4096
bool q_terrain_changes_since(const q_terrain *t, uint64_t since, q_change_fn fn, void *ud);

/* ---- whole-terrain access (hash, save, stats) ---- */

typedef struct q_chunk_view {
    int32_t cx, cy, cz;     /* chunk coordinates: voxel = chunk * 32 + local */
    const q_voxel *voxels;  /* NULL for a uniform chunk */
    q_voxel uniform;        /* the value of a uniform chunk */
    uint64_t version;       /* terrain version of the chunk's last change */
} q_chunk_view;

/* Number of stored (non-air) chunks and a view of each, sorted by (cz, cy,
 * cx): an order that depends only on content. `views` holds count entries. */
size_t q_terrain_chunk_count(const q_terrain *t);
void q_terrain_chunk_views(const q_terrain *t, q_chunk_view *views);

/* Replaces chunk (cx, cy, cz) with the given voxels (32^3, x fastest) or
 * with a uniform value when voxels is NULL. Used by the loader; values are
 * normalised and the chunk shrinks if uniform. */
q_status q_terrain_set_chunk(q_terrain *t, int32_t cx, int32_t cy, int32_t cz, const q_voxel *voxels,
                             q_voxel uniform);

/* Whether chunk (cx, cy, cz) is stored (holds any non-air voxel). */
bool q_terrain_has_chunk(const q_terrain *t, int32_t cx, int32_t cy, int32_t cz);

typedef struct q_terrain_stats {
    size_t chunks;       /* stored chunks */
    size_t dense_chunks; /* chunks with per-voxel memory */
    size_t bytes;        /* voxel storage plus tables */
} q_terrain_stats;
q_terrain_stats q_terrain_get_stats(const q_terrain *t);

/* 64-bit digest of the content: equal content gives equal digests whatever
 * the edit history. */
uint64_t q_terrain_hash(const q_terrain *t);

#endif
