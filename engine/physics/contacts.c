/* The rigid-body step's first stages: pairs of bodies (sweep and prune)
 * and the narrowphase, whose manifolds (terrain patches and body pairs)
 * become contact constraints, warm-started from last step's. solver.c
 * takes them from there. See bodies.h for the outline.
 */
#include "core/vec3.h"
#include "physics/bodies_internal.h"
#include "physics/collide_internal.h"
#include "physics/physics_internal.h"
#include "voxel/material.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A body that cannot move in this step (the terrain, static or sleeping):
 * zero velocity, no inverse mass, at rest in its place. */
static const q_body ground = {.q = {0, 0, 0, 1}, .q0 = {0, 0, 0, 1}};

static const q_body *side(const q_bodies *b, uint32_t slot)
{
    if (slot == Q_TERRAIN || !q_body_moving(&b->bodies.data[slot]))
        return &ground;
    return &b->bodies.data[slot];
}

/* ---- pairs ---- */

static void grow_bounds(q_bodies *b, double dt)
{
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (!o->alive)
            continue;
        v3_copy(o->x0, o->x);
        memcpy(o->q0, o->q, sizeof o->q);
        /* How far the surface may travel this step: contacts within that
         * distance are kept as speculative ones. */
        o->margin = Q_SPECULATIVE;
        if (q_body_moving(o)) {
            double v[3];
            v3_copy(v, o->v);
            v3_madd(v, b->gravity, dt);
            o->margin += (v3_len(v) + v3_len(o->w) * o->radius) * dt;
        }
        for (int a = 0; a < 3; a++)
            o->gmin[a] = o->min[a] - o->margin, o->gmax[a] = o->max[a] + o->margin;
    }
}

/* Sorts the sweep list by the bodies' grown lower bound along the sweep
 * axis, ties by slot (a total order, so the result does not depend on the
 * list's previous order). The list is last step's order, which bodies
 * rarely leave: insertion sort does little work on it. */
static void sort_sweep(q_bodies *b)
{
    int ax = b->sweep_axis;
    q_sweep_box *e = b->sweep.data;
    size_t n = b->order.count;
    for (size_t i = 0; i < n; i++) {
        const q_body *o = &b->bodies.data[b->order.data[i]];
        for (int k = 0; k < 3; k++)
            e[i].min[k] = o->gmin[k], e[i].max[k] = o->gmax[k];
        e[i].slot = b->order.data[i];
    }
    for (size_t i = 1; i < n; i++) {
        q_sweep_box x = e[i];
        size_t j = i;
        while (j > 0 && (e[j - 1].min[ax] > x.min[ax] || (e[j - 1].min[ax] == x.min[ax] && e[j - 1].slot > x.slot))) {
            e[j] = e[j - 1];
            j--;
        }
        e[j] = x;
    }
    for (size_t i = 0; i < n; i++)
        b->order.data[i] = e[i].slot;
}

/* Sweep and prune along X over the sorted boxes. Returns true when a moving
 * body ran into a sleeping one and woke its island (the caller then sweeps
 * again). The pairs come out in sweep order, which is the solver's order:
 * sweeping along the axis of largest spread would be quicker for tall
 * stacks, but the solve order it gives left a 210-box pyramid creeping and
 * awake. Bodies' flags are read only for overlapping boxes, from the bodies
 * themselves (a wake changes them during the sweep). */
static bool sweep(q_bodies *b)
{
    b->pairs.count = 0;
    bool woke = false;
    const q_sweep_box *e = b->sweep.data;
    size_t n = b->order.count;
    int ax = b->sweep_axis, a1 = (ax + 1) % 3, a2 = (ax + 2) % 3;
    for (size_t i = 0; i < n; i++) {
        const q_sweep_box *p = &e[i];
        for (size_t j = i + 1; j < n; j++) {
            const q_sweep_box *o = &e[j];
            if (o->min[ax] > p->max[ax])
                break;
            if (o->min[a1] > p->max[a1] || p->min[a1] > o->max[a1] || o->min[a2] > p->max[a2] ||
                p->min[a2] > o->max[a2])
                continue;
            q_body *bp = &b->bodies.data[p->slot], *bo = &b->bodies.data[o->slot];
            if (!q_body_moving(bp) && !q_body_moving(bo))
                continue;
            q_body *mover = q_body_moving(bp) ? bp : bo, *other = q_body_moving(bp) ? bo : bp;
            if (other->sleeping && mover->sleep_time == 0) {
                q_body_wake(b, other);
                woke = true;
            }
            uint32_t s0 = p->slot < o->slot ? p->slot : o->slot, s1 = p->slot ^ o->slot ^ s0;
            if (!q_array_push(&b->pairs, ((q_pair){s0, s1})))
                return woke; /* out of memory: pairs beyond this are missed this step */
        }
    }
    return woke;
}

/* Whether the sweep list still holds every live body once (then it is
 * kept, in last step's order). */
static bool order_current(const q_bodies *b)
{
    if (b->order.count != b->live)
        return false;
    for (size_t i = 0; i < b->order.count; i++)
        if (b->order.data[i] >= b->bodies.count || !b->bodies.data[b->order.data[i]].alive)
            return false;
    return true;
}

void q_bodies_find_pairs(q_bodies *b, double dt)
{
    if (!q_array_reserve(&b->order, b->live) || !q_array_reserve(&b->sweep, b->live)) {
        b->order.count = 0;
        b->pairs.count = 0;
        return;
    }
    if (!order_current(b)) {
        b->order.count = 0;
        for (uint32_t i = 0; i < b->bodies.count; i++)
            if (b->bodies.data[i].alive)
                b->order.data[b->order.count++] = i;
    }
    b->sweep.count = b->order.count;
    for (int pass = 0; pass < 4; pass++) {
        grow_bounds(b, dt);
        sort_sweep(b);
        if (!sweep(b))
            break;
    }
}

/* ---- narrowphase and constraints ---- */

static bool key_equal(const q_constraint_key *x, const q_constraint_key *y)
{
    return x->a == y->a && x->b == y->b && x->c == y->c;
}

static uint32_t key_hash(const q_constraint_key *k)
{
    uint64_t h = k->a * 0x9e3779b97f4a7c15ull ^ k->b * 0xc2b2ae3d27d4eb4full ^ (uint64_t)k->c * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h ^ h >> 32);
}

/* Last step's constraints by key: an open-addressing table of indices + 1
 * into `previous` (0: empty), at most half full. */
static void index_previous(q_bodies *b)
{
    size_t n = b->previous.count, cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    b->previous_table.count = 0;
    if (n == 0 || !q_array_reserve(&b->previous_table, cap))
        return; /* out of memory: no warm start this step */
    memset(b->previous_table.data, 0, cap * sizeof(uint32_t));
    b->previous_table.count = cap;
    for (size_t i = 0; i < n; i++) {
        const q_constraint_key *k = &b->previous.data[i].key;
        for (size_t h = key_hash(k) & (cap - 1);; h = (h + 1) & (cap - 1)) {
            uint32_t e = b->previous_table.data[h];
            if (e == 0) {
                b->previous_table.data[h] = (uint32_t)i + 1;
                break;
            }
            if (key_equal(&b->previous.data[e - 1].key, k))
                break; /* keys are unique; were one repeated, the first would stand */
        }
    }
}

static const q_constraint *find_previous(const q_bodies *b, const q_constraint_key *k)
{
    size_t cap = b->previous_table.count;
    if (cap == 0)
        return NULL;
    for (size_t h = key_hash(k) & (cap - 1);; h = (h + 1) & (cap - 1)) {
        uint32_t e = b->previous_table.data[h];
        if (e == 0)
            return NULL;
        if (key_equal(&b->previous.data[e - 1].key, k))
            return &b->previous.data[e - 1];
    }
}

static uint64_t body_key(const q_bodies *b, uint32_t slot)
{
    return (uint64_t)slot << 32 | b->handles.generations[slot];
}

static inline double row_velocity(const q_body *A, const q_body *B, const q_row *row, const double d[3])
{
    return q_row_speed(A->v, A->w, B->v, B->w, row, d);
}

/* A body's shape frame at the step's start: from the table made once per
 * step (q_bodies_collide), or computed where that failed for memory. */
static q_xform frame_of(const q_bodies *b, uint32_t slot)
{
    return slot < b->frames.count ? b->frames.data[slot] : q_body_frame(&b->bodies.data[slot]);
}

static bool is_round(const q_collider *s)
{
    return s->kind == Q_COLLIDER_SPHERE || s->kind == Q_COLLIDER_CAPSULE;
}

/* The point of last step's manifold that a new point continues: the same
 * feature id, or else the nearest within `within` in B's frame. Ids alone
 * are not enough: where two equal faces meet, the clipping that names the
 * points flips between corner and edge features with every tiny rotation,
 * and a stack that loses its warm start every other step never settles. */
static const q_contact *previous_point(const q_constraint *prev, const q_contact *p, double within)
{
    const q_contact *best = NULL;
    double best_d2 = within * within;
    for (uint32_t j = 0; j < prev->count; j++) {
        const q_contact *o = &prev->points[j];
        if (o->id == p->id)
            return o;
        double d[3];
        v3_sub(d, o->rb_local, p->rb_local);
        if (v3_dot(d, d) < best_d2) {
            best_d2 = v3_dot(d, d);
            best = o;
        }
    }
    return best;
}

/* Turns a manifold into a constraint: anchors, combined material, and the
 * impulses of the same manifold in the last step. Reads the bodies and last
 * step's constraints only, so constraints are filled on any thread. */
static void fill_constraint(const q_bodies *b, q_constraint *c, uint32_t a, uint32_t slot_b, const q_manifold *m,
                            q_constraint_key key, uint8_t material)
{
    memset(c, 0, sizeof *c);
    c->key = key;
    c->a = a;
    c->b = slot_b;
    c->material = material;
    v3_copy(c->normal, m->normal);
    v3_basis(c->normal, c->t1, c->t2);
    const q_material *ma = q_material_get(a == Q_TERRAIN ? material : b->bodies.data[a].material);
    const q_material *mb = q_material_get(b->bodies.data[slot_b].material);
    double fa = ma ? ma->friction : 0.6, fb = mb ? mb->friction : 0.6;
    c->friction = sqrt(fa * fb);
    c->restitution = fmax(ma ? ma->restitution : 0, mb ? mb->restitution : 0);

    const q_constraint *prev = find_previous(b, &c->key);
    c->was_touching = prev && prev->touching;
    c->round_a = a != Q_TERRAIN && is_round(b->bodies.data[a].shape);
    c->round_b = is_round(b->bodies.data[slot_b].shape);
    const q_body *A = side(b, a), *B = side(b, slot_b);
    c->a_moves = A != &ground;
    c->b_moves = B != &ground;
    const double *xa = a == Q_TERRAIN ? ground.x : b->bodies.data[a].x;
    const double *xb = b->bodies.data[slot_b].x;
    double match_distance = Q_LINEAR_SLOP + 0.01 * b->bodies.data[slot_b].radius;
    c->count = m->count;
    for (uint32_t k = 0; k < m->count; k++) {
        const q_contact_point *mp = &m->points[k];
        q_contact *p = &c->points[k];
        p->id = mp->id;
        v3_sub(p->ra, mp->position, xa);
        v3_sub(p->rb, mp->position, xb);
        quat_rotate_inv(A->q, p->ra, p->ra_local);
        quat_rotate_inv(B->q, p->rb, p->rb_local);
        double d[3];
        v3_sub(d, p->rb, p->ra);
        p->separation = mp->separation - v3_dot(d, c->normal);
        q_row normal; /* its arms; the solver makes the rows (prepare_solver) */
        v3_cross(normal.ja, p->ra, c->normal);
        v3_cross(normal.jb, p->rb, c->normal);
        p->relative_velocity = row_velocity(A, B, &normal, c->normal);
        const q_contact *match = prev ? previous_point(prev, p, match_distance) : NULL;
        if (match) {
            p->normal_impulse = match->normal_impulse;
            p->tangent_impulse[0] = match->tangent_impulse[0];
            p->tangent_impulse[1] = match->tangent_impulse[1];
        }
    }
}

/* A job over items [0, count) in runs of per_job (q_jobs_for's index is
 * the run). */
typedef struct run_job {
    q_bodies *b;
    size_t per_job, count;
} run_job;

static int run_count(const run_job *job) { return (int)((job->count + job->per_job - 1) / job->per_job); }

static void run_range(const run_job *job, int index, size_t *lo, size_t *hi)
{
    *lo = (size_t)index * job->per_job;
    *hi = *lo + job->per_job < job->count ? *lo + job->per_job : job->count;
}

static void collide_pairs(void *ctx, int index)
{
    run_job *job = ctx;
    q_bodies *b = job->b;
    size_t lo, end;
    run_range(job, index, &lo, &end);
    for (size_t i = lo; i < end; i++) {
        const q_body *A = &b->bodies.data[b->pairs.data[i].a], *B = &b->bodies.data[b->pairs.data[i].b];
        q_xform ta = frame_of(b, b->pairs.data[i].a), tb = frame_of(b, b->pairs.data[i].b);
        /* they may close their two motions and one speculative distance */
        b->pair_counts.data[i] = q_collide_shapes(A->shape, &ta, B->shape, &tb, A->margin + B->margin - Q_SPECULATIVE,
                                                  &b->pair_manifolds.data[i * Q_PAIR_MANIFOLDS], Q_PAIR_MANIFOLDS);
    }
}

/* A body's terrain manifolds, merged into contact patches in place (the
 * first n_out entries of out; returns n_out). Manifolds of different
 * chunks that face the same way (within about 18 degrees, same compound
 * part) are one contact patch cut by chunk borders: they are merged and
 * reduced to 4 points again (deepest, then largest area), so a box lying
 * across a border is solved as one face, not two (fewer points, and no
 * bias from two half patches). A patch keeps its first chunk and key; its
 * material is its deepest point's. */
static int merge_terrain(q_terrain_manifold *out, int n)
{
    bool used[Q_TERRAIN_MANIFOLDS] = {false};
    int patches = 0;
    for (int first = 0; first < n; first++) {
        if (used[first])
            continue;
        q_terrain_manifold f = out[first];
        q_contact_point pts[Q_TERRAIN_MANIFOLDS * Q_MANIFOLD_POINTS];
        int np = 0;
        double deepest = INFINITY;
        uint8_t material = f.material;
        for (int k = first; k < n; k++) {
            const q_terrain_manifold *tm = &out[k];
            if (used[k] || (tm->m.key >> 16) != (f.m.key >> 16) || v3_dot(tm->m.normal, f.m.normal) < 0.95)
                continue;
            used[k] = true;
            for (uint32_t j = 0; j < tm->m.count; j++) {
                pts[np] = tm->m.points[j];
                if (pts[np].separation < deepest) {
                    deepest = pts[np].separation;
                    material = tm->material;
                }
                np++;
            }
        }
        /* every entry before `first` has been read: patch `patches` <= first */
        q_terrain_manifold *patch = &out[patches++];
        *patch = f;
        patch->material = material;
        if (np > Q_MANIFOLD_POINTS)
            q_reduce_points(f.m.normal, pts, np, &patch->m);
        else {
            patch->m.count = (uint32_t)np;
            memcpy(patch->m.points, pts, (size_t)np * sizeof *pts);
        }
    }
    return patches;
}

/* ---- terrain contact reuse ----
 *
 * A body that barely moves finds the same terrain contacts step after step.
 * Its patches are queried with a wider margin (Q_KEEP_EXTRA more) and kept;
 * while the farthest any point of the body has moved since (the centre's
 * travel plus the chord its rotation sweeps at the body's radius) leaves
 * that margin at least this step's, every triangle feature closer than this
 * step's margin was within the kept query's, so the kept points stand for a
 * new query: each point's body side moves with the body and its separation
 * changes by that motion along the (terrain-fixed) normal. Points farther
 * than this step's margin are left out of the constraints. Only boxes and
 * hulls keep contacts: round shapes (spheres, capsules) roll, so their
 * contact points do not move with the body (and their query is cheap), and
 * a compound's many parts and patches are queried each step (a wider query
 * would crowd its Q_TERRAIN_MANIFOLDS patches). A terrain edit drops the
 * kept patches of the bodies near it (bodies.c); world files carry them
 * (bodies_io.c), so a loaded world steps like the saved one. */
#define Q_KEEP_EXTRA 0.02 /* metres */

static bool keeps_contacts(const q_collider *s) { return s->kind == Q_COLLIDER_BOX || s->kind == Q_COLLIDER_HULL; }

/* How far any point of the body has moved from the kept pose. */
static double kept_motion(const q_body *o)
{
    double d[3], rel[4], inv[4] = {-o->kept_q[0], -o->kept_q[1], -o->kept_q[2], o->kept_q[3]};
    v3_sub(d, o->x, o->kept_x);
    quat_mul(rel, o->q, inv);
    double s = sqrt(rel[0] * rel[0] + rel[1] * rel[1] + rel[2] * rel[2]); /* sin(angle / 2) */
    return v3_len(d) + 2 * s * o->radius;
}

/* Moves the kept patches' body side from the kept pose to the current one. */
static void move_kept(const q_body *o, const q_terrain_manifold *from, int n, q_terrain_manifold *to)
{
    double rel[4], inv[4] = {-o->kept_q[0], -o->kept_q[1], -o->kept_q[2], o->kept_q[3]};
    quat_mul(rel, o->q, inv);
    for (int k = 0; k < n; k++) {
        to[k] = from[k];
        const double *nrm = to[k].m.normal;
        for (uint32_t j = 0; j < to[k].m.count; j++) {
            q_contact_point *p = &to[k].m.points[j];
            double body[3], r[3], moved[3];
            v3_copy(body, p->position);
            v3_madd(body, nrm, p->separation / 2); /* the body's surface point */
            v3_sub(r, body, o->kept_x);
            quat_rotate(rel, r, moved);
            v3_add(moved, moved, o->x);
            double d[3];
            v3_sub(d, moved, body);
            p->separation += v3_dot(d, nrm);
            v3_copy(p->position, moved);
            v3_madd(p->position, nrm, -p->separation / 2);
        }
    }
}

/* One terrain body's patches: kept ones moved along, or a new query. */
static void terrain_body(q_bodies *b, size_t i)
{
    q_body *o = &b->bodies.data[b->terrain_bodies.data[i]];
    q_terrain_manifold *out = &b->terrain_scratch.data[i * Q_TERRAIN_MANIFOLDS];
    uint32_t kept = b->terrain_reuse.data[i];
    if (kept) {
        int n = b->kept_counts.data[kept - 1];
        move_kept(o, &b->kept_scratch.data[(size_t)(kept - 1) * Q_TERRAIN_MANIFOLDS], n, out);
        b->terrain_counts.data[i] = n;
    } else {
        q_xform t = frame_of(b, b->terrain_bodies.data[i]);
        double margin = o->margin + (keeps_contacts(o->shape) ? Q_KEEP_EXTRA : 0);
        b->terrain_counts.data[i] =
            merge_terrain(out, (int)q_collide_terrain_near(b->tp, o->shape, &t, margin, out, Q_TERRAIN_MANIFOLDS));
        o->kept_reach = keeps_contacts(o->shape) ? margin : -1;
    }
    o->kept_near = INFINITY;
    for (int k = 0; k < b->terrain_counts.data[i]; k++)
        for (uint32_t j = 0; j < out[k].m.count; j++)
            o->kept_near = fmin(o->kept_near, out[k].m.points[j].separation);
    v3_copy(o->kept_x, o->x);
    memcpy(o->kept_q, o->q, sizeof o->q);
}

/* Terrain contacts of a run of bodies on a frozen cache (any thread). */
static void collide_terrain_job(void *ctx, int index)
{
    run_job *job = ctx;
    size_t lo, end;
    run_range(job, index, &lo, &end);
    for (size_t i = lo; i < end; i++)
        terrain_body(job->b, i);
}

#define SWAP_ARRAYS(x, y)                                                                                             \
    do {                                                                                                              \
        __typeof__((x).data) d_ = (x).data;                                                                           \
        size_t n_ = (x).count, c_ = (x).capacity;                                                                     \
        (x).data = (y).data, (x).count = (y).count, (x).capacity = (y).capacity;                                     \
        (y).data = d_, (y).count = n_, (y).capacity = c_;                                                             \
    } while (0)

/* Whether a body's terrain query may have cast the buried fallback's ray
 * (collide_terrain.c), the only read that can reach past the chunks
 * q_collide_terrain_warm built. A shape casts it only when no triangle is
 * near it, and its answer is then nothing (the ray found no surface) or the
 * ray's one patch; with a chunk missing on a frozen cache, the ray may have
 * found a surface further up instead, so a patch of that kind counts too. A
 * compound's parts query apart: any compound may have cast it. */
static bool may_have_cast_ray(const q_body *o, const q_terrain_manifold *patches, int count)
{
    if (count == 0 || o->shape->kind == Q_COLLIDER_COMPOUND)
        return true;
    return count == 1 && patches[0].m.count == 1 && patches[0].m.points[0].id == Q_TERRAIN_ID_BURIED;
}

/* Terrain contact patches of every moving body. The terrain physics cache is not
 * thread-safe, so the chunk meshes the bodies will read are built first
 * (serially), then the cache is frozen and the bodies are collided in
 * parallel, each writing its own slots; if any query still missed a chunk
 * (the buried fallback's ray), the queries that could have missed it are
 * redone serially after thawing. Bodies whose kept patches still hold
 * (contact reuse, above) make no query. */
static void collide_terrain(q_bodies *b)
{
    /* last step's lists become the kept ones */
    SWAP_ARRAYS(b->terrain_scratch, b->kept_scratch);
    SWAP_ARRAYS(b->terrain_counts, b->kept_counts);
    SWAP_ARRAYS(b->terrain_bodies, b->kept_bodies);
    b->terrain_bodies.count = 0;
    for (uint32_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (!q_body_moving(o))
            continue;
        /* A kept point still within this step's margin puts the terrain
         * inside the grown bounds: the broadphase would say so. */
        bool near = o->kept && o->kept_reach >= 0 && o->kept_near + kept_motion(o) <= o->margin;
        if ((near || q_terrain_physics_broadphase(b->tp, o->gmin, o->gmax).solid) &&
            !q_array_push(&b->terrain_bodies, i))
            break;
    }
    size_t n = b->terrain_bodies.count;
    bool ok = n > 0 && q_array_reserve(&b->terrain_scratch, n * Q_TERRAIN_MANIFOLDS) &&
              q_array_reserve(&b->terrain_counts, n) && q_array_reserve(&b->terrain_reuse, n);
    if (!ok)
        n = b->terrain_bodies.count = 0;
    b->terrain_kept = 0;
    uint64_t evictions = b->tp->evictions;
    for (size_t i = 0; i < n; i++) {
        q_body *o = &b->bodies.data[b->terrain_bodies.data[i]];
        uint32_t kept = 0;
        if (o->kept && o->kept_reach >= 0) {
            double reach = o->kept_reach - kept_motion(o);
            if (reach >= o->margin) {
                kept = o->kept;
                o->kept_reach = reach;
            }
        }
        b->terrain_reuse.data[i] = kept;
        b->terrain_kept += kept != 0;
        if (!kept) {
            q_xform t = frame_of(b, b->terrain_bodies.data[i]);
            q_collide_terrain_warm(b->tp, o->shape, &t, o->margin + Q_KEEP_EXTRA);
        }
    }
    for (size_t i = 0; i < b->kept_bodies.count; i++)
        b->bodies.data[b->kept_bodies.data[i]].kept = 0;
    for (size_t i = 0; i < n; i++)
        b->bodies.data[b->terrain_bodies.data[i]].kept = (uint32_t)i + 1;
    if (n == 0)
        return;
    run_job job = {b, 16, n};
    q_tp_take_missed(b->tp);
    q_tp_freeze(b->tp, true);
    q_jobs_for(b->jobs, run_count(&job), collide_terrain_job, &job);
    q_tp_freeze(b->tp, false);
    /* A query that read an uncached chunk missed its triangles, and which
     * query did is not known. Where the warming evicted nothing, every
     * chunk warmed is still cached and only the buried fallback's ray can
     * have missed (rare): the queries that may have cast it are redone
     * (may_have_cast_ray); the others would come out the same. Where the
     * warming evicted chunks (a physics cache smaller than the step's
     * chunks), any query may have missed, and all are redone. */
    bool warmed_all_held = b->tp->evictions == evictions;
    if (q_tp_take_missed(b->tp))
        for (size_t i = 0; i < n; i++) {
            const q_body *o = &b->bodies.data[b->terrain_bodies.data[i]];
            const q_terrain_manifold *got = &b->terrain_scratch.data[i * Q_TERRAIN_MANIFOLDS];
            if (!b->terrain_reuse.data[i] && (!warmed_all_held || may_have_cast_ray(o, got, b->terrain_counts.data[i])))
                terrain_body(b, i);
        }
}

/* A terrain patch's points within this step's margin (the rest were only
 * queried to be kept, see "terrain contact reuse"). */
static uint32_t live_points(const q_terrain_manifold *f, double margin, q_manifold *m)
{
    *m = f->m;
    m->count = 0;
    for (uint32_t j = 0; j < f->m.count; j++)
        if (f->m.points[j].separation <= margin)
            m->points[m->count++] = f->m.points[j];
    return m->count;
}

/* Constraints from a run of manifold sources (terrain bodies first, then
 * body pairs), each writing its own precomputed slots (any thread). */
static void fill_constraints(void *ctx, int index)
{
    run_job *job = ctx;
    q_bodies *b = job->b;
    size_t nt = b->terrain_bodies.count, lo, end;
    run_range(job, index, &lo, &end);
    for (size_t i = lo; i < end; i++) {
        q_constraint *c = &b->constraints.data[b->constraint_first.data[i]];
        if (i < nt) {
            uint32_t slot = b->terrain_bodies.data[i];
            const q_terrain_manifold *out = &b->terrain_scratch.data[i * Q_TERRAIN_MANIFOLDS];
            double margin = b->bodies.data[slot].margin;
            for (int k = 0; k < b->terrain_counts.data[i]; k++) {
                const q_terrain_manifold *f = &out[k];
                q_manifold m;
                if (live_points(f, margin, &m) == 0)
                    continue;
                q_constraint_key key = {body_key(b, slot), q_phys_key(f->cx, f->cy, f->cz), f->m.key};
                fill_constraint(b, c++, Q_TERRAIN, slot, &m, key, f->material);
            }
        } else {
            size_t pi = i - nt;
            uint32_t a = b->pairs.data[pi].a, s = b->pairs.data[pi].b;
            for (int k = 0; k < b->pair_counts.data[pi]; k++) {
                const q_manifold *m = &b->pair_manifolds.data[pi * Q_PAIR_MANIFOLDS + (size_t)k];
                if (m->count == 0)
                    continue;
                q_constraint_key key = {body_key(b, a), body_key(b, s), m->key};
                fill_constraint(b, c++, a, s, m, key, b->bodies.data[s].material);
            }
        }
    }
}

/* Patches with live points among a terrain body's first n. */
static uint32_t terrain_constraint_count(const q_terrain_manifold *out, int n, double margin)
{
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        q_manifold m;
        k += live_points(&out[i], margin, &m) > 0;
    }
    return k;
}

void q_bodies_collide(q_bodies *b)
{
    /* Last step's constraints, indexed by key, for warm starting. */
    q_constraint *swap = b->previous.data;
    size_t swap_cap = b->previous.capacity;
    b->previous.data = b->constraints.data;
    b->previous.count = b->constraints.count;
    b->previous.capacity = b->constraints.capacity;
    b->constraints.data = swap;
    b->constraints.capacity = swap_cap;
    b->constraints.count = 0;
    index_previous(b);
    b->frames.count = 0;
    if (q_array_reserve(&b->frames, b->bodies.count)) {
        for (uint32_t i = 0; i < b->bodies.count; i++)
            b->frames.data[i] = q_body_frame(&b->bodies.data[i]);
        b->frames.count = b->bodies.count;
    }

    collide_terrain(b);
    size_t np = b->pairs.count;
    if (np > 0) {
        if (!q_array_reserve(&b->pair_manifolds, np * Q_PAIR_MANIFOLDS) || !q_array_reserve(&b->pair_counts, np))
            np = 0; /* out of memory: no body pairs this step */
        run_job job = {b, 32, np};
        q_jobs_for(b->jobs, run_count(&job), collide_pairs, &job);
    }
    /* Where each source's constraints go: terrain bodies in slot order,
     * then pairs in sweep order, whatever the thread count. */
    size_t nt = b->terrain_bodies.count, sources = nt + np, total = 0;
    b->terrain_constraints = 0;
    if (sources == 0 || !q_array_reserve(&b->constraint_first, sources))
        return;
    for (size_t i = 0; i < sources; i++) {
        b->constraint_first.data[i] = (uint32_t)total;
        if (i < nt) {
            total += terrain_constraint_count(&b->terrain_scratch.data[i * Q_TERRAIN_MANIFOLDS],
                                              b->terrain_counts.data[i],
                                              b->bodies.data[b->terrain_bodies.data[i]].margin);
            b->terrain_constraints += (size_t)b->terrain_counts.data[i];
        } else {
            for (int k = 0; k < b->pair_counts.data[i - nt]; k++)
                total += b->pair_manifolds.data[(i - nt) * Q_PAIR_MANIFOLDS + (size_t)k].count > 0;
        }
    }
    if (!q_array_reserve(&b->constraints, total))
        return; /* out of memory: no contacts this step */
    b->constraints.count = total;
    run_job job = {b, 16, sources};
    q_jobs_for(b->jobs, run_count(&job), fill_constraints, &job);
}
