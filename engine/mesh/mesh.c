/* Mesh values: see mesh.h. */
#include "mesh/mesh.h"

#include "core/alloc.h"
#include "core/hashmap.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

q_mesh *q_mesh_create(size_t vertices, size_t indices, bool normals, bool materials)
{
    q_mesh *m = q_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->vertex_count = vertices;
    m->index_count = indices;
    m->positions = q_alloc(vertices * 3 * sizeof(float));
    m->normals = normals ? q_alloc(vertices * 3 * sizeof(float)) : NULL;
    m->materials = materials ? q_alloc(vertices) : NULL;
    m->indices = q_alloc(indices * sizeof(uint32_t));
    bool ok = (vertices == 0 || (m->positions && (!normals || m->normals) && (!materials || m->materials))) &&
              (indices == 0 || m->indices);
    if (!ok) {
        q_mesh_destroy(m);
        return NULL;
    }
    return m;
}

void q_mesh_destroy(q_mesh *m)
{
    if (!m)
        return;
    q_free(m->positions, m->vertex_count * 3 * sizeof(float));
    q_free(m->normals, m->vertex_count * 3 * sizeof(float));
    q_free(m->materials, m->vertex_count);
    q_free(m->indices, m->index_count * sizeof(uint32_t));
    q_free(m, sizeof *m);
}

bool q_mesh_bounds(const q_mesh *m, double min[3], double max[3])
{
    if (m->vertex_count == 0)
        return false;
    for (int a = 0; a < 3; a++)
        min[a] = max[a] = m->positions[a];
    for (size_t i = 1; i < m->vertex_count; i++)
        for (int a = 0; a < 3; a++) {
            double v = m->positions[3 * i + a];
            min[a] = v < min[a] ? v : min[a];
            max[a] = v > max[a] ? v : max[a];
        }
    return true;
}

/* Triangle corners relative to the first vertex, so that volume and area
 * stay accurate far from the origin. */
static void corners(const q_mesh *m, size_t t, double origin[3], double p[3][3])
{
    for (int k = 0; k < 3; k++) {
        const float *v = m->positions + 3 * m->indices[3 * t + k];
        for (int a = 0; a < 3; a++)
            p[k][a] = (double)v[a] - origin[a];
    }
}

double q_mesh_volume(const q_mesh *m)
{
    if (m->vertex_count == 0)
        return 0;
    double o[3] = {m->positions[0], m->positions[1], m->positions[2]};
    double sum = 0;
    for (size_t t = 0; t < m->index_count / 3; t++) {
        double p[3][3];
        corners(m, t, o, p);
        sum += p[0][0] * (p[1][1] * p[2][2] - p[1][2] * p[2][1]) - p[0][1] * (p[1][0] * p[2][2] - p[1][2] * p[2][0]) +
               p[0][2] * (p[1][0] * p[2][1] - p[1][1] * p[2][0]);
    }
    return sum / 6.0;
}

double q_mesh_area(const q_mesh *m)
{
    if (m->vertex_count == 0)
        return 0;
    double o[3] = {m->positions[0], m->positions[1], m->positions[2]};
    double sum = 0;
    for (size_t t = 0; t < m->index_count / 3; t++) {
        double p[3][3];
        corners(m, t, o, p);
        double u[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
        double v[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
        double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
        sum += 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    }
    return sum;
}

bool q_mesh_is_closed(const q_mesh *m)
{
    if (m->index_count == 0 || m->index_count % 3)
        return false;
    q_hashmap edges = {0};
    bool ok = true;
    for (size_t t = 0; t < m->index_count / 3 && ok; t++) {
        for (int k = 0; k < 3 && ok; k++) {
            uint32_t a = m->indices[3 * t + k], b = m->indices[3 * t + (k + 1) % 3];
            if (a == b) {
                ok = false;
                break;
            }
            uint64_t key = (uint64_t)a << 32 | b;
            if (q_hashmap_get(&edges, key) != Q_HASHMAP_EMPTY || !q_hashmap_set(&edges, key, 1))
                ok = false; /* directed edge used twice: not a consistent manifold */
        }
    }
    for (size_t t = 0; t < m->index_count / 3 && ok; t++)
        for (int k = 0; k < 3 && ok; k++) {
            uint32_t a = m->indices[3 * t + k], b = m->indices[3 * t + (k + 1) % 3];
            ok = q_hashmap_get(&edges, (uint64_t)b << 32 | a) != Q_HASHMAP_EMPTY;
        }
    q_hashmap_free(&edges);
    return ok;
}

q_status q_mesh_save_obj(const q_mesh *m, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return Q_ERR_IO;
    }
    fprintf(f, "# Quarry mesh: %zu vertices, %zu triangles\n", m->vertex_count, m->index_count / 3);
    for (size_t i = 0; i < m->vertex_count; i++)
        fprintf(f, "v %.9g %.9g %.9g\n", m->positions[3 * i], m->positions[3 * i + 1], m->positions[3 * i + 2]);
    if (m->normals)
        for (size_t i = 0; i < m->vertex_count; i++)
            fprintf(f, "vn %.6g %.6g %.6g\n", m->normals[3 * i], m->normals[3 * i + 1], m->normals[3 * i + 2]);
    for (size_t t = 0; t < m->index_count / 3; t++) {
        uint32_t a = m->indices[3 * t] + 1, b = m->indices[3 * t + 1] + 1, c = m->indices[3 * t + 2] + 1;
        if (m->normals)
            fprintf(f, "f %u//%u %u//%u %u//%u\n", a, a, b, b, c, c);
        else
            fprintf(f, "f %u %u %u\n", a, b, c);
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return Q_ERR_IO;
    }
    return Q_OK;
}
