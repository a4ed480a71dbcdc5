/* Detached terrain: islands of solid voxels that lost their connection to
 * the anchors (voxel/islands.h) become rigid bodies (world.h:
 * q_world_detach_islands, auto_detach). */
#include "core/alloc.h"
#include "mesh/dc.h"
#include "mesh/mesh.h"
#include "voxel/islands.h"
#include "voxel/material.h"
#include "world/world_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

q_detach_params q_default_detach_params(void) { return (q_detach_params){16, 0, 0}; }

struct q_islands *q_world_islands(q_world *w)
{
    if (!w->islands)
        w->islands = q_islands_create(NULL);
    return w->islands;
}

void q_world_free_detach(q_world *w)
{
    q_islands_destroy(w->islands);
    w->islands = NULL;
    q_array_free(&w->detached);
}

size_t q_world_detached(const q_world *w, const q_handle **out)
{
    *out = w->detached.data;
    return w->detached.count;
}

/* The closed surface of extracted voxels, in metres relative to the box's
 * corner: written into a scratch terrain and meshed over the box, whose
 * one-voxel rim of air closes it. */
static q_mesh *island_mesh(q_box box, const uint8_t *mat, const uint8_t *occ, double vs, char *err, size_t errlen)
{
    q_terrain *scratch = q_terrain_create(NULL);
    if (!scratch || q_terrain_write(scratch, box, mat, occ, err, errlen) != Q_OK) {
        if (!scratch)
            snprintf(err, errlen, "out of memory");
        q_terrain_destroy(scratch);
        return NULL;
    }
    q_dc_output out;
    memset(&out, 0, sizeof out);
    out.vertex_capacity = q_dc_vertex_bound(box);
    out.index_capacity = q_dc_index_bound(box);
    q_mesh *m = NULL;
    out.positions = q_alloc(out.vertex_capacity * 3 * sizeof(float));
    out.indices = q_alloc(out.index_capacity * sizeof(uint32_t));
    memcpy(out.origin, box.min, sizeof out.origin);
    if (!out.positions || !out.indices)
        snprintf(err, errlen, "out of memory");
    else if (q_dc_mesh(scratch, box, Q_SURFACE_SOLID, (float)vs, &out, NULL, err, errlen) == Q_OK)
        m = q_mesh_create(out.vertex_count, out.index_count, false, false);
    if (m) {
        memcpy(m->positions, out.positions, out.vertex_count * 3 * sizeof(float));
        memcpy(m->indices, out.indices, out.index_count * sizeof(uint32_t));
    }
    q_free(out.positions, out.vertex_capacity * 3 * sizeof(float));
    q_free(out.indices, out.index_capacity * sizeof(uint32_t));
    q_terrain_destroy(scratch);
    return m;
}

/* Mass of the extracted voxels and the material with the largest share. */
static double island_mass(const uint8_t *mat, const uint8_t *occ, uint64_t n, double vs, uint8_t *material)
{
    double by_material[Q_MATERIAL_MAX] = {0}, total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const q_material *m = occ[i] ? q_material_get(mat[i]) : NULL;
        if (!m || m->liquid)
            continue;
        double kg = occ[i] / 255.0 * m->density * vs * vs * vs;
        by_material[mat[i]] += kg;
        total += kg;
    }
    *material = 0;
    for (int i = 1; i < Q_MATERIAL_MAX; i++)
        if (by_material[i] > by_material[*material])
            *material = (uint8_t)i;
    return total;
}

/* Extracts island `index` and makes its body; the null handle when it
 * could not (the voxels are then back in the terrain). */
static q_handle detach_one(q_world *w, size_t index, size_t max_hulls, char *err, size_t errlen)
{
    const q_island *isl = q_islands_get(w->islands, index);
    q_box box = q_islands_extract_box(isl);
    uint64_t n = q_box_volume(box);
    uint8_t *mat = q_alloc(n), *occ = q_alloc(n);
    q_handle h = Q_NULL_HANDLE;
    if (!mat || !occ) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* Read first: if the body cannot be made, the voxels are written back. */
    if (q_islands_extract(w->islands, w->terrain, index, mat, occ, NULL, err, errlen) != Q_OK)
        goto done;
    double vs = w->def.voxel_size;
    q_body_def def = q_default_body_def();
    def.mass = island_mass(mat, occ, n, vs, &def.material);
    q_mesh *mesh = island_mesh(box, mat, occ, vs, err, errlen);
    def.shape = mesh ? q_collider_from_mesh(mesh, max_hulls, err, errlen) : NULL;
    q_mesh_destroy(mesh);
    for (int a = 0; a < 3; a++)
        def.position[a] = box.min[a] * vs;
    if (def.shape && def.mass > 0)
        h = q_body_create(w->bodies, &def, err, errlen);
    else
        q_collider_free(def.shape);
    if (q_handle_is_null(h)) {
        /* Put the voxels back where they were (the box held only the
         * island and air, so writing it restores the terrain). */
        char werr[128];
        uint8_t *now_mat = q_alloc(n), *now_occ = q_alloc(n);
        if (now_mat && now_occ && q_terrain_read(w->terrain, box, now_mat, now_occ, werr, sizeof werr) == Q_OK) {
            for (uint64_t i = 0; i < n; i++)
                if (occ[i] == 0)
                    mat[i] = now_mat[i], occ[i] = now_occ[i];
            q_terrain_write(w->terrain, box, mat, occ, werr, sizeof werr);
        }
        q_free(now_mat, n);
        q_free(now_occ, n);
    }
done:
    q_free(mat, n);
    q_free(occ, n);
    return h;
}

static size_t detach_islands(q_world *w, const q_detach_params *p, size_t *too_large, bool *pending, char *err,
                             size_t errlen);

size_t q_world_detach_islands(q_world *w, const q_detach_params *p, size_t *too_large, bool *pending, char *err,
                              size_t errlen)
{
    if (too_large)
        *too_large = 0;
    if (pending)
        *pending = false;
    if (p->max_hulls < 1 || p->max_hulls > 1024) {
        snprintf(err, errlen, "max_hulls must be 1..1024, got %zu", p->max_hulls);
        return 0;
    }
    if (!q_world_islands(w)) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    double t0 = q_profile_now();
    size_t made = detach_islands(w, p, too_large, pending, err, errlen);
    double ms = q_profile_now() - t0;
    w->profile[Q_PROFILE_DETACH] += ms;
    if (!w->stepping)
        w->profile[Q_PROFILE_CALLS] += ms;
    return made;
}

static size_t detach_islands(q_world *w, const q_detach_params *p, size_t *too_large, bool *pending, char *err,
                             size_t errlen)
{
    bool done = false;
    if (q_islands_update(w->islands, w->terrain, p->chunk_budget, &done, err, errlen) != Q_OK)
        return 0;
    if (!done) {
        if (pending)
            *pending = true;
        return 0;
    }
    size_t made = 0, count = q_islands_count(w->islands);
    for (size_t i = 0; i < count && (p->max_bodies == 0 || made < p->max_bodies); i++) {
        if (q_islands_get(w->islands, i)->too_large) {
            if (too_large)
                ++*too_large;
            continue;
        }
        char ierr[160];
        q_handle h = detach_one(w, i, p->max_hulls, ierr, sizeof ierr);
        if (q_handle_is_null(h)) {
            q_log(Q_LOG_WARN, "detach: island %zu stays terrain: %s", i, ierr);
            continue;
        }
        if (q_array_push(&w->detached, h))
            made++;
    }
    return made;
}

void q_world_auto_detach(q_world *w)
{
    q_detach_params p = q_default_detach_params();
    p.chunk_budget = Q_AUTO_DETACH_CHUNKS;
    char err[160];
    q_world_detach_islands(w, &p, NULL, NULL, err, sizeof err);
}
