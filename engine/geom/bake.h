/* Baked terrain lighting: per-vertex sun visibility and ambient occlusion
 * from rays against the triangles around the vertices (seed 004: the
 * grid-sort suits many rays along one direction, the sun's).
 *
 * Sun visibility is the fraction of def.sun_rays rays towards the sun that
 * meet no triangle within def.sun_distance. The rays spread over a cone of
 * half-angle def.sun_cone around the sun direction (soft shadow edges), on a
 * fixed spiral whose rotation comes from a hash of the vertex position: the
 * same vertex always gets the same rays, and neighbouring vertices different
 * ones. Ambient occlusion is the fraction of def.ao_rays rays over the
 * hemisphere around the vertex normal, cosine-weighted on the same kind of
 * spiral, that escape within def.ao_radius. Rays start def.offset along the
 * normal so that a vertex does not hit its own triangles.
 *
 * Occluders are the triangles given to q_bake_scene_build. A vertex's rays
 * stay inside the box q_bake_reach describes, so a scene holding every
 * triangle in that box around each vertex gives the same answer as one
 * holding the whole world: results depend only on the vertex, its normal
 * and the triangles within reach, never on how vertices are grouped or on
 * threads.
 *
 * The scene holds two grid sorts: one with its sort axis along the sun
 * rays (one cell per level for each ray) over the triangles the sun rays
 * can reach, one along Y over those the hemisphere rays can reach (short
 * rays whose directions cluster around the normals of mostly level ground;
 * on caves terrain they take 0.30 us each there against 0.43 in the sun's
 * grid and 0.50 with a kD tree's any-hit query).
 *
 * Edits. After triangles change within a box, q_bake_box_reaches says
 * which groups of vertices (boxes) may see it and q_bake_vertices_reaching
 * bakes just the vertices that may, leaving the rest as they are.
 */
#ifndef Q_BAKE_H
#define Q_BAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/jobs.h"
#include "voxel/terrain.h" /* q_status */

#define Q_BAKE_MAX_SUN_RAYS 32
#define Q_BAKE_MAX_AO_RAYS 64
#define Q_BAKE_MAX_SUN_CONE 0.5f /* radians */

typedef struct q_bake_def {
    float sun[3];       /* direction towards the sun (any length > 0) */
    int sun_rays;       /* 1..Q_BAKE_MAX_SUN_RAYS */
    float sun_cone;     /* half-angle of the cone of sun rays, radians, [0, Q_BAKE_MAX_SUN_CONE] */
    float sun_distance; /* metres a sun ray looks for occluders, > 0 */
    int ao_rays;        /* 0..Q_BAKE_MAX_AO_RAYS; 0 leaves ambient occlusion at 1 */
    float ao_radius;    /* metres, > 0 */
    float offset;       /* metres along the normal where rays start, >= 0 */
} q_bake_def;

/* Defaults for a sun direction and a voxel size (metres): 6 sun rays in a
 * 2 degree cone reaching 48 voxels, 8 hemisphere rays reaching 4 voxels,
 * starting 0.05 voxel off the surface. */
q_bake_def q_default_bake_def(const float sun[3], double voxel_size);

/* Q_OK, or Q_ERR_ARGUMENT with the offending field named in err. */
q_status q_bake_def_check(const q_bake_def *def, char *err, size_t errlen);

/* Offsets (metres) of the box that holds every ray of a vertex at p: all of
 * them stay in [p + lo, p + hi]. Occluders for vertices in a box [a, b] are
 * the triangles meeting [a + lo, b + hi]; a change in a box [a, b] can only
 * alter vertices in [a - hi, b - lo]. */
void q_bake_reach(const q_bake_def *def, float lo[3], float hi[3]);

/* Whether a ray of some vertex in the box [vlo, vhi] can meet something
 * lying in the box [tlo, thi] (metres). Conservative: false only when no
 * ray can. Tighter than q_bake_reach's boxes, as the sun rays of a box
 * sweep a slanted prism; this is the test q_bake_scene_build culls with. */
bool q_bake_box_reaches(const q_bake_def *def, const float vlo[3], const float vhi[3], const float tlo[3],
                        const float thi[3]);

typedef struct q_bake_scene q_bake_scene;

/* Builds the occluders for baking vertices that lie in the box [lo, hi]
 * (metres) with def (checked as q_bake_def_check does), from triangles (3
 * floats per vertex, 3 indices per triangle; copied, so the arrays may be
 * freed afterwards) that should include every one within reach of the box.
 * Each grid sort keeps only the triangles its rays can reach from the box
 * (the sun's reaches far up-sun, the hemisphere's only ao_radius), so
 * vertices outside the box get wrong answers. cell is the grids' finest
 * cell size in metres (a voxel or two suits terrain); they never exceed
 * Q_GRIDSORT_MAX_RESOLUTION cells a side. jobs (may be NULL) builds the
 * two grid sorts side by side. Errors: Q_ERR_ARGUMENT, Q_ERR_TOO_LARGE,
 * Q_ERR_MEMORY, with a message in err. */
q_status q_bake_scene_build(q_bake_scene **out, const q_bake_def *def, const float *positions,
                            size_t vertex_count, const uint32_t *indices, size_t index_count,
                            const float lo[3], const float hi[3], float cell, q_jobs *jobs, char *err,
                            size_t errlen);
void q_bake_scene_free(q_bake_scene *s);
size_t q_bake_scene_bytes(const q_bake_scene *s);

/* Bakes n vertices (positions and unit normals, 3 floats each, metres):
 * sun[i] and ao[i] get the escaping fraction times 255, rounded. Vertices
 * whose normal faces away from the sun get sun 0 without rays (the sun term
 * is zero there anyway). Thread-safe for one scene; allocates its ray
 * arrays per call and returns false only when that fails (outputs are then
 * all 255). */
bool q_bake_vertices(const q_bake_scene *s, const float *positions, const float *normals, size_t n,
                     uint8_t *sun, uint8_t *ao);

/* Relighting after a change: as q_bake_vertices, but only the vertices
 * whose rays can reach the box [lo, hi] (metres; where triangles changed)
 * are baked, and the others' sun and ao bytes are left as they are (their
 * rays meet only unchanged triangles, so baking them again would give the
 * same bytes). *baked gets the number baked. False only when out of memory
 * (nothing is then written). */
bool q_bake_vertices_reaching(const q_bake_scene *s, const float *positions, const float *normals, size_t n,
                              const float lo[3], const float hi[3], uint8_t *sun, uint8_t *ao, size_t *baked);

#endif
