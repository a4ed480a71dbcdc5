/* Baked terrain lighting: see bake.h.
 *
 * Sample patterns. Both ray sets are Vogel spirals ("A better way to
 * construct the sunflower head", 1979): point i of n sits at radius
 * sqrt((i + 1/2) / n) and angle i times the golden angle on the unit disk,
 * which covers the disk evenly for any n. The sun rays go through that disk
 * scaled to the cone's radius at unit distance; the hemisphere rays lift it
 * onto the hemisphere (Malley's method: a uniform disk point projected up
 * is a cosine-weighted direction), so the fraction of escaping rays
 * estimates the cosine-weighted visibility that an ambient term wants. The
 * spiral turns by an angle hashed from the vertex position's bits: no
 * random numbers, and a vertex shared by two chunk meshes (same bits) gets
 * the same rays in both.
 *
 * The normal's tangent frame is the branchless one of Duff et al.,
 * "Building an Orthonormal Basis, Revisited" (JCGT 2017).
 */
#include "geom/bake.h"

#include "core/alloc.h"
#include "geom/gridsort.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GOLDEN_ANGLE 2.39996322972865332f /* pi (3 - sqrt 5) */
#define TWO_PI 6.28318530717958648f

struct q_bake_scene {
    q_bake_def def;
    float sun[3];      /* unit */
    float su[3], sv[3]; /* unit, perpendicular to sun and to each other */
    q_gridsort *along_sun; /* sort axis: the sun rays' direction */
    q_gridsort *along_y;   /* sort axis: up, for the hemisphere rays */
};

static q_status fail(char *err, size_t errlen, q_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static q_status fail(char *err, size_t errlen, q_status s, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

static void normalize3(float v[3])
{
    float len = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int k = 0; k < 3; k++)
        v[k] /= len;
}

/* Duff et al. 2017, listing 3: t and b with (t, b, n) orthonormal. */
static void tangent_frame(const float n[3], float t[3], float b[3])
{
    float sign = copysignf(1.0f, n[2]);
    float a = -1.0f / (sign + n[2]);
    float c = n[0] * n[1] * a;
    t[0] = 1.0f + sign * n[0] * n[0] * a;
    t[1] = sign * c;
    t[2] = -sign * n[0];
    b[0] = c;
    b[1] = sign + n[1] * n[1] * a;
    b[2] = -n[1];
}

q_bake_def q_default_bake_def(const float sun[3], double voxel_size)
{
    float v = (float)voxel_size;
    return (q_bake_def){
        .sun = {sun[0], sun[1], sun[2]},
        .sun_rays = 6,
        .sun_cone = 0.035f,
        .sun_distance = 48.0f * v,
        .ao_rays = 8,
        .ao_radius = 4.0f * v,
        .offset = 0.05f * v,
    };
}

q_status q_bake_def_check(const q_bake_def *d, char *err, size_t errlen)
{
    float len2 = d->sun[0] * d->sun[0] + d->sun[1] * d->sun[1] + d->sun[2] * d->sun[2];
    if (!(isfinite(len2) && len2 > 0))
        return fail(err, errlen, Q_ERR_ARGUMENT, "sun must be a finite non-zero direction");
    if (d->sun_rays < 1 || d->sun_rays > Q_BAKE_MAX_SUN_RAYS)
        return fail(err, errlen, Q_ERR_ARGUMENT, "sun_rays must be in 1..%d, got %d", Q_BAKE_MAX_SUN_RAYS,
                    d->sun_rays);
    if (!(d->sun_cone >= 0 && d->sun_cone <= Q_BAKE_MAX_SUN_CONE))
        return fail(err, errlen, Q_ERR_ARGUMENT, "sun_cone must be in [0, %g] radians, got %g",
                    (double)Q_BAKE_MAX_SUN_CONE, (double)d->sun_cone);
    if (!(d->sun_distance > 0 && isfinite(d->sun_distance)))
        return fail(err, errlen, Q_ERR_ARGUMENT, "sun_distance must be > 0, got %g", (double)d->sun_distance);
    if (d->ao_rays < 0 || d->ao_rays > Q_BAKE_MAX_AO_RAYS)
        return fail(err, errlen, Q_ERR_ARGUMENT, "ao_rays must be in 0..%d, got %d", Q_BAKE_MAX_AO_RAYS,
                    d->ao_rays);
    if (!(d->ao_radius > 0 && isfinite(d->ao_radius)))
        return fail(err, errlen, Q_ERR_ARGUMENT, "ao_radius must be > 0, got %g", (double)d->ao_radius);
    if (!(d->offset >= 0 && isfinite(d->offset)))
        return fail(err, errlen, Q_ERR_ARGUMENT, "offset must be >= 0, got %g", (double)d->offset);
    return Q_OK;
}

/* The boxes (offsets from a vertex, metres) holding its sun rays and its
 * hemisphere rays. */
static void reach_boxes(const q_bake_def *def, float sun_lo[3], float sun_hi[3], float ao_lo[3], float ao_hi[3])
{
    float s[3] = {def->sun[0], def->sun[1], def->sun[2]};
    normalize3(s);
    float cone = def->sun_cone, len = def->sun_distance;
    float ball = def->ao_rays > 0 ? def->ao_radius : 0.0f;
    /* Slack for the rounding of origins and of the rotated directions. */
    float slack = 1e-3f * (len + ball + def->offset) + 1e-5f;
    for (int k = 0; k < 3; k++) {
        /* Directions within the cone make angles in [a - cone, a + cone]
         * with axis k, where a is the sun's. */
        double a = acos(fmax(-1.0, fmin(1.0, (double)s[k])));
        float cmax = (float)cos(fmax(0.0, a - cone)), cmin = (float)cos(fmin(3.14159265358979, a + cone));
        sun_lo[k] = fminf(0.0f, len * cmin) - def->offset - slack;
        sun_hi[k] = fmaxf(0.0f, len * cmax) + def->offset + slack;
        ao_lo[k] = -ball - def->offset - slack;
        ao_hi[k] = ball + def->offset + slack;
    }
}

void q_bake_reach(const q_bake_def *def, float lo[3], float hi[3])
{
    float sl[3], sh[3], al[3], ah[3];
    reach_boxes(def, sl, sh, al, ah);
    for (int k = 0; k < 3; k++) {
        lo[k] = fminf(sl[k], al[k]);
        hi[k] = fmaxf(sh[k], ah[k]);
    }
}

/* Where the rays of the vertices in a box can go. The hemisphere rays stay
 * in a box; the sun rays in a box too, and also in a slanted prism: in the
 * sun's frame (u, v across the sun, s towards it) each ray stays within the
 * vertex box's extent along u and v widened by the cone's spread and the
 * offset, and within its extent along s stretched by sun_distance. Anything
 * outside both the box and the prism is out of the sun rays' reach. */
typedef struct reach_region {
    bool ao;                /* ao_rays > 0 */
    float ao_lo[3], ao_hi[3];
    float sun_lo[3], sun_hi[3];
    float axis[3][3];       /* u, v, s: unit */
    float plo[3], phi[3];   /* the prism: intervals along each axis */
} reach_region;

static float dot3f(const float a[3], const float b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void make_region(const q_bake_def *def, const float lo[3], const float hi[3], reach_region *r)
{
    float sl[3], sh[3], al[3], ah[3];
    reach_boxes(def, sl, sh, al, ah);
    r->ao = def->ao_rays > 0;
    for (int k = 0; k < 3; k++) {
        r->ao_lo[k] = lo[k] + al[k];
        r->ao_hi[k] = hi[k] + ah[k];
        r->sun_lo[k] = lo[k] + sl[k];
        r->sun_hi[k] = hi[k] + sh[k];
    }
    memcpy(r->axis[2], def->sun, sizeof r->axis[2]);
    normalize3(r->axis[2]);
    tangent_frame(r->axis[2], r->axis[0], r->axis[1]);
    float len = def->sun_distance;
    float slack = 1e-3f * (len + def->offset) + 1e-5f;
    float spread = def->offset + len * sinf(def->sun_cone) + slack;
    for (int k = 0; k < 3; k++) {
        /* The box's extent along the axis: centre and half-size projected. */
        const float *a = r->axis[k];
        float c = 0.0f, h = 0.0f;
        for (int j = 0; j < 3; j++) {
            c += 0.5f * (lo[j] + hi[j]) * a[j];
            h += 0.5f * (hi[j] - lo[j]) * fabsf(a[j]);
        }
        h += slack; /* rounding of the projection */
        r->plo[k] = c - h - (k < 2 ? spread : def->offset + slack);
        r->phi[k] = c + h + (k < 2 ? spread : len + def->offset + slack);
    }
}

static bool boxes_meet(const float alo[3], const float ahi[3], const float blo[3], const float bhi[3])
{
    return alo[0] <= bhi[0] && blo[0] <= ahi[0] && alo[1] <= bhi[1] && blo[1] <= ahi[1] && alo[2] <= bhi[2] &&
           blo[2] <= ahi[2];
}

/* Whether the sun rays can reach something with the world box [tlo, thi]
 * and the extents [elo, ehi] along the region's axes. */
static bool sun_meets(const reach_region *r, const float tlo[3], const float thi[3], const float elo[3],
                      const float ehi[3])
{
    if (!boxes_meet(r->sun_lo, r->sun_hi, tlo, thi))
        return false;
    for (int k = 0; k < 3; k++)
        if (ehi[k] < r->plo[k] || elo[k] > r->phi[k])
            return false;
    return true;
}

bool q_bake_box_reaches(const q_bake_def *def, const float vlo[3], const float vhi[3], const float tlo[3],
                        const float thi[3])
{
    reach_region r;
    make_region(def, vlo, vhi, &r);
    if (r.ao && boxes_meet(r.ao_lo, r.ao_hi, tlo, thi))
        return true;
    float elo[3], ehi[3];
    for (int k = 0; k < 3; k++) {
        const float *a = r.axis[k];
        float c = 0.0f, h = 0.0f;
        for (int j = 0; j < 3; j++) {
            c += 0.5f * (tlo[j] + thi[j]) * a[j];
            h += 0.5f * (thi[j] - tlo[j]) * fabsf(a[j]);
        }
        elo[k] = c - h;
        ehi[k] = c + h;
    }
    return sun_meets(&r, tlo, thi, elo, ehi);
}

/* Resolution of a grid sort whose finest cells are about `cell` wide over
 * triangles spanning the box [mn, mx]: its diagonal bounds the footprint
 * on any plane. */
static int grid_resolution(const float mn[3], const float mx[3], float cell)
{
    double d2 = 0;
    for (int k = 0; k < 3; k++)
        d2 += ((double)mx[k] - mn[k]) * ((double)mx[k] - mn[k]);
    double n = ceil(sqrt(d2) / cell);
    return n < 1 ? 1 : n > Q_GRIDSORT_MAX_RESOLUTION ? Q_GRIDSORT_MAX_RESOLUTION : (int)n;
}

/* One grid sort to build, sorted along dir: the triangles the sun rays
 * (sun) or the hemisphere rays (!sun) of the region can reach (indices
 * checked). */
typedef struct grid_task {
    const float *positions;
    size_t vertex_count;
    const uint32_t *indices;
    size_t index_count;
    const reach_region *region;
    bool sun;
    float dir[3], cell;
    q_gridsort **out;
    q_status status;
    char err[160];
} grid_task;

static bool triangle_in_reach(const grid_task *g, const float *p[3], const float tlo[3], const float thi[3])
{
    const reach_region *r = g->region;
    if (!g->sun)
        return boxes_meet(r->ao_lo, r->ao_hi, tlo, thi);
    float elo[3], ehi[3];
    for (int k = 0; k < 3; k++) {
        float d0 = dot3f(r->axis[k], p[0]), d1 = dot3f(r->axis[k], p[1]), d2 = dot3f(r->axis[k], p[2]);
        elo[k] = fminf(d0, fminf(d1, d2));
        ehi[k] = fmaxf(d0, fmaxf(d1, d2));
    }
    return sun_meets(r, tlo, thi, elo, ehi);
}

static void build_grid(void *ctx, int index)
{
    grid_task *g = (grid_task *)ctx + index;
    uint32_t *kept = q_alloc((g->index_count ? g->index_count : 1) * sizeof(uint32_t));
    if (!kept) {
        g->status = fail(g->err, sizeof g->err, Q_ERR_MEMORY, "out of memory");
        return;
    }
    size_t n = 0;
    float mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    for (size_t t = 0; t < g->index_count; t += 3) {
        const uint32_t *id = g->indices + t;
        const float *p[3] = {g->positions + 3 * (size_t)id[0], g->positions + 3 * (size_t)id[1],
                             g->positions + 3 * (size_t)id[2]};
        float tlo[3], thi[3];
        for (int k = 0; k < 3; k++) {
            tlo[k] = fminf(p[0][k], fminf(p[1][k], p[2][k]));
            thi[k] = fmaxf(p[0][k], fmaxf(p[1][k], p[2][k]));
        }
        if (!triangle_in_reach(g, p, tlo, thi))
            continue;
        for (int k = 0; k < 3; k++) {
            mn[k] = n ? fminf(mn[k], tlo[k]) : tlo[k];
            mx[k] = n ? fmaxf(mx[k], thi[k]) : thi[k];
        }
        memcpy(kept + n, id, 3 * sizeof *id);
        n += 3;
    }
    g->status = q_gridsort_build(g->out, g->positions, g->vertex_count, kept, n, g->dir,
                                 grid_resolution(mn, mx, g->cell), g->err, sizeof g->err);
    q_free(kept, (g->index_count ? g->index_count : 1) * sizeof(uint32_t));
}

q_status q_bake_scene_build(q_bake_scene **out, const q_bake_def *def, const float *positions,
                            size_t vertex_count, const uint32_t *indices, size_t index_count,
                            const float lo[3], const float hi[3], float cell, q_jobs *jobs, char *err,
                            size_t errlen)
{
    *out = NULL;
    q_status st = q_bake_def_check(def, err, errlen);
    if (st != Q_OK)
        return st;
    if (!(cell > 0 && isfinite(cell)))
        return fail(err, errlen, Q_ERR_ARGUMENT, "cell must be > 0, got %g", (double)cell);
    for (int k = 0; k < 3; k++)
        if (!(isfinite(lo[k]) && isfinite(hi[k]) && lo[k] <= hi[k]))
            return fail(err, errlen, Q_ERR_ARGUMENT, "the vertex box must be finite and not inverted");
    if (index_count % 3)
        return fail(err, errlen, Q_ERR_ARGUMENT, "index count %zu is not a multiple of 3", index_count);
    for (size_t i = 0; i < index_count; i++)
        if (indices[i] >= vertex_count)
            return fail(err, errlen, Q_ERR_ARGUMENT, "index %zu is %u, past the %zu vertices", i, indices[i],
                        vertex_count);
    q_bake_scene *s = q_calloc(1, sizeof *s);
    if (!s)
        return fail(err, errlen, Q_ERR_MEMORY, "out of memory");
    s->def = *def;
    memcpy(s->sun, def->sun, sizeof s->sun);
    normalize3(s->sun);
    tangent_frame(s->sun, s->su, s->sv);

    reach_region region;
    make_region(def, lo, hi, &region);
    grid_task tasks[2];
    for (int i = 0; i < 2; i++) {
        grid_task *g = &tasks[i];
        *g = (grid_task){positions, vertex_count, indices, index_count, &region, i == 0, .cell = cell};
        for (int k = 0; k < 3; k++)
            g->dir[k] = i == 0 ? -s->sun[k] : (k == 1 ? 1.0f : 0.0f);
        g->out = i == 0 ? &s->along_sun : &s->along_y;
    }
    q_jobs_for(jobs, def->ao_rays > 0 ? 2 : 1, build_grid, tasks);
    for (int i = 0; i < 2 && st == Q_OK; i++)
        if (tasks[i].status != Q_OK)
            st = fail(err, errlen, tasks[i].status, "%s", tasks[i].err);
    if (st != Q_OK) {
        q_bake_scene_free(s);
        return st;
    }
    *out = s;
    return Q_OK;
}

void q_bake_scene_free(q_bake_scene *s)
{
    if (!s)
        return;
    q_gridsort_free(s->along_sun);
    q_gridsort_free(s->along_y);
    q_free(s, sizeof *s);
}

size_t q_bake_scene_bytes(const q_bake_scene *s)
{
    return sizeof *s + q_gridsort_bytes(s->along_sun) + (s->along_y ? q_gridsort_bytes(s->along_y) : 0);
}

/* Spiral turn of a vertex, in [0, 2 pi): FNV-1a over the coordinates' bits
 * (with -0 made +0), finished with MurmurHash3's fmix32. */
static float vertex_turn(const float p[3])
{
    uint32_t h = 2166136261u;
    for (int k = 0; k < 3; k++) {
        float f = p[k] + 0.0f;
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        h = (h ^ b) * 16777619u;
    }
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return (float)(h >> 8) * (TWO_PI / 16777216.0f);
}

static uint8_t fraction_byte(int escaped, int total)
{
    return (uint8_t)((escaped * 255 + total / 2) / total);
}

bool q_bake_vertices(const q_bake_scene *s, const float *positions, const float *normals, size_t n,
                     uint8_t *sun, uint8_t *ao)
{
    const q_bake_def *d = &s->def;
    int ks = d->sun_rays, ka = d->ao_rays;
    int most = ks > ka ? ks : ka;
    size_t rays = n * (size_t)most;
    float *origins = q_alloc(rays * 3 * sizeof(float));
    float *dirs = q_alloc(rays * 3 * sizeof(float));
    float *t = q_alloc(rays * sizeof(float));
    uint32_t *owner = q_alloc(n * sizeof(uint32_t)); /* ray groups of the vertices facing the sun */
    if (n && (!origins || !dirs || !t || !owner)) {
        q_free(origins, rays * 3 * sizeof(float));
        q_free(dirs, rays * 3 * sizeof(float));
        q_free(t, rays * sizeof(float));
        q_free(owner, n * sizeof(uint32_t));
        memset(sun, 255, n);
        memset(ao, 255, n);
        return false;
    }

    /* Sun: the spiral on the cone's disk at unit distance. */
    float radius = tanf(d->sun_cone);
    size_t lit = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        const float *p = positions + 3 * i, *nm = normals + 3 * i;
        sun[i] = 0;
        if (nm[0] * s->sun[0] + nm[1] * s->sun[1] + nm[2] * s->sun[2] <= 0.0f)
            continue;
        owner[lit++] = (uint32_t)i;
        float turn = vertex_turn(p);
        for (int j = 0; j < ks; j++, r++) {
            float rr = radius * sqrtf(((float)j + 0.5f) / (float)ks), a = (float)j * GOLDEN_ANGLE + turn;
            float x = rr * cosf(a), y = rr * sinf(a);
            float *o = origins + 3 * r, *dir = dirs + 3 * r;
            for (int k = 0; k < 3; k++) {
                o[k] = p[k] + nm[k] * d->offset;
                dir[k] = s->sun[k] + x * s->su[k] + y * s->sv[k];
            }
            normalize3(dir);
        }
    }
    q_gridsort_raycast_batch(s->along_sun, origins, dirs, r, d->sun_distance, t);
    for (size_t i = 0; i < lit; i++) {
        int escaped = 0;
        for (int j = 0; j < ks; j++)
            escaped += t[i * (size_t)ks + (size_t)j] < 0.0f;
        sun[owner[i]] = fraction_byte(escaped, ks);
    }

    /* Hemisphere: the spiral on the unit disk lifted onto the hemisphere. */
    if (ka == 0) {
        memset(ao, 255, n);
    } else {
        r = 0;
        for (size_t i = 0; i < n; i++) {
            const float *p = positions + 3 * i, *nm = normals + 3 * i;
            float tu[3], tv[3];
            tangent_frame(nm, tu, tv);
            float turn = vertex_turn(p);
            for (int j = 0; j < ka; j++, r++) {
                float rr2 = ((float)j + 0.5f) / (float)ka, rr = sqrtf(rr2), a = (float)j * GOLDEN_ANGLE + turn;
                float x = rr * cosf(a), y = rr * sinf(a), z = sqrtf(1.0f - rr2);
                float *o = origins + 3 * r, *dir = dirs + 3 * r;
                for (int k = 0; k < 3; k++) {
                    o[k] = p[k] + nm[k] * d->offset;
                    dir[k] = x * tu[k] + y * tv[k] + z * nm[k];
                }
            }
        }
        q_gridsort_raycast_batch(s->along_y, origins, dirs, r, d->ao_radius, t);
        for (size_t i = 0; i < n; i++) {
            int escaped = 0;
            for (int j = 0; j < ka; j++)
                escaped += t[i * (size_t)ka + (size_t)j] < 0.0f;
            ao[i] = fraction_byte(escaped, ka);
        }
    }
    q_free(origins, rays * 3 * sizeof(float));
    q_free(dirs, rays * 3 * sizeof(float));
    q_free(t, rays * sizeof(float));
    q_free(owner, n * sizeof(uint32_t));
    return true;
}

/* Whether a ray of a vertex at p can reach the box a region was made for
 * with the sun mirrored (see q_bake_vertices_reaching). */
static bool point_in_region(const reach_region *r, const float p[3])
{
    if (r->ao && boxes_meet(r->ao_lo, r->ao_hi, p, p))
        return true;
    float e[3];
    for (int k = 0; k < 3; k++)
        e[k] = dot3f(r->axis[k], p);
    return sun_meets(r, p, p, e, e);
}

bool q_bake_vertices_reaching(const q_bake_scene *s, const float *positions, const float *normals, size_t n,
                              const float lo[3], const float hi[3], uint8_t *sun, uint8_t *ao, size_t *baked)
{
    /* A vertex at p reaches the box T when T meets the region of rays from
     * p; the region's shape is symmetric but for the sun's direction, so
     * that is p lying in the region of T with the sun turned around. */
    q_bake_def mirrored = s->def;
    for (int k = 0; k < 3; k++)
        mirrored.sun[k] = -s->sun[k];
    reach_region r;
    make_region(&mirrored, lo, hi, &r);
    *baked = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += point_in_region(&r, positions + 3 * i);
    if (m == 0)
        return true;
    uint32_t *pick = q_alloc(m * sizeof(uint32_t));
    float *p = q_alloc(m * 3 * sizeof(float)), *nm = q_alloc(m * 3 * sizeof(float));
    uint8_t *su = q_alloc(m), *oc = q_alloc(m);
    bool ok = pick && p && nm && su && oc;
    if (ok) {
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (point_in_region(&r, positions + 3 * i)) {
                pick[j] = (uint32_t)i;
                memcpy(p + 3 * j, positions + 3 * i, 3 * sizeof(float));
                memcpy(nm + 3 * j, normals + 3 * i, 3 * sizeof(float));
                j++;
            }
        ok = q_bake_vertices(s, p, nm, m, su, oc);
    }
    if (ok) {
        for (size_t j = 0; j < m; j++) {
            sun[pick[j]] = su[j];
            ao[pick[j]] = oc[j];
        }
        *baked = m;
    }
    q_free(pick, m * sizeof(uint32_t));
    q_free(p, m * 3 * sizeof(float));
    q_free(nm, m * 3 * sizeof(float));
    q_free(su, m);
    q_free(oc, m);
    return ok;
}
