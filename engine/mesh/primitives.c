/* Closed primitive meshes (mesh.h: q_mesh_box, q_mesh_sphere). */
#include "mesh/mesh.h"

#include "core/alloc.h"

#include <math.h>
#include <string.h>

q_mesh *q_mesh_box(const double size[3])
{
    static const int corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                     {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
    /* two triangles per face, counter-clockwise seen from outside */
    static const uint32_t tris[36] = {0, 2, 1, 1, 2, 3,  4, 5, 6, 5, 7, 6,  0, 1, 4, 1, 5, 4,
                                      2, 6, 3, 3, 6, 7,  0, 4, 2, 2, 4, 6,  1, 3, 5, 3, 7, 5};
    q_mesh *m = q_mesh_create(8, 36, false, false);
    if (!m)
        return NULL;
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 3; k++)
            m->positions[3 * i + k] = (float)((corner[i][k] - 0.5) * size[k]);
    memcpy(m->indices, tris, sizeof tris);
    return m;
}

/* Midpoint of edge (a, b), made once: a small open-addressed table keyed by
 * the edge, so neighbouring triangles share it and the sphere stays closed. */
typedef struct midpoints {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap;
} midpoints;

static uint32_t midpoint(midpoints *mp, float *pos, uint32_t *count, uint32_t a, uint32_t b)
{
    uint64_t key = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (mp->cap - 1);
    while (mp->keys[h] != UINT64_MAX) {
        if (mp->keys[h] == key)
            return mp->vals[h];
        h = (h + 1) & (mp->cap - 1);
    }
    uint32_t v = (*count)++;
    double p[3], l = 0;
    for (int k = 0; k < 3; k++) {
        p[k] = (pos[3 * a + k] + pos[3 * b + k]) * 0.5;
        l += p[k] * p[k];
    }
    l = sqrt(l);
    for (int k = 0; k < 3; k++)
        pos[3 * v + k] = (float)(p[k] / l);
    mp->keys[h] = key;
    mp->vals[h] = v;
    return v;
}

q_mesh *q_mesh_sphere(double radius, int detail)
{
    /* an icosahedron, each triangle split in four `detail` times */
    const double t = (1 + sqrt(5.0)) / 2;
    const double ico[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0}, {0, -1, t}, {0, 1, t},
                               {0, -1, -t}, {0, 1, -t}, {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
    static const uint32_t faces[60] = {0, 11, 5, 0, 5, 1, 0, 1, 7, 0, 7, 10, 0, 10, 11, 1, 5, 9, 5, 11, 4,
                                       11, 10, 2, 10, 7, 6, 7, 1, 8, 3, 9, 4, 3, 4, 2, 3, 2, 6, 3, 6, 8,
                                       3, 8, 9, 4, 9, 5, 2, 4, 11, 6, 2, 10, 8, 6, 7, 9, 8, 1};
    size_t nt = 20, nv = 12;
    for (int d = 0; d < detail; d++) {
        nv += nt * 3 / 2; /* one new vertex per edge */
        nt *= 4;
    }
    float *pos = q_alloc(nv * 3 * sizeof *pos);
    uint32_t *idx = q_alloc(nt * 3 * sizeof *idx), *next = q_alloc(nt * 3 * sizeof *next);
    midpoints mp = {NULL, NULL, 16};
    while (mp.cap < nt * 2)
        mp.cap *= 2;
    mp.keys = q_alloc(mp.cap * sizeof *mp.keys);
    mp.vals = q_alloc(mp.cap * sizeof *mp.vals);
    q_mesh *m = NULL;
    if (pos && idx && next && mp.keys && mp.vals) {
        uint32_t count = 12;
        for (int i = 0; i < 12; i++) {
            double l = sqrt(ico[i][0] * ico[i][0] + ico[i][1] * ico[i][1] + ico[i][2] * ico[i][2]);
            for (int k = 0; k < 3; k++)
                pos[3 * i + k] = (float)(ico[i][k] / l);
        }
        memcpy(idx, faces, sizeof faces);
        size_t cur = 20;
        for (int d = 0; d < detail; d++) {
            memset(mp.keys, 0xff, mp.cap * sizeof *mp.keys);
            for (size_t f = 0; f < cur; f++) {
                uint32_t a = idx[3 * f], b = idx[3 * f + 1], c = idx[3 * f + 2];
                uint32_t ab = midpoint(&mp, pos, &count, a, b), bc = midpoint(&mp, pos, &count, b, c),
                         ca = midpoint(&mp, pos, &count, c, a);
                uint32_t *o = next + 12 * f;
                uint32_t quad[12] = {a, ab, ca, b, bc, ab, c, ca, bc, ab, bc, ca};
                memcpy(o, quad, sizeof quad);
            }
            cur *= 4;
            memcpy(idx, next, cur * 3 * sizeof *idx);
        }
        m = q_mesh_create(count, cur * 3, false, false);
        if (m) {
            for (size_t i = 0; i < (size_t)count * 3; i++)
                m->positions[i] = (float)(pos[i] * radius);
            memcpy(m->indices, idx, cur * 3 * sizeof *idx);
        }
    }
    q_free(pos, nv * 3 * sizeof *pos);
    q_free(idx, nt * 3 * sizeof *idx);
    q_free(next, nt * 3 * sizeof *next);
    q_free(mp.keys, mp.cap * sizeof *mp.keys);
    q_free(mp.vals, mp.cap * sizeof *mp.vals);
    return m;
}
