/* Bodies in world files (bodies.h: q_bodies_write, q_bodies_read).
 *
 * Record layout (little-endian; the world file wraps it with a length and a
 * digest, world/save.c):
 *   version u32 (1), next_island u32
 *   handle pool: count u32, free_count u32, generations count x u32,
 *                free slots free_count x u32
 *   bodies u32, then per body in slot order:
 *     slot u32, flags u8 (1 static, 2 sleeping, 4 on terrain), material u8,
 *     name_len u16, name bytes, shape (below),
 *     x 3, q 4, com 3, v 3, w 3, force 3, torque 3 (f64),
 *     mass, inv_mass f64, inv_inertia_local 9 f64, radius, volume,
 *     sleep_time f64, island u32, unbreakable_steps u32, generation u8
 *   constraints u32 (last step's, which warm-start the next), per one:
 *     key a u64, b u64, c u32, slot a u32, slot b u32, normal 3 f64,
 *     touching u8, count u8, per point: id u32, ra_local 3, rb_local 3,
 *     normal_impulse, tangent_impulse 2 (f64)
 *   (version 2) kept terrain contacts (contacts.c), last step's terrain
 *     bodies u32, per one: slot u32, kept_x 3, kept_q 4, kept_reach (f64),
 *     patches u8, per patch: cx, cy, cz u32 (two's complement), material
 *     u8, normal 3 f64, key u32, count u8, per point: position 3,
 *     separation (f64), id u32
 *   (version 2) edit effects: what the next step's edit check does for
 *     terrain changes made since the last step began (a loaded set never
 *     sees those as changes): all u8 (every body wakes and drops its kept
 *     contacts; then no kept contacts are written), sleepers to wake u32,
 *     their slots u32 each; bodies whose kept contacts it drops are left
 *     out of the kept list
 *   shape: kind u8, then sphere radius; box half 3; capsule radius,
 *     half_height; hull vertex_count, face_count, face_vertex_count,
 *     edge_count u32 and its arrays as held (collider.h q_hull_data);
 *     compound part_count u32, per part p 3, q 4 (f64) and its shape.
 * Doubles are stored as their bits, hulls as their arrays, so a world read
 * back steps exactly as the saved one would have. Version 1 records (no
 * kept contacts) are read too: their bodies query the terrain afresh.
 */
#include "core/alloc.h"
#include "core/bytes.h"
#include "core/vec3.h"
#include "geom/quickhull.h"
#include "physics/bodies_internal.h"
#include "physics/physics_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RECORD_VERSION 2

/* ---- shapes ---- */

static void write_shape(q_buf *o, const q_collider *s)
{
    q_buf_u8(o, (uint8_t)s->kind);
    switch (s->kind) {
    case Q_COLLIDER_SPHERE:
        q_buf_f64(o, s->radius);
        break;
    case Q_COLLIDER_BOX:
        q_buf_f64s(o, s->half, 3);
        break;
    case Q_COLLIDER_CAPSULE:
        q_buf_f64(o, s->radius);
        q_buf_f64(o, s->half_height);
        break;
    case Q_COLLIDER_HULL: {
        const q_hull_data *h = s->hull;
        uint32_t nfv = h->face_start[h->face_count];
        q_buf_u32(o, h->vertex_count);
        q_buf_u32(o, h->face_count);
        q_buf_u32(o, nfv);
        q_buf_u32(o, h->edge_count);
        q_buf_f64s(o, h->vertices, 3 * (size_t)h->vertex_count);
        q_buf_f64s(o, h->planes, 4 * (size_t)h->face_count);
        for (uint32_t i = 0; i <= h->face_count; i++)
            q_buf_u32(o, h->face_start[i]);
        for (uint32_t i = 0; i < nfv; i++)
            q_buf_u32(o, h->face_vertices[i]);
        for (uint32_t i = 0; i < 2 * h->edge_count; i++)
            q_buf_u32(o, h->edges[i]);
        for (uint32_t i = 0; i < 2 * h->edge_count; i++)
            q_buf_u32(o, h->edge_faces[i]);
        break;
    }
    case Q_COLLIDER_COMPOUND:
        q_buf_u32(o, s->part_count);
        for (uint32_t i = 0; i < s->part_count; i++) {
            q_buf_f64s(o, s->parts[i].local.p, 3);
            q_buf_f64s(o, s->parts[i].local.q, 4);
            write_shape(o, s->parts[i].shape);
        }
        break;
    }
}

static bool read_u32s(q_reader *r, uint32_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = q_read_u32(r);
    return !r->failed;
}

static q_collider *read_hull(q_reader *r, char *err, size_t errlen)
{
    q_hull_data d;
    memset(&d, 0, sizeof d);
    d.vertex_count = q_read_u32(r);
    d.face_count = q_read_u32(r);
    uint32_t nfv = q_read_u32(r);
    d.edge_count = q_read_u32(r);
    /* Every count must fit in what is left of the record before anything is
     * allocated for it. */
    size_t left = r->size - r->at;
    size_t need = (size_t)d.vertex_count * 24 + (size_t)d.face_count * 36 + 4 + (size_t)nfv * 4 +
                  (size_t)d.edge_count * 16;
    if (r->failed || d.vertex_count > Q_HULL_MAX_POINTS || d.face_count > 2 * Q_HULL_MAX_POINTS ||
        nfv > 6 * Q_HULL_MAX_POINTS || d.edge_count > 3 * Q_HULL_MAX_POINTS || need > left) {
        snprintf(err, errlen, "bad hull record");
        return NULL;
    }
    size_t dbytes = ((size_t)d.vertex_count * 3 + (size_t)d.face_count * 4) * sizeof(double);
    size_t ubytes = ((size_t)d.face_count + 1 + nfv + 4 * (size_t)d.edge_count) * sizeof(uint32_t);
    double *dv = q_alloc(dbytes ? dbytes : 1);
    uint32_t *uv = q_alloc(ubytes);
    q_collider *s = NULL;
    if (!dv || !uv) {
        snprintf(err, errlen, "out of memory");
    } else {
        d.vertices = dv;
        d.planes = dv + 3 * (size_t)d.vertex_count;
        d.face_start = uv;
        d.face_vertices = uv + d.face_count + 1;
        d.edges = d.face_vertices + nfv;
        d.edge_faces = d.edges + 2 * (size_t)d.edge_count;
        q_read_f64s(r, d.vertices, 3 * (size_t)d.vertex_count);
        q_read_f64s(r, d.planes, 4 * (size_t)d.face_count);
        bool ok = read_u32s(r, uv, ubytes / sizeof(uint32_t));
        if (ok && d.face_start[d.face_count] == nfv)
            s = q_collider_hull_data(&d, err, errlen);
        else
            snprintf(err, errlen, "bad hull record");
    }
    q_free(dv, dbytes ? dbytes : 1);
    q_free(uv, ubytes);
    return s;
}

static q_collider *read_shape(q_reader *r, bool in_compound, char *err, size_t errlen)
{
    uint8_t kind = q_read_u8(r);
    double v[3];
    switch (kind) {
    case Q_COLLIDER_SPHERE:
        return q_collider_sphere(q_read_f64(r), err, errlen);
    case Q_COLLIDER_BOX:
        q_read_f64s(r, v, 3);
        return q_collider_box(v, err, errlen);
    case Q_COLLIDER_CAPSULE:
        q_read_f64s(r, v, 2);
        return q_collider_capsule(v[0], v[1], err, errlen);
    case Q_COLLIDER_HULL:
        return read_hull(r, err, errlen);
    case Q_COLLIDER_COMPOUND:
        break;
    default:
        snprintf(err, errlen, "unknown shape kind %u", kind);
        return NULL;
    }
    uint32_t n = q_read_u32(r);
    if (in_compound || r->failed || n == 0 || n > 65535 || n > (r->size - r->at) / 57) {
        snprintf(err, errlen, "bad compound record");
        return NULL;
    }
    q_collider_part *parts = q_calloc(n, sizeof *parts);
    if (!parts) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint32_t got = 0;
    for (; got < n; got++) {
        q_read_f64s(r, parts[got].local.p, 3);
        q_read_f64s(r, parts[got].local.q, 4);
        parts[got].shape = read_shape(r, true, err, errlen);
        if (!parts[got].shape)
            break;
    }
    q_collider *s = NULL;
    if (got == n) {
        s = q_collider_compound(parts, n, err, errlen);
    } else {
        for (uint32_t i = 0; i < got; i++)
            q_collider_free(parts[i].shape);
    }
    q_free(parts, n * sizeof *parts);
    return s;
}

/* ---- the set ---- */

static void write_body(q_buf *o, uint32_t slot, const q_body *body)
{
    q_buf_u32(o, slot);
    q_buf_u8(o, (uint8_t)((body->is_static ? 1 : 0) | (body->sleeping ? 2 : 0) | (body->touching_terrain ? 4 : 0)));
    q_buf_u8(o, body->material);
    size_t len = body->name ? strlen(body->name) : 0;
    q_buf_u16(o, (uint16_t)len);
    q_buf_put(o, body->name, len);
    write_shape(o, body->shape);
    q_buf_f64s(o, body->x, 3);
    q_buf_f64s(o, body->q, 4);
    q_buf_f64s(o, body->com, 3);
    q_buf_f64s(o, body->v, 3);
    q_buf_f64s(o, body->w, 3);
    q_buf_f64s(o, body->force, 3);
    q_buf_f64s(o, body->torque, 3);
    q_buf_f64(o, body->mass);
    q_buf_f64(o, body->inv_mass);
    q_buf_f64s(o, body->inv_inertia_local, 9);
    q_buf_f64(o, body->radius);
    q_buf_f64(o, body->volume);
    q_buf_f64(o, body->sleep_time);
    q_buf_u32(o, body->island);
    q_buf_u32(o, body->unbreakable_steps);
    q_buf_u8(o, body->generation);
}

static void write_constraint(q_buf *o, const q_constraint *c)
{
    q_buf_u64(o, c->key.a);
    q_buf_u64(o, c->key.b);
    q_buf_u32(o, c->key.c);
    q_buf_u32(o, c->a);
    q_buf_u32(o, c->b);
    q_buf_f64s(o, c->normal, 3);
    q_buf_u8(o, c->touching);
    q_buf_u8(o, (uint8_t)c->count);
    for (uint32_t k = 0; k < c->count; k++) {
        const q_contact *p = &c->points[k];
        q_buf_u32(o, p->id);
        q_buf_f64s(o, p->ra_local, 3);
        q_buf_f64s(o, p->rb_local, 3);
        q_buf_f64(o, p->normal_impulse);
        q_buf_f64s(o, p->tangent_impulse, 2);
    }
}

/* Whether last step's terrain body i keeps its patches into the next step:
 * not destroyed (nor a new body in its slot), and not near a terrain
 * change the next step's edit check drops them for (`effects`, from
 * q_bodies_edit_effects; NULL: it drops all). */
static bool kept_for_next(const q_bodies *b, size_t i, const uint8_t *effects)
{
    uint32_t slot = b->terrain_bodies.data[i];
    const q_body *body = &b->bodies.data[slot];
    return effects && !(effects[slot] & Q_EDIT_DROP) && body->alive && body->kept == i + 1;
}

static void write_patch(q_buf *o, const q_terrain_manifold *f)
{
    q_buf_u32(o, (uint32_t)f->cx);
    q_buf_u32(o, (uint32_t)f->cy);
    q_buf_u32(o, (uint32_t)f->cz);
    q_buf_u8(o, f->material);
    q_buf_f64s(o, f->m.normal, 3);
    q_buf_u32(o, f->m.key);
    q_buf_u8(o, (uint8_t)f->m.count);
    for (uint32_t j = 0; j < f->m.count; j++) {
        q_buf_f64s(o, f->m.points[j].position, 3);
        q_buf_f64(o, f->m.points[j].separation);
        q_buf_u32(o, f->m.points[j].id);
    }
}

static void write_kept(q_buf *o, const q_bodies *b, const uint8_t *effects)
{
    uint32_t n = 0;
    for (size_t i = 0; i < b->terrain_bodies.count; i++)
        n += kept_for_next(b, i, effects);
    q_buf_u32(o, n);
    for (size_t i = 0; i < b->terrain_bodies.count; i++) {
        if (!kept_for_next(b, i, effects))
            continue;
        const q_body *body = &b->bodies.data[b->terrain_bodies.data[i]];
        q_buf_u32(o, b->terrain_bodies.data[i]);
        q_buf_f64s(o, body->kept_x, 3);
        q_buf_f64s(o, body->kept_q, 4);
        q_buf_f64(o, body->kept_reach);
        int patches = b->terrain_counts.data[i];
        q_buf_u8(o, (uint8_t)patches);
        for (int k = 0; k < patches; k++)
            write_patch(o, &b->terrain_scratch.data[i * Q_TERRAIN_MANIFOLDS + (size_t)k]);
    }
}

/* The sleepers the next step's edit check wakes (all: every body). */
static void write_edit_effects(q_buf *o, const q_bodies *b, const uint8_t *effects)
{
    q_buf_u8(o, effects == NULL);
    uint32_t n = 0;
    for (uint32_t i = 0; effects && i < b->bodies.count; i++)
        n += (effects[i] & Q_EDIT_WAKE) != 0;
    q_buf_u32(o, n);
    for (uint32_t i = 0; effects && i < b->bodies.count; i++)
        if (effects[i] & Q_EDIT_WAKE)
            q_buf_u32(o, i);
}

bool q_bodies_write(const q_bodies *b, q_buf *o)
{
    q_buf_u32(o, RECORD_VERSION);
    q_buf_u32(o, b->next_island);
    const q_handle_pool *pool = &b->handles;
    q_buf_u32(o, pool->count);
    q_buf_u32(o, pool->free_count);
    for (uint32_t i = 0; i < pool->count; i++)
        q_buf_u32(o, pool->generations[i]);
    for (uint32_t i = 0; i < pool->free_count; i++)
        q_buf_u32(o, pool->free_slots[i]);
    q_buf_u32(o, (uint32_t)b->live);
    for (uint32_t i = 0; i < b->bodies.count; i++)
        if (b->bodies.data[i].alive)
            write_body(o, i, &b->bodies.data[i]);
    q_buf_u32(o, (uint32_t)b->constraints.count);
    for (size_t i = 0; i < b->constraints.count; i++)
        write_constraint(o, &b->constraints.data[i]);
    /* what the next step does for terrain changes made before this */
    uint8_t *effects = q_alloc(b->bodies.count + 1);
    if (!effects)
        return false;
    bool reaches = q_bodies_edit_effects(b, effects);
    write_kept(o, b, reaches ? effects : NULL);
    write_edit_effects(o, b, reaches ? effects : NULL);
    q_free(effects, b->bodies.count + 1);
    return !o->failed;
}

static bool read_pool(q_bodies *b, q_reader *r, char *err, size_t errlen)
{
    uint32_t count = q_read_u32(r), free_count = q_read_u32(r);
    if (r->failed || count > Q_BODIES_MAX * 4u || free_count > count ||
        (size_t)count + free_count > (r->size - r->at) / 4) {
        snprintf(err, errlen, "bad handle table");
        return false;
    }
    q_handle_pool *pool = &b->handles;
    uint32_t cap = 16;
    while (cap < count)
        cap *= 2;
    pool->generations = q_calloc(cap, sizeof *pool->generations);
    pool->free_slots = q_calloc(cap, sizeof *pool->free_slots);
    pool->capacity = cap;
    if (!pool->generations || !pool->free_slots) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    pool->count = count;
    pool->free_count = free_count;
    read_u32s(r, pool->generations, count);
    read_u32s(r, pool->free_slots, free_count);
    for (uint32_t i = 0; i < free_count; i++)
        if (pool->free_slots[i] >= count || (pool->generations[pool->free_slots[i]] & 1)) {
            snprintf(err, errlen, "bad handle table");
            return false;
        }
    return !r->failed && q_array_reserve(&b->bodies, count);
}

static bool read_body(q_bodies *b, q_reader *r, const uint8_t *remap, int material_count, char *err,
                      size_t errlen)
{
    uint32_t slot = q_read_u32(r);
    uint8_t flags = q_read_u8(r), material = q_read_u8(r);
    uint16_t len = q_read_u16(r);
    const unsigned char *name = q_read_take(r, len);
    if (r->failed || slot >= b->handles.count || !(b->handles.generations[slot] & 1) ||
        (slot < b->bodies.count && b->bodies.data[slot].alive) || material >= material_count) {
        snprintf(err, errlen, "bad body record");
        return false;
    }
    q_body body;
    memset(&body, 0, sizeof body);
    body.shape = read_shape(r, false, err, errlen);
    if (!body.shape)
        return false;
    body.alive = true;
    body.is_static = flags & 1;
    body.sleeping = (flags & 2) != 0;
    body.touching_terrain = (flags & 4) != 0;
    body.material = remap[material];
    q_read_f64s(r, body.x, 3);
    q_read_f64s(r, body.q, 4);
    q_read_f64s(r, body.com, 3);
    q_read_f64s(r, body.v, 3);
    q_read_f64s(r, body.w, 3);
    q_read_f64s(r, body.force, 3);
    q_read_f64s(r, body.torque, 3);
    body.mass = q_read_f64(r);
    body.inv_mass = q_read_f64(r);
    q_read_f64s(r, body.inv_inertia_local, 9);
    body.radius = q_read_f64(r);
    body.volume = q_read_f64(r);
    body.sleep_time = q_read_f64(r);
    body.island = q_read_u32(r);
    body.unbreakable_steps = q_read_u32(r);
    body.generation = q_read_u8(r);
    double state[3 + 4 + 3 + 3 + 3 + 3 + 3 + 2 + 9 + 3];
    size_t k = 0;
    memcpy(state + k, body.x, 3 * sizeof(double)), k += 3;
    memcpy(state + k, body.q, 4 * sizeof(double)), k += 4;
    memcpy(state + k, body.com, 3 * sizeof(double)), k += 3;
    memcpy(state + k, body.v, 3 * sizeof(double)), k += 3;
    memcpy(state + k, body.w, 3 * sizeof(double)), k += 3;
    memcpy(state + k, body.force, 3 * sizeof(double)), k += 3;
    memcpy(state + k, body.torque, 3 * sizeof(double)), k += 3;
    state[k++] = body.mass, state[k++] = body.inv_mass;
    memcpy(state + k, body.inv_inertia_local, 9 * sizeof(double)), k += 9;
    state[k++] = body.radius, state[k++] = body.volume, state[k++] = body.sleep_time;
    bool finite = true;
    for (size_t i = 0; i < k; i++)
        finite = finite && isfinite(state[i]);
    double qn = body.q[0] * body.q[0] + body.q[1] * body.q[1] + body.q[2] * body.q[2] + body.q[3] * body.q[3];
    if (r->failed || !finite || !(body.volume > 0) || !(fabs(qn - 1) < 1e-6)) {
        snprintf(err, errlen, "bad body record");
        q_body_free(&body);
        return false;
    }
    if (len) {
        body.name = q_alloc((size_t)len + 1);
        if (body.name) {
            memcpy(body.name, name, len);
            body.name[len] = '\0';
        }
    }
    if ((len && !body.name) || !q_body_make_samples(&body)) {
        snprintf(err, errlen, "out of memory");
        q_body_free(&body);
        return false;
    }
    q_body_update(&body);
    v3_copy(body.x0, body.x);
    memcpy(body.q0, body.q, sizeof body.q0);
    while (b->bodies.count <= slot)
        memset(&b->bodies.data[b->bodies.count++], 0, sizeof(q_body));
    b->bodies.data[slot] = body;
    b->live++;
    if (!body.is_static && !body.sleeping)
        b->awake++;
    return true;
}

static bool read_constraint(q_bodies *b, q_reader *r, char *err, size_t errlen)
{
    q_constraint c;
    memset(&c, 0, sizeof c);
    c.key.a = q_read_u64(r);
    c.key.b = q_read_u64(r);
    c.key.c = q_read_u32(r);
    c.a = q_read_u32(r);
    c.b = q_read_u32(r);
    q_read_f64s(r, c.normal, 3);
    c.touching = q_read_u8(r) != 0;
    c.count = q_read_u8(r);
    bool ok = !r->failed && c.count <= Q_MANIFOLD_POINTS && c.b < b->bodies.count && b->bodies.data[c.b].alive &&
              (c.a == Q_TERRAIN || (c.a < b->bodies.count && b->bodies.data[c.a].alive)) && v3_finite(c.normal);
    for (uint32_t k = 0; ok && k < c.count; k++) {
        q_contact *p = &c.points[k];
        p->id = q_read_u32(r);
        q_read_f64s(r, p->ra_local, 3);
        q_read_f64s(r, p->rb_local, 3);
        p->normal_impulse = q_read_f64(r);
        q_read_f64s(r, p->tangent_impulse, 2);
        ok = !r->failed && v3_finite(p->ra_local) && v3_finite(p->rb_local) && isfinite(p->normal_impulse) &&
             isfinite(p->tangent_impulse[0]) && isfinite(p->tangent_impulse[1]);
        if (ok) {
            /* anchors as the debug view reads them (step start = now) */
            quat_rotate(b->bodies.data[c.b].q, p->rb_local, p->rb);
            if (c.a != Q_TERRAIN)
                quat_rotate(b->bodies.data[c.a].q, p->ra_local, p->ra);
            else
                v3_copy(p->ra, p->ra_local);
        }
    }
    if (!ok) {
        snprintf(err, errlen, "bad contact record");
        return false;
    }
    v3_basis(c.normal, c.t1, c.t2);
    return q_array_push(&b->constraints, c) || (snprintf(err, errlen, "out of memory"), false);
}

static bool read_patch(q_reader *r, const uint8_t *remap, int material_count, q_terrain_manifold *f)
{
    memset(f, 0, sizeof *f);
    f->cx = (int32_t)q_read_u32(r);
    f->cy = (int32_t)q_read_u32(r);
    f->cz = (int32_t)q_read_u32(r);
    f->material = q_read_u8(r);
    q_read_f64s(r, f->m.normal, 3);
    f->m.key = q_read_u32(r);
    f->m.count = q_read_u8(r);
    bool ok = !r->failed && f->m.count <= Q_MANIFOLD_POINTS && v3_finite(f->m.normal) && f->material < material_count;
    if (ok)
        f->material = remap[f->material];
    for (uint32_t j = 0; ok && j < f->m.count; j++) {
        q_contact_point *p = &f->m.points[j];
        q_read_f64s(r, p->position, 3);
        p->separation = q_read_f64(r);
        p->id = q_read_u32(r);
        ok = !r->failed && v3_finite(p->position) && isfinite(p->separation);
    }
    return ok;
}

/* Last step's terrain bodies and their patches, which the next step keeps
 * or queries again (contacts.c). */
static bool read_kept(q_bodies *b, q_reader *r, const uint8_t *remap, int material_count, char *err, size_t errlen)
{
    uint32_t n = q_read_u32(r);
    if (r->failed || n > b->live || !q_array_reserve(&b->terrain_bodies, n) ||
        !q_array_reserve(&b->terrain_counts, n) ||
        !q_array_reserve(&b->terrain_scratch, (size_t)n * Q_TERRAIN_MANIFOLDS)) {
        snprintf(err, errlen, r->failed || n > b->live ? "bad kept contacts record" : "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = q_read_u32(r);
        bool ok = !r->failed && slot < b->bodies.count && b->bodies.data[slot].alive &&
                  !b->bodies.data[slot].is_static && !b->bodies.data[slot].kept;
        q_body *body = ok ? &b->bodies.data[slot] : NULL;
        double x[3], q[4], reach;
        q_read_f64s(r, x, 3);
        q_read_f64s(r, q, 4);
        reach = q_read_f64(r);
        int patches = q_read_u8(r);
        ok = ok && !r->failed && v3_finite(x) && isfinite(q[0]) && isfinite(q[1]) && isfinite(q[2]) &&
             isfinite(q[3]) && isfinite(reach) && patches <= Q_TERRAIN_MANIFOLDS;
        q_terrain_manifold *out = &b->terrain_scratch.data[(size_t)i * Q_TERRAIN_MANIFOLDS];
        for (int k = 0; ok && k < patches; k++)
            ok = read_patch(r, remap, material_count, &out[k]);
        if (!ok) {
            snprintf(err, errlen, "bad kept contacts record");
            return false;
        }
        v3_copy(body->kept_x, x);
        memcpy(body->kept_q, q, sizeof q);
        body->kept_reach = reach;
        body->kept_near = INFINITY; /* as contacts.c derives it */
        for (int k = 0; k < patches; k++) {
            const q_manifold *m = &out[k].m;
            for (uint32_t j = 0; j < m->count; j++)
                body->kept_near = fmin(body->kept_near, m->points[j].separation);
        }
        body->kept = i + 1;
        b->terrain_bodies.data[i] = slot;
        b->terrain_counts.data[i] = patches;
    }
    b->terrain_bodies.count = b->terrain_counts.count = n;
    return true;
}

static bool read_edit_effects(q_bodies *b, q_reader *r, char *err, size_t errlen)
{
    b->wake_all_next = q_read_u8(r) != 0;
    uint32_t n = q_read_u32(r);
    if (r->failed || n > b->live || !q_array_reserve(&b->wake_next, n)) {
        snprintf(err, errlen, r->failed || n > b->live ? "bad edit effects record" : "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = q_read_u32(r);
        if (r->failed || slot >= b->bodies.count || !b->bodies.data[slot].alive) {
            snprintf(err, errlen, "bad edit effects record");
            return false;
        }
        b->wake_next.data[i] = slot;
    }
    b->wake_next.count = n;
    return true;
}

/* Back to an empty set after a failed read. */
static void clear(q_bodies *b)
{
    for (size_t i = 0; i < b->bodies.count; i++)
        if (b->bodies.data[i].alive)
            q_body_free(&b->bodies.data[i]);
    b->bodies.count = 0;
    b->constraints.count = 0;
    b->terrain_bodies.count = b->terrain_counts.count = 0;
    b->wake_next.count = 0;
    b->wake_all_next = false;
    b->live = b->awake = 0;
    q_handle_pool_free(&b->handles);
}

bool q_bodies_read(q_bodies *b, q_reader *r, const uint8_t *remap, int material_count, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (b->live || b->handles.count) {
        snprintf(err, errlen, "bodies can only be read into an empty set");
        return false;
    }
    uint32_t version = q_read_u32(r);
    b->next_island = q_read_u32(r);
    if (r->failed || version < 1 || version > RECORD_VERSION) {
        snprintf(err, errlen, "bodies record version %u; this build reads 1 to %d", version, RECORD_VERSION);
        return false;
    }
    bool ok = read_pool(b, r, err, errlen);
    uint32_t n = ok ? q_read_u32(r) : 0;
    ok = ok && !r->failed && n <= b->handles.count;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = read_body(b, r, remap, material_count, err, errlen);
    /* every live handle has its body */
    for (uint32_t i = 0; ok && i < b->handles.count; i++)
        ok = ((b->handles.generations[i] & 1) != 0) == (i < b->bodies.count && b->bodies.data[i].alive);
    b->handles.live = (uint32_t)b->live;
    uint32_t nc = ok ? q_read_u32(r) : 0;
    ok = ok && !r->failed && nc <= (r->size - r->at) / 60;
    for (uint32_t i = 0; ok && i < nc; i++)
        ok = read_constraint(b, r, err, errlen);
    if (ok && version >= 2)
        ok = read_kept(b, r, remap, material_count, err, errlen) && read_edit_effects(b, r, err, errlen);
    if (!ok) {
        if (!err[0] || r->failed)
            snprintf(err, errlen, "bad bodies record");
        clear(b);
        return false;
    }
    b->terrain_version = q_terrain_version(b->tp->terrain);
    return true;
}
