/* Grid-sort raycasts against brute force (every triangle through
 * q_ray_triangle) on random soups, degenerate layouts, several axes and
 * resolutions; batch against single rays; bad input; no leaks. TAP output. */
#include "core/alloc.h"
#include "geom/gridsort.h"
#include "physics/kdtree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_no, failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

static uint64_t state = 0x9e3779b97f4a7c15ull;
static float frand(void)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((state >> 40) & 0xffffff) / (float)0x1000000;
}

typedef struct soup {
    float *pos;
    uint32_t *idx;
    uint32_t ntri;
} soup;

/* kind 0: small random triangles; 1: all identical; 2: one plane
 * perpendicular to y; 3: walls parallel to y (edge-on to a down axis);
 * 4: mixed scales; 5: a 2D grid of quads (a height field). */
static soup make_soup(uint32_t ntri, int kind)
{
    soup s = {malloc(ntri * 9 * sizeof(float)), malloc(ntri * 3 * sizeof(uint32_t)), ntri};
    for (uint32_t t = 0; t < ntri; t++) {
        float c[3] = {frand() * 100, frand() * 100, frand() * 100};
        float scale = kind == 4 ? powf(10.0f, frand() * 3 - 1.0f) : 8.0f;
        for (int k = 0; k < 3; k++) {
            float *p = s.pos + 9 * t + 3 * k;
            for (int a = 0; a < 3; a++)
                p[a] = c[a] + (frand() - 0.5f) * scale;
            if (kind == 1)
                p[0] = k == 1 ? 6.0f : 5.0f, p[1] = k == 2 ? 6.0f : 5.0f, p[2] = 5.0f;
            if (kind == 2)
                p[1] = 7.5f;
            if (kind == 3)
                p[2] = c[2]; /* x varies, y varies, z fixed: a wall containing y */
            s.idx[3 * t + k] = 3 * t + (uint32_t)k;
        }
        if (kind == 5) {
            uint32_t q = t / 2, side = 40;
            float x = (float)(q % side), z = (float)(q / side % side);
            float h[4];
            for (int k = 0; k < 4; k++) {
                float xx = x + (k & 1), zz = z + (k >> 1);
                h[k] = 3 * sinf(xx * 0.3f) * cosf(zz * 0.2f) + (float)(q / (side * side)) * 10;
            }
            float quad[4][3] = {{x, h[0], z}, {x + 1, h[1], z}, {x, h[2], z + 1}, {x + 1, h[3], z + 1}};
            static const int tri[2][3] = {{0, 2, 1}, {1, 2, 3}};
            for (int k = 0; k < 3; k++)
                memcpy(s.pos + 9 * t + 3 * k, quad[tri[t & 1][k]], 3 * sizeof(float));
        }
    }
    return s;
}

static bool brute(const soup *s, const float o[3], const float d[3], float tmax, float *t_out, uint32_t *tri_out)
{
    float best = INFINITY;
    uint32_t bt = 0;
    for (uint32_t t = 0; t < s->ntri; t++) {
        const uint32_t *ix = s->idx + 3 * t;
        float h = q_ray_triangle(o, d, s->pos + 3 * ix[0], s->pos + 3 * ix[1], s->pos + 3 * ix[2]);
        if (h >= 0 && h <= tmax && h < best) {
            best = h;
            bt = t;
        }
    }
    *t_out = best;
    *tri_out = bt;
    return best != INFINITY;
}

/* Ray kinds: random, along the axis, across it, nearly along it, from far
 * outside the bounds, short. */
static void make_ray(int kind, const float axis[3], float o[3], float d[3], float *tmax)
{
    for (int a = 0; a < 3; a++) {
        o[a] = frand() * 120 - 10;
        d[a] = frand() - 0.5f;
    }
    *tmax = 300;
    switch (kind) {
    case 1:
        memcpy(d, axis, 3 * sizeof(float));
        if (frand() < 0.5f)
            for (int a = 0; a < 3; a++)
                d[a] = -d[a];
        break;
    case 2: {
        float k = (d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2]) /
                  (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
        for (int a = 0; a < 3; a++)
            d[a] -= k * axis[a];
        break;
    }
    case 3:
        for (int a = 0; a < 3; a++)
            d[a] = axis[a] + (frand() - 0.5f) * 1e-3f;
        break;
    case 4:
        for (int a = 0; a < 3; a++)
            o[a] = frand() < 0.5f ? -500.0f : 600.0f;
        for (int a = 0; a < 3; a++)
            d[a] = 50 + frand() * 50 - o[a];
        *tmax = 1e30f;
        break;
    case 5:
        *tmax = frand() * 5;
        break;
    default:
        break;
    }
}

static int check_rays(const q_gridsort *gs, const soup *s, const float axis[3], int rays, int *hits)
{
    int ok = 1;
    float *origins = malloc(rays * 3 * sizeof(float)), *dirs = malloc(rays * 3 * sizeof(float));
    float *expect = malloc(rays * sizeof(float)), *got = malloc(rays * sizeof(float));
    float batch_tmax = 300;
    for (int i = 0; i < rays; i++) {
        float o[3], d[3], tmax, tb, tg;
        uint32_t trib, trig;
        make_ray(i % 6, axis, o, d, &tmax);
        bool hb = brute(s, o, d, tmax, &tb, &trib);
        bool hg = q_gridsort_raycast(gs, o, d, tmax, &tg, &trig);
        if (hb != hg || (hb && (tb != tg || trib != trig))) {
            if (ok)
                fprintf(stderr, "# ray %d kind %d: brute %d %g #%u, grid %d %g #%u\n", i, i % 6, hb, hb ? tb : 0,
                        trib, hg, hg ? tg : 0, trig);
            ok = 0;
        }
        *hits += hb;
        memcpy(origins + 3 * i, o, sizeof o);
        memcpy(dirs + 3 * i, d, sizeof d);
        expect[i] = brute(s, o, d, batch_tmax, &tb, &trib) ? tb : -1.0f;
    }
    size_t nh = q_gridsort_raycast_batch(gs, origins, dirs, (size_t)rays, batch_tmax, got);
    size_t eh = 0;
    for (int i = 0; i < rays; i++) {
        eh += expect[i] >= 0;
        if (expect[i] != got[i]) {
            if (ok)
                fprintf(stderr, "# batch ray %d: brute %g, grid %g\n", i, expect[i], got[i]);
            ok = 0;
        }
    }
    ok &= nh == eh;
    free(origins);
    free(dirs);
    free(expect);
    free(got);
    return ok;
}

int main(void)
{
    size_t live0 = q_alloc_live_bytes();
    static const float axes[][3] = {{0, -1, 0}, {0, 0, 1}, {1, 0, 0}, {0.3f, -0.8f, 0.2f}, {-1, 1, 1}};
    static const int resolutions[] = {2048, 7, 1};
    static const char *const kinds[] = {"random", "identical", "plane", "walls", "scales", "height field"};
    for (int kind = 0; kind < 6; kind++) {
        soup s = make_soup(kind == 5 ? 40 * 40 * 2 * 2 : 1000, kind);
        for (int a = 0; a < 5; a++) {
            for (int r = 0; r < 3; r++) {
                if ((r > 0 && a > 1 && kind != 0) || (kind == 5 && (r & 1)))
                    continue;
                q_gridsort *gs = NULL;
                char err[128];
                q_status st = q_gridsort_build(&gs, s.pos, s.ntri * 3, s.idx, s.ntri * 3, axes[a], resolutions[r],
                                               err, sizeof err);
                int hits = 0;
                int ok = st == Q_OK && check_rays(gs, &s, axes[a], 300, &hits);
                char name[160];
                snprintf(name, sizeof name, "%s soup, axis %d, resolution %d: same hits as brute force (%d hits)",
                         kinds[kind], a, resolutions[r], hits);
                report(name, ok && (kind == 1 || hits >= 5));
                if (gs)
                    q_gridsort_free(gs);
            }
        }
        free(s.pos);
        free(s.idx);
    }

    q_gridsort *gs = NULL;
    char err[128];
    float down[3] = {0, -1, 0};
    report("empty mesh builds and misses",
           q_gridsort_build(&gs, NULL, 0, NULL, 0, down, 2048, err, sizeof err) == Q_OK && gs &&
               q_gridsort_bytes(gs) > 0 &&
               !q_gridsort_raycast(gs, (float[3]){0, 1, 0}, down, 10, &(float){0}, &(uint32_t){0}));
    q_gridsort_free(gs);
    q_gridsort_free(NULL);

    float pos[9] = {0, 0, 0, 1, 0, 0, 0, 0, 1}, nan_pos[9] = {0, 0, 0, NAN, 0, 0, 0, 0, 1};
    uint32_t idx[3] = {0, 1, 2}, bad_idx[3] = {0, 1, 3};
    gs = (q_gridsort *)1;
    int ok = q_gridsort_build(&gs, pos, 3, idx, 3, (float[3]){0, 0, 0}, 64, err, sizeof err) == Q_ERR_ARGUMENT &&
             gs == NULL;
    ok &= q_gridsort_build(&gs, pos, 3, idx, 3, (float[3]){NAN, 1, 0}, 64, err, sizeof err) == Q_ERR_ARGUMENT;
    ok &= q_gridsort_build(&gs, pos, 3, idx, 3, down, 0, err, sizeof err) == Q_ERR_ARGUMENT;
    ok &= q_gridsort_build(&gs, pos, 3, idx, 3, down, 4096, err, sizeof err) == Q_ERR_ARGUMENT;
    ok &= q_gridsort_build(&gs, pos, 3, bad_idx, 3, down, 64, err, sizeof err) == Q_ERR_ARGUMENT;
    ok &= q_gridsort_build(&gs, nan_pos, 3, idx, 3, down, 64, err, sizeof err) == Q_ERR_ARGUMENT;
    ok &= q_gridsort_build(&gs, pos, 3, idx, 2, down, 64, err, sizeof err) == Q_ERR_ARGUMENT;
    report("bad input is refused with Q_ERR_ARGUMENT", ok);

    ok = q_gridsort_build(&gs, pos, 3, idx, 3, down, 64, err, sizeof err) == Q_OK;
    float t = -1;
    uint32_t tri = 99;
    ok &= q_gridsort_raycast(gs, (float[3]){0.2f, 1, 0.2f}, down, 1, &t, &tri) && t == 1.0f && tri == 0;
    ok &= !q_gridsort_raycast(gs, (float[3]){0.2f, 1, 0.2f}, down, 0.999f, &t, &tri);
    ok &= q_gridsort_raycast(gs, (float[3]){0.2f, -1, 0.2f}, (float[3]){0, 2, 0}, 1, &t, &tri) && t == 0.5f;
    ok &= !q_gridsort_raycast(gs, (float[3]){0.2f, 1, 0.2f}, (float[3]){0, 0, 0}, 10, &t, &tri);
    ok &= !q_gridsort_raycast(gs, (float[3]){NAN, 1, 0.2f}, down, 10, &t, &tri);
    ok &= !q_gridsort_raycast(gs, (float[3]){0.2f, 1, 0.2f}, down, -1, &t, &tri);
    ok &= q_gridsort_raycast(gs, (float[3]){0.2f, 0, 0.2f}, down, 0, &t, &tri) && t == 0;
    report("one triangle: exact distances, max distance inclusive, bad rays miss", ok);
    q_gridsort_free(gs);

    report("everything allocated is freed", q_alloc_live_bytes() == live0);
    printf("1..%d\n", test_no);
    return failures != 0;
}
