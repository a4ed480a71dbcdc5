/* World lifetime, clock, stats and the handle registry: see world.h. */
#include "world/world.h"
#include "world/world_internal.h"

#include "core/alloc.h"
#include "core/array.h"
#include "core/jobs.h"
#include "mesh/clipmap.h"
#include "physics/bodies.h"
#include "physics/terrain_physics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

q_world_def q_default_world_def(void)
{
    return (q_world_def){1.0, {0.0, -9.81, 0.0}, 1.0 / 60.0, 4, 1, -1, 0, false};
}

q_world *q_world_create(const q_world_def *def, char *err, size_t errlen)
{
    if (!(isfinite(def->voxel_size) && def->voxel_size > 0)) {
        snprintf(err, errlen, "voxel_size must be > 0, got %g", def->voxel_size);
        return NULL;
    }
    for (int a = 0; a < 3; a++) {
        if (!isfinite(def->gravity[a])) {
            snprintf(err, errlen, "gravity must be finite");
            return NULL;
        }
    }
    if (!(isfinite(def->step) && def->step > 0 && def->step <= 1)) {
        snprintf(err, errlen, "step must be in (0, 1] seconds, got %g", def->step);
        return NULL;
    }
    if (def->substeps < 1 || def->substeps > 64) {
        snprintf(err, errlen, "substeps must be 1..64, got %d", def->substeps);
        return NULL;
    }
    q_world *w = q_calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->def = *def;
    w->jobs = q_jobs_create(def->threads);
    w->terrain = q_terrain_create(w->jobs);
    w->physics = w->terrain ? q_terrain_physics_create(w->terrain, def->voxel_size, def->physics_cache) : NULL;
    w->bodies = w->physics ? q_bodies_create(w->physics, w->jobs, def->voxel_size, def->gravity, def->substeps)
                           : NULL;
    if (!w->terrain || !w->physics || !w->bodies) {
        q_world_destroy(w);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return w;
}

void q_world_destroy(q_world *w)
{
    if (!w)
        return;
    q_clipmap_destroy(w->clipmap);
    q_bodies_destroy(w->bodies);
    q_array_free(&w->contacts);
    q_array_free(&w->shatters);
    q_array_free(&w->fragments);
    q_world_free_detach(w);
    q_terrain_physics_destroy(w->physics);
    q_terrain_destroy(w->terrain);
    q_jobs_destroy(w->jobs);
    q_free(w, sizeof *w);
}

const q_world_def *q_world_get_def(const q_world *w) { return &w->def; }
q_terrain *q_world_terrain(q_world *w) { return w->terrain; }
q_terrain_physics *q_world_terrain_physics(q_world *w) { return w->physics; }
q_bodies *q_world_bodies(q_world *w) { return w->bodies; }

q_jobs *q_world_jobs(q_world *w) { return w->jobs; }

struct q_clipmap *q_world_clipmap(q_world *w)
{
    if (!w->clipmap)
        w->clipmap = q_clipmap_create();
    return w->clipmap;
}

/* Brittle bodies that broke in the step shatter now, around the contact
 * that broke them, with sites seeded from the world's seed, the frame and
 * the body, so equal runs break equally. */
static void shatter_brittle(q_world *w)
{
    const q_breakage *br;
    size_t n = q_bodies_breakages(w->bodies, &br);
    double min_volume = Q_BRITTLE_MIN_VOLUME * pow(w->def.voxel_size, 3);
    for (size_t i = 0; i < n; i++) {
        q_body_state st;
        const q_collider *shape = q_body_shape(w->bodies, br[i].body);
        if (!shape || !q_body_get(w->bodies, br[i].body, &st) || q_collider_mass(shape).volume < min_volume)
            continue;
        q_shatter_params p = q_default_shatter_params();
        p.pieces = Q_BRITTLE_PIECES;
        p.seed = w->def.seed ^ (w->frame * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)br[i].body.index << 32);
        p.has_at = true;
        memcpy(p.at, br[i].at, sizeof p.at);
        q_handle out[Q_BRITTLE_PIECES];
        char err[128];
        double t0 = q_profile_now();
        size_t made = q_body_shatter(w->bodies, br[i].body, &p, out, Q_BRITTLE_PIECES, err, sizeof err);
        w->profile[Q_PROFILE_FRACTURE] += q_profile_now() - t0;
        if (made == 0)
            continue;
        q_shatter_event e = {br[i].body, w->fragments.count, made, {p.at[0], p.at[1], p.at[2]}, br[i].impulse};
        if (!q_array_reserve(&w->fragments, w->fragments.count + made) || !q_array_push(&w->shatters, e))
            continue;
        memcpy(w->fragments.data + w->fragments.count, out, made * sizeof *out);
        w->fragments.count += made;
    }
}

static void step_bodies(q_world *w)
{
    if (w->def.auto_detach)
        q_world_auto_detach(w);
    q_bodies_step(w->bodies, w->def.step);
    q_bodies_stats bs = q_bodies_get_stats(w->bodies);
    w->profile[Q_PROFILE_BROADPHASE] += bs.ms_broadphase;
    w->profile[Q_PROFILE_NARROWPHASE] += bs.ms_narrowphase;
    w->profile[Q_PROFILE_SOLVER] += bs.ms_solver;
    const q_contact_event *ev;
    size_t n = q_bodies_events(w->bodies, &ev);
    if (n && q_array_reserve(&w->contacts, w->contacts.count + n)) {
        memcpy(w->contacts.data + w->contacts.count, ev, n * sizeof *ev);
        w->contacts.count += n;
    }
    shatter_brittle(w);
}

size_t q_world_contacts(const q_world *w, const q_contact_event **out)
{
    *out = w->contacts.data;
    return w->contacts.count;
}

size_t q_world_shatters(const q_world *w, const q_shatter_event **out, const q_handle **fragments)
{
    *out = w->shatters.data;
    *fragments = w->fragments.data;
    return w->shatters.count;
}

int q_world_step(q_world *w, double dt)
{
    if (!(isfinite(dt) && dt >= 0))
        return -1;
    double t0 = q_profile_now();
    w->stepping = true;
    w->contacts.count = 0;
    w->shatters.count = 0;
    w->fragments.count = 0;
    w->detached.count = 0;
    /* Terrain edits made since the last step reach the broadphase now (the
     * queries also sync on their own, so an edit is never missed). */
    q_terrain_physics_sync(w->physics);
    w->profile[Q_PROFILE_EDIT] += q_profile_now() - t0;
    w->accumulator += dt;
    int steps = 0;
    /* A small tolerance so that 60 calls of step(1/60) run exactly 60 steps
     * despite rounding in the accumulator. */
    while (w->accumulator >= w->def.step * (1 - 1e-9) && steps < Q_MAX_STEPS_PER_CALL) {
        w->accumulator -= w->def.step;
        step_bodies(w);
        w->frame++;
        steps++;
    }
    if (steps > 0)
        q_bodies_clear_forces(w->bodies);
    if (w->accumulator < 0)
        w->accumulator = 0;
    if (steps == Q_MAX_STEPS_PER_CALL && w->accumulator >= w->def.step)
        w->accumulator = 0;
    w->stepping = false;
    double ms = q_profile_now() - t0;
    w->profile[Q_PROFILE_STEP] += ms;
    w->profile[Q_PROFILE_CALLS] += ms;
    /* The frame ends here. */
    memcpy(w->profile_last, w->profile, sizeof w->profile);
    memset(w->profile, 0, sizeof w->profile);
    return steps;
}

double q_profile_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void q_world_profile_add(q_world *w, q_profile_stage stage, double ms)
{
    if (stage >= 0 && stage < Q_PROFILE_COUNT && ms > 0)
        w->profile[stage] += ms;
}

void q_world_profile_call(q_world *w, q_profile_stage stage, double t0)
{
    double ms = q_profile_now() - t0;
    q_world_profile_add(w, stage, ms);
    q_world_profile_add(w, Q_PROFILE_CALLS, ms);
}

void q_world_profile(const q_world *w, double out[Q_PROFILE_COUNT])
{
    memcpy(out, w->profile_last, sizeof w->profile_last);
}

double q_world_time(const q_world *w) { return (double)w->frame * w->def.step; }
uint64_t q_world_frame(const q_world *w) { return w->frame; }
double q_world_accumulator(const q_world *w) { return w->accumulator; }

void q_world_set_clock(q_world *w, uint64_t frame, double accumulator)
{
    w->frame = frame;
    w->accumulator = accumulator;
}

uint64_t q_world_hash(const q_world *w)
{
    uint64_t h = q_terrain_hash(w->terrain);
    h ^= q_bodies_hash(w->bodies) * 0xff51afd7ed558ccdull;
    return h ^ (w->frame * 0x9e3779b97f4a7c15ull);
}

q_world_stats q_world_get_stats(q_world *w)
{
    q_terrain_stats ts = q_terrain_get_stats(w->terrain);
    q_terrain_physics_stats ps = q_terrain_physics_get_stats(w->physics);
    q_bodies_stats bs = q_bodies_get_stats(w->bodies);
    q_world_stats s;
    memset(&s, 0, sizeof s);
    s.chunks = ts.chunks;
    s.dense_chunks = ts.dense_chunks;
    s.voxel_bytes = ts.bytes;
    s.bodies = bs.bodies;
    s.awake = bs.awake;
    s.body_pairs = bs.pairs;
    s.manifolds = bs.manifolds;
    s.contacts = bs.contacts;
    s.ms_broadphase = w->profile_last[Q_PROFILE_BROADPHASE];
    s.ms_narrowphase = w->profile_last[Q_PROFILE_NARROWPHASE];
    s.ms_solver = w->profile_last[Q_PROFILE_SOLVER];
    s.broadphase_chunks = ps.broadphase_chunks;
    s.broadphase_bytes = ps.broadphase_bytes;
    s.cached_chunks = ps.cached_chunks;
    s.cache_bytes = ps.cache_bytes;
    s.triangles = ps.triangles;
    s.kd_nodes = ps.kd_nodes;
    s.gridsort_batches = ps.gridsort_batches;
    s.memory = ts.bytes + sizeof *w + ps.broadphase_bytes + ps.cache_bytes + bs.bytes;
    return s;
}

/* ---- registry ---- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static q_handle_pool registry;
static q_world **registry_worlds;
static uint32_t registry_capacity;

q_handle q_world_register(q_world *w)
{
    pthread_mutex_lock(&registry_lock);
    q_handle h = q_handle_alloc(&registry);
    if (!q_handle_is_null(h) && registry.capacity > registry_capacity) {
        q_world **grown = q_realloc(registry_worlds, registry_capacity * sizeof *grown,
                                    registry.capacity * sizeof *grown);
        if (grown) {
            registry_worlds = grown;
            registry_capacity = registry.capacity;
        } else {
            q_handle_release(&registry, h);
            h = Q_NULL_HANDLE;
        }
    }
    if (!q_handle_is_null(h))
        registry_worlds[q_handle_slot(h)] = w;
    pthread_mutex_unlock(&registry_lock);
    return h;
}

q_world *q_world_lookup(q_handle h)
{
    pthread_mutex_lock(&registry_lock);
    q_world *w = q_handle_valid(&registry, h) ? registry_worlds[q_handle_slot(h)] : NULL;
    pthread_mutex_unlock(&registry_lock);
    return w;
}

void q_world_unregister(q_handle h)
{
    pthread_mutex_lock(&registry_lock);
    if (q_handle_release(&registry, h))
        registry_worlds[q_handle_slot(h)] = NULL;
    pthread_mutex_unlock(&registry_lock);
}

/* The registry is never shrunk while the library is loaded: freeing it when
 * the last world goes would restart generations and let a stale handle match
 * a new world. It is released when the library is unloaded (lua_close
 * dlcloses quarry.so) or the process exits, when no handle can be used. */
__attribute__((destructor)) static void free_registry(void)
{
    q_free(registry_worlds, registry_capacity * sizeof *registry_worlds);
    registry_worlds = NULL;
    registry_capacity = 0;
    q_handle_pool_free(&registry);
}
