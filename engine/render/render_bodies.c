/* Rigid bodies: each body's shape drawn with its own triangles, placed by
 * the body's transform, in its material's colour; and the contact points of
 * the last step for debug{contacts = true}.
 *
 * Meshes. A body's shape never changes (physics/shape.h: colliders are
 * immutable), so its triangles (q_collider_triangles, in shape space) are
 * built and uploaded once, when the renderer first sees the body, and kept
 * under its handle: the cache is an array indexed by handle slot that holds
 * the handle's generation. A slot whose generation differs (the slot was
 * reused by a new body) is rebuilt; entries of bodies no longer listed are
 * freed at the end of each draw. Every mesh lives in one arena: a vertex
 * buffer and an index buffer shared by all the bodies of a world, appended
 * to; freed ranges are reclaimed by repacking the live ones on the GPU
 * (glCopyNamedBufferSubData) when the arena is full or more than half
 * garbage, and the arena is deleted when the world has no body left.
 *
 * Drawing. One glMultiDrawElementsIndirect per world: a command per visible
 * body (bounding sphere against the frustum) whose baseInstance picks the
 * body's row in a per-frame instance buffer (model matrix rows and colour,
 * read through a vertex attribute with divisor 1), sorted near to far so
 * that the depth test rejects hidden fragments before shading. So 1000
 * bodies cost one draw call, and what changes per frame is 64 bytes per
 * body. (On llvmpipe, which loops over the commands itself, one call per
 * body measured the same; the single call is for real drivers.)
 *
 * Normals. q_collider_triangles gives flat faces their own vertices, while
 * spheres and capsules share vertices around each ring except at the seam
 * and the poles. Vertex normals are the area-weighted sums of their
 * triangles' normals, then summed over the vertices at the same position
 * whose normals lie within SMOOTH_ANGLE of each other: seams and poles
 * shade smoothly, box edges and hull edges stay sharp.
 *
 * Shading follows the terrain's (render_terrain.c): sun and sky ambient in
 * linear RGB, fog to the clear colour. Sleeping bodies are drawn at
 * SLEEP_SHADE of their colour.
 */
#include "render/render_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "physics/bodies.h"
#include "voxel/material.h"
#include "world/world.h"

#define SLEEP_SHADE 0.6f
#define SMOOTH_COS 0.766 /* cos(40 degrees): SMOOTH_ANGLE, coarser than a sphere's 22.5 degree facets */
#define MIN_ARENA_VERTICES 4096u
#define MIN_ARENA_INDICES 16384u
/* Repack when garbage exceeds live data and this many bytes. */
#define REPACK_GARBAGE_BYTES (256u * 1024u)

typedef struct body_vertex {
    float position[3];  /* shape space, metres */
    uint32_t normal;    /* GL_INT_2_10_10_10_REV, signed normalised xyz */
} body_vertex;

/* Per-body data of a frame: the model matrix's three rows and the colour. */
typedef struct body_instance {
    float model[12];
    float color[4];     /* linear RGB, alpha unused */
} body_instance;

/* glMultiDrawElementsIndirect's command layout. */
typedef struct draw_command {
    uint32_t count, instance_count, first_index;
    int32_t base_vertex;
    uint32_t base_instance;
} draw_command;

/* A command with its body's distance from the camera, for sorting. */
typedef struct sorted_command {
    float distance2;
    draw_command command;
} sorted_command;

typedef struct body_entry {
    uint32_t generation;    /* of the handle the mesh is for; 0 = empty */
    uint32_t first_vertex, vertex_count;
    uint32_t first_index, index_count;
    float center[3], radius; /* bounding sphere, shape space */
    uint64_t seen;          /* renderer frame the body was last listed */
} body_entry;

struct q_body_cache {
    body_entry *entries;    /* by handle slot */
    size_t entry_capacity;
    GLuint vertices, indices; /* the arena; 0 until the first mesh */
    uint32_t vertex_capacity, vertex_used, vertex_live;
    uint32_t index_capacity, index_used, index_live;
};

/* ---- shaders ---- */

static const char *const VERTEX_SRC =
    "layout(location = 0) in vec3 a_position;\n"
    "layout(location = 1) in vec4 a_normal;\n"
    "layout(location = 2) in vec4 a_row0;\n"
    "layout(location = 3) in vec4 a_row1;\n"
    "layout(location = 4) in vec4 a_row2;\n"
    "layout(location = 5) in vec4 a_color;\n"
    "uniform mat4 u_view_proj;\n"
    "out vec3 v_position;\n"
    "out vec3 v_normal;\n"
    "flat out vec3 v_color;\n"
    "void main() {\n"
    "    vec4 p = vec4(a_position, 1.0), n = vec4(a_normal.xyz, 0.0);\n"
    "    v_position = vec3(dot(a_row0, p), dot(a_row1, p), dot(a_row2, p));\n"
    "    v_normal = vec3(dot(a_row0, n), dot(a_row1, n), dot(a_row2, n));\n"
    "    v_color = a_color.rgb;\n"
    "    gl_Position = u_view_proj * vec4(v_position, 1.0);\n"
    "}\n";

static const char *const FRAGMENT_SRC =
    "in vec3 v_position;\n"
    "in vec3 v_normal;\n"
    "flat in vec3 v_color;\n"
    "out vec4 o_color;\n"
    "uniform vec3 u_camera;\n"
    "uniform vec3 u_fog_color;\n"
    "uniform float u_fog_density;\n"
    "uniform vec3 u_sun;\n"
    "const vec3 SUN = vec3(0.9, 0.85, 0.75);\n"
    "const vec3 SKY_AMBIENT = vec3(0.26, 0.31, 0.4);\n"
    "const vec3 GROUND_AMBIENT = vec3(0.12, 0.1, 0.08);\n"
    "void main() {\n"
    "    vec3 n = dot(v_normal, v_normal) > 1e-8 ? normalize(v_normal) : vec3(0.0, 1.0, 0.0);\n"
    "    vec3 light = SUN * max(dot(n, u_sun), 0.0) + mix(GROUND_AMBIENT, SKY_AMBIENT, 0.5 + 0.5 * n.y);\n"
    "    float d = length(v_position - u_camera) * u_fog_density;\n"
    "    vec3 c = mix(v_color * light, u_fog_color, 1.0 - exp2(-d * d));\n"
    "    o_color = vec4(pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)), 1.0);\n"
    "}\n";

bool q_body_draw_init(q_renderer *r, char *err, size_t err_size)
{
    r->body_program = q_gl_program("body", VERTEX_SRC, FRAGMENT_SRC, NULL, err, err_size);
    if (!r->body_program)
        return false;
    r->body_view_proj = glGetUniformLocation(r->body_program, "u_view_proj");
    r->body_camera = glGetUniformLocation(r->body_program, "u_camera");
    r->body_fog_color = glGetUniformLocation(r->body_program, "u_fog_color");
    r->body_fog_density = glGetUniformLocation(r->body_program, "u_fog_density");
    r->body_sun = glGetUniformLocation(r->body_program, "u_sun");
    glCreateBuffers(1, &r->body_instance_buffer);
    glCreateBuffers(1, &r->body_command_buffer);
    glCreateVertexArrays(1, &r->body_vao);
    GLuint vao = r->body_vao;
    glEnableVertexArrayAttrib(vao, 0);
    glVertexArrayAttribFormat(vao, 0, 3, GL_FLOAT, GL_FALSE, offsetof(body_vertex, position));
    glVertexArrayAttribBinding(vao, 0, 0);
    glEnableVertexArrayAttrib(vao, 1);
    glVertexArrayAttribFormat(vao, 1, 4, GL_INT_2_10_10_10_REV, GL_TRUE, offsetof(body_vertex, normal));
    glVertexArrayAttribBinding(vao, 1, 0);
    for (GLuint a = 2; a < 6; a++) {
        glEnableVertexArrayAttrib(vao, a);
        glVertexArrayAttribFormat(vao, a, 4, GL_FLOAT, GL_FALSE, (a - 2) * 4 * sizeof(float));
        glVertexArrayAttribBinding(vao, a, 1);
    }
    glVertexArrayBindingDivisor(vao, 1, 1);
    glVertexArrayVertexBuffer(vao, 1, r->body_instance_buffer, 0, sizeof(body_instance));
    return true;
}

void q_body_draw_destroy(q_renderer *r)
{
    if (r->body_program)
        glDeleteProgram(r->body_program);
    GLuint buffers[] = {r->body_instance_buffer, r->body_command_buffer};
    glDeleteBuffers(2, buffers);
    if (r->body_vao)
        glDeleteVertexArrays(1, &r->body_vao);
    free(r->body_handles);
    free(r->body_instances);
    free(r->body_commands);
    free(r->body_contacts);
}

/* ---- the arena ---- */

static int64_t arena_bytes(const q_body_cache *c)
{
    return (int64_t)c->vertex_capacity * (int64_t)sizeof(body_vertex) +
           (int64_t)c->index_capacity * (int64_t)sizeof(uint32_t);
}

void q_body_cache_free(q_renderer *r, q_body_cache *c)
{
    if (!c)
        return;
    r->stats.gpu_bytes -= arena_bytes(c);
    GLuint buffers[] = {c->vertices, c->indices};
    glDeleteBuffers(2, buffers);
    free(c->entries);
    free(c);
}

static void free_entry(q_body_cache *c, body_entry *e)
{
    c->vertex_live -= e->vertex_count;
    c->index_live -= e->index_count;
    memset(e, 0, sizeof *e);
}

/* Moves the live meshes, packed in slot order, into new buffers of room for
 * at least `vertices` and `indices` (live data included). */
static void repack(q_renderer *r, q_body_cache *c, uint32_t vertices, uint32_t indices)
{
    uint32_t vcap = vertices < MIN_ARENA_VERTICES ? MIN_ARENA_VERTICES : vertices;
    uint32_t icap = indices < MIN_ARENA_INDICES ? MIN_ARENA_INDICES : indices;
    GLuint nv, ni;
    glCreateBuffers(1, &nv);
    glCreateBuffers(1, &ni);
    glNamedBufferStorage(nv, (GLsizeiptr)vcap * (GLsizeiptr)sizeof(body_vertex), NULL, GL_DYNAMIC_STORAGE_BIT);
    glNamedBufferStorage(ni, (GLsizeiptr)icap * (GLsizeiptr)sizeof(uint32_t), NULL, GL_DYNAMIC_STORAGE_BIT);
    uint32_t vat = 0, iat = 0;
    for (size_t s = 0; s < c->entry_capacity; s++) {
        body_entry *e = &c->entries[s];
        if (!e->generation)
            continue;
        glCopyNamedBufferSubData(c->vertices, nv, (GLintptr)e->first_vertex * (GLintptr)sizeof(body_vertex),
                                 (GLintptr)vat * (GLintptr)sizeof(body_vertex),
                                 (GLsizeiptr)e->vertex_count * (GLsizeiptr)sizeof(body_vertex));
        glCopyNamedBufferSubData(c->indices, ni, (GLintptr)e->first_index * (GLintptr)sizeof(uint32_t),
                                 (GLintptr)iat * (GLintptr)sizeof(uint32_t),
                                 (GLsizeiptr)e->index_count * (GLsizeiptr)sizeof(uint32_t));
        e->first_vertex = vat;
        e->first_index = iat;
        vat += e->vertex_count;
        iat += e->index_count;
    }
    GLuint old[] = {c->vertices, c->indices};
    glDeleteBuffers(2, old);
    r->stats.gpu_bytes -= arena_bytes(c);
    c->vertices = nv;
    c->indices = ni;
    c->vertex_capacity = vcap;
    c->index_capacity = icap;
    c->vertex_used = vat;
    c->index_used = iat;
    r->stats.gpu_bytes += arena_bytes(c);
}

/* Room for nv vertices and ni indices at the arena's end; false when the
 * counts cannot be held (beyond 2^31). */
static bool arena_reserve(q_renderer *r, q_body_cache *c, uint32_t nv, uint32_t ni)
{
    if ((uint64_t)c->vertex_used + nv <= c->vertex_capacity && (uint64_t)c->index_used + ni <= c->index_capacity)
        return true;
    uint64_t v = 2 * ((uint64_t)c->vertex_live + nv), i = 2 * ((uint64_t)c->index_live + ni);
    if (v > INT32_MAX / sizeof(body_vertex) || i > INT32_MAX / sizeof(uint32_t))
        return false;
    repack(r, c, (uint32_t)v, (uint32_t)i);
    return true;
}

/* ---- meshes ---- */

static uint32_t pack_normal(const double n[3])
{
    uint32_t out = 0;
    for (int k = 0; k < 3; k++) {
        double v = n[k] < -1.0 ? -1.0 : n[k] > 1.0 ? 1.0 : n[k];
        out |= ((uint32_t)(int32_t)lrint(v * 511.0) & 0x3ffu) << (10 * k);
    }
    return out;
}

typedef struct keyed_vertex {
    double p[3];
    uint32_t index;
} keyed_vertex;

static int by_position(const void *pa, const void *pb)
{
    const keyed_vertex *a = pa, *b = pb;
    for (int k = 0; k < 3; k++)
        if (a->p[k] != b->p[k])
            return a->p[k] < b->p[k] ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static double length3(const double v[3])
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Unit vertex normals (see the top of the file) into out[nv]; `flip` says
 * the triangles wind clockwise seen from outside (negative signed volume),
 * and the normals are already turned outwards. False when out of memory. */
static bool vertex_normals(const double *v, uint32_t nv, const uint32_t *idx, uint32_t nt, double *out,
                           bool *flip)
{
    double *sum = calloc((size_t)nv * 3, sizeof *sum);
    keyed_vertex *keys = malloc((size_t)nv * sizeof *keys);
    if (!sum || !keys) {
        free(sum);
        free(keys);
        return false;
    }
    double volume = 0.0;
    for (uint32_t t = 0; t < nt; t++) {
        const double *a = v + 3 * idx[3 * t], *b = v + 3 * idx[3 * t + 1], *c = v + 3 * idx[3 * t + 2];
        double e1[3], e2[3], n[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = b[k] - a[k];
            e2[k] = c[k] - a[k];
        }
        n[0] = e1[1] * e2[2] - e1[2] * e2[1];
        n[1] = e1[2] * e2[0] - e1[0] * e2[2];
        n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        volume += a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2]) +
                  a[2] * (b[0] * c[1] - b[1] * c[0]);
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                sum[3 * idx[3 * t + j] + k] += n[k];
    }
    *flip = volume < 0.0;
    for (uint32_t i = 0; i < nv; i++) {
        memcpy(keys[i].p, v + 3 * i, sizeof keys[i].p);
        keys[i].index = i;
    }
    qsort(keys, nv, sizeof *keys, by_position);
    for (uint32_t g = 0; g < nv;) {
        uint32_t end = g + 1;
        while (end < nv && memcmp(keys[end].p, keys[g].p, sizeof keys[g].p) == 0)
            end++;
        for (uint32_t i = g; i < end; i++) {
            const double *ni = sum + 3 * keys[i].index;
            double li = length3(ni), acc[3] = {0.0, 0.0, 0.0};
            for (uint32_t j = g; j < end; j++) {
                const double *nj = sum + 3 * keys[j].index;
                double lj = length3(nj);
                bool near = i == j || (li > 0.0 && lj > 0.0 &&
                                       (ni[0] * nj[0] + ni[1] * nj[1] + ni[2] * nj[2]) > SMOOTH_COS * li * lj);
                if (near)
                    for (int k = 0; k < 3; k++)
                        acc[k] += nj[k];
            }
            double len = length3(acc), s = *flip ? -1.0 : 1.0;
            double *o = out + 3 * keys[i].index;
            for (int k = 0; k < 3; k++)
                o[k] = len > 0.0 ? s * acc[k] / len : (k == 1 ? 1.0 : 0.0);
        }
        g = end;
    }
    free(sum);
    free(keys);
    return true;
}

/* Builds and uploads the mesh of shape s into entry e; false when out of
 * memory. */
static bool build_entry(q_renderer *r, q_body_cache *c, body_entry *e, const q_collider *s)
{
    double *v = NULL;
    uint32_t *idx = NULL, nv = 0, nt = 0;
    if (!q_collider_triangles(s, &v, &nv, &idx, &nt))
        return false;
    double *normals = malloc((size_t)(nv ? nv : 1) * 3 * sizeof *normals);
    body_vertex *bv = malloc((size_t)(nv ? nv : 1) * sizeof *bv);
    bool flip = false;
    bool ok = normals && bv && vertex_normals(v, nv, idx, nt, normals, &flip) &&
              arena_reserve(r, c, nv, 3 * nt);
    if (ok) {
        double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0};
        for (uint32_t i = 0; i < nv; i++) {
            for (int k = 0; k < 3; k++) {
                bv[i].position[k] = (float)v[3 * i + k];
                lo[k] = i == 0 || v[3 * i + k] < lo[k] ? v[3 * i + k] : lo[k];
                hi[k] = i == 0 || v[3 * i + k] > hi[k] ? v[3 * i + k] : hi[k];
            }
            bv[i].normal = pack_normal(normals + 3 * i);
        }
        double r2 = 0.0;
        for (int k = 0; k < 3; k++)
            e->center[k] = (float)(0.5 * (lo[k] + hi[k]));
        for (uint32_t i = 0; i < nv; i++) {
            double d2 = 0.0;
            for (int k = 0; k < 3; k++)
                d2 += (v[3 * i + k] - e->center[k]) * (v[3 * i + k] - e->center[k]);
            r2 = d2 > r2 ? d2 : r2;
        }
        e->radius = (float)sqrt(r2) * 1.001f + 1e-4f;
        if (flip) /* counter-clockwise seen from outside, for back-face culling */
            for (uint32_t t = 0; t < nt; t++) {
                uint32_t tmp = idx[3 * t + 1];
                idx[3 * t + 1] = idx[3 * t + 2];
                idx[3 * t + 2] = tmp;
            }
        e->first_vertex = c->vertex_used;
        e->vertex_count = nv;
        e->first_index = c->index_used;
        e->index_count = 3 * nt;
        if (nv)
            glNamedBufferSubData(c->vertices, (GLintptr)e->first_vertex * (GLintptr)sizeof(body_vertex),
                                 (GLsizeiptr)nv * (GLsizeiptr)sizeof(body_vertex), bv);
        if (nt)
            glNamedBufferSubData(c->indices, (GLintptr)e->first_index * (GLintptr)sizeof(uint32_t),
                                 (GLsizeiptr)nt * 3 * (GLsizeiptr)sizeof(uint32_t), idx);
        c->vertex_used += nv;
        c->index_used += 3 * nt;
        c->vertex_live += nv;
        c->index_live += 3 * nt;
    }
    free(normals);
    free(bv);
    q_free(v, (size_t)nv * 3 * sizeof(double));
    q_free(idx, (size_t)nt * 3 * sizeof(uint32_t));
    return ok;
}

/* ---- drawing ---- */

static bool grow(void **data, size_t *capacity, size_t need, size_t item)
{
    if (need <= *capacity)
        return true;
    size_t cap = *capacity ? *capacity : 64;
    while (cap < need)
        cap *= 2;
    void *grown = realloc(*data, cap * item);
    if (!grown)
        return false;
    *data = grown;
    *capacity = cap;
    return true;
}

/* Row-major 3x4 model matrix of a placement. */
static void model_rows(const q_xform *x, float m[12])
{
    double qx = x->q[0], qy = x->q[1], qz = x->q[2], qw = x->q[3];
    double rot[9] = {
        1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw),     2 * (qx * qz + qy * qw),
        2 * (qx * qy + qz * qw),     1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw),
        2 * (qx * qz - qy * qw),     2 * (qy * qz + qx * qw),     1 - 2 * (qx * qx + qy * qy),
    };
    for (int row = 0; row < 3; row++) {
        for (int k = 0; k < 3; k++)
            m[4 * row + k] = (float)rot[3 * row + k];
        m[4 * row + 3] = (float)x->p[row];
    }
}

static int nearer_first(const void *pa, const void *pb)
{
    const sorted_command *a = pa, *b = pb;
    if (a->distance2 != b->distance2)
        return a->distance2 < b->distance2 ? -1 : 1;
    return a->command.base_instance < b->command.base_instance ? -1 : 1;
}

static bool sphere_visible(const float planes[6][4], const float c[3], float radius)
{
    for (int i = 0; i < 6; i++)
        if (planes[i][0] * c[0] + planes[i][1] * c[1] + planes[i][2] * c[2] + planes[i][3] < -radius)
            return false;
    return true;
}

bool q_body_draw(q_renderer *r, q_body_cache **cache, q_world *w, const q_body_view *view, char *err,
                 size_t err_size)
{
    const q_bodies *b = q_world_bodies(w);
    size_t count = b ? q_bodies_count(b) : 0;
    q_body_cache *c = *cache;
    if (count == 0 && !c)
        return true;
    if (!c) {
        c = *cache = calloc(1, sizeof *c);
        if (!c) {
            snprintf(err, err_size, "out of memory for the body meshes");
            return false;
        }
    }
    if (!grow((void **)&r->body_handles, &r->body_handle_capacity, count, sizeof *r->body_handles) ||
        !grow((void **)&r->body_instances, &r->body_draw_capacity, count, sizeof(body_instance)) ||
        !grow((void **)&r->body_commands, &r->body_command_capacity, count, sizeof(sorted_command))) {
        snprintf(err, err_size, "out of memory for drawing %zu bodies", count);
        return false;
    }
    if (count)
        count = q_bodies_list(b, r->body_handles, count);

    /* Meshes of bodies no longer listed (or whose slot now holds another
     * body) are freed first, and their garbage is repacked away once it
     * outweighs the live meshes, before new meshes are added. */
    for (size_t i = 0; i < count; i++) {
        q_handle h = r->body_handles[i];
        uint32_t slot = q_handle_slot(h);
        if (slot < c->entry_capacity && c->entries[slot].generation == h.generation)
            c->entries[slot].seen = r->frame;
    }
    for (size_t s = 0; s < c->entry_capacity; s++)
        if (c->entries[s].generation && c->entries[s].seen != r->frame)
            free_entry(c, &c->entries[s]);
    size_t garbage = (size_t)(c->vertex_used - c->vertex_live) * sizeof(body_vertex) +
                     (size_t)(c->index_used - c->index_live) * sizeof(uint32_t);
    size_t live = (size_t)c->vertex_live * sizeof(body_vertex) + (size_t)c->index_live * sizeof(uint32_t);
    if (garbage > REPACK_GARBAGE_BYTES && garbage > live)
        repack(r, c, 2 * c->vertex_live, 2 * c->index_live);

    bool ok = true;
    body_instance *inst = r->body_instances;
    sorted_command *cmd = r->body_commands;
    size_t drawn = 0;
    for (size_t i = 0; i < count; i++) {
        q_handle h = r->body_handles[i];
        uint32_t slot = q_handle_slot(h);
        if (slot >= c->entry_capacity) {
            size_t old = c->entry_capacity;
            if (!grow((void **)&c->entries, &c->entry_capacity, (size_t)slot + 1, sizeof *c->entries)) {
                ok = false;
                continue;
            }
            memset(c->entries + old, 0, (c->entry_capacity - old) * sizeof *c->entries);
        }
        body_entry *e = &c->entries[slot];
        if (e->generation != h.generation) {
            const q_collider *shape = q_body_shape(b, h);
            if (!shape || !build_entry(r, c, e, shape)) {
                ok = false;
                continue;
            }
            e->generation = h.generation;
        }
        e->seen = r->frame;
        q_xform x;
        q_body_state st;
        if (!q_body_xform(b, h, &x) || !q_body_get(b, h, &st) || e->index_count == 0)
            continue;
        body_instance *in = &inst[drawn];
        model_rows(&x, in->model);
        float wc[3];
        for (int row = 0; row < 3; row++)
            wc[row] = in->model[4 * row] * e->center[0] + in->model[4 * row + 1] * e->center[1] +
                      in->model[4 * row + 2] * e->center[2] + in->model[4 * row + 3];
        if (!sphere_visible(view->planes, wc, e->radius))
            continue;
        const q_material *m = q_material_get(st.material);
        float shade = st.sleeping ? SLEEP_SHADE : 1.0f;
        for (int k = 0; k < 3; k++)
            in->color[k] = (m ? m->color[k] : 0.5f) * shade;
        in->color[3] = 1.0f;
        float d2 = 0.0f;
        for (int k = 0; k < 3; k++)
            d2 += (wc[k] - view->camera[k]) * (wc[k] - view->camera[k]);
        cmd[drawn].distance2 = d2;
        cmd[drawn].command =
            (draw_command){e->index_count, 1, e->first_index, (int32_t)e->first_vertex, (uint32_t)drawn};
        r->stats.triangles += e->index_count / 3;
        drawn++;
    }
    if (c->vertex_live == 0 && c->index_live == 0 && c->vertices) {
        /* No body left: give the arena back. */
        r->stats.gpu_bytes -= arena_bytes(c);
        GLuint buffers[] = {c->vertices, c->indices};
        glDeleteBuffers(2, buffers);
        c->vertices = c->indices = 0;
        c->vertex_capacity = c->vertex_used = c->index_capacity = c->index_used = 0;
    }
    if (!ok)
        snprintf(err, err_size, "out of memory for body meshes (some bodies are not drawn)");
    r->stats.bodies += (int)drawn;
    if (drawn == 0)
        return ok;

    glNamedBufferData(r->body_instance_buffer, (GLsizeiptr)(drawn * sizeof(body_instance)), inst, GL_STREAM_DRAW);
    /* Near to far, so the depth test rejects hidden fragments before
     * shading; then packed in place as plain commands. */
    qsort(cmd, drawn, sizeof *cmd, nearer_first);
    draw_command *packed = (draw_command *)(void *)cmd;
    for (size_t i = 0; i < drawn; i++)
        memmove(&packed[i], &cmd[i].command, sizeof packed[i]);
    glNamedBufferData(r->body_command_buffer, (GLsizeiptr)(drawn * sizeof(draw_command)), packed, GL_STREAM_DRAW);
    glVertexArrayVertexBuffer(r->body_vao, 0, c->vertices, 0, sizeof(body_vertex));
    glVertexArrayVertexBuffer(r->body_vao, 1, r->body_instance_buffer, 0, sizeof(body_instance));
    glVertexArrayElementBuffer(r->body_vao, c->indices);
    glBindVertexArray(r->body_vao);
    glUseProgram(r->body_program);
    glUniformMatrix4fv(r->body_view_proj, 1, GL_FALSE, view->view_proj);
    glUniform3fv(r->body_camera, 1, view->camera);
    glUniform3fv(r->body_fog_color, 1, view->fog_color);
    glUniform1f(r->body_fog_density, view->fog_density);
    float sun[3];
    q_render_sun(sun);
    glUniform3fv(r->body_sun, 1, sun);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDepthMask(GL_TRUE);
    glEnable(GL_CULL_FACE);
    glCullFace(GL_BACK);
    glFrontFace(GL_CCW);
    glDisable(GL_BLEND);
    glBindBuffer(GL_DRAW_INDIRECT_BUFFER, r->body_command_buffer);
    glMultiDrawElementsIndirect(GL_TRIANGLES, GL_UNSIGNED_INT, NULL, (GLsizei)drawn, 0);
    glBindBuffer(GL_DRAW_INDIRECT_BUFFER, 0);
    glDisable(GL_CULL_FACE);
    glBindVertexArray(0);
    glUseProgram(0);
    r->stats.draw_calls++;
    return ok;
}

/* ---- contacts ---- */

void q_body_draw_contacts(q_renderer *r, q_world *w)
{
    const q_bodies *b = q_world_bodies(w);
    if (!b)
        return;
    size_t n = q_bodies_contacts(b, NULL, 0);
    if (n == 0 || !grow((void **)&r->body_contacts, &r->body_contact_capacity, n, sizeof(q_debug_contact)))
        return;
    n = q_bodies_contacts(b, r->body_contacts, n);
    /* Sizes in voxels, so the marks read the same at any voxel size. */
    double voxel = q_world_get_def(w)->voxel_size;
    float mark = (float)(0.15 * voxel), normal = (float)(0.6 * voxel);
    static const float touching[4] = {1.0f, 0.15f, 0.1f, 1.0f}, terrain[4] = {1.0f, 0.6f, 0.05f, 1.0f},
                       speculative[4] = {0.55f, 0.55f, 0.6f, 0.8f}, normal_color[4] = {0.2f, 1.0f, 0.3f, 1.0f};
    for (size_t i = 0; i < n; i++) {
        const q_debug_contact *k = &r->body_contacts[i];
        const float *col = k->separation > 0.0 ? speculative : k->terrain ? terrain : touching;
        float p[3], a[3], e[3];
        for (int j = 0; j < 3; j++)
            p[j] = (float)k->position[j];
        for (int axis = 0; axis < 3; axis++) {
            memcpy(a, p, sizeof a);
            memcpy(e, p, sizeof e);
            a[axis] -= mark;
            e[axis] += mark;
            q_overlay_top_line(r, a, e, col);
        }
        for (int j = 0; j < 3; j++)
            e[j] = p[j] + normal * (float)k->normal[j];
        q_overlay_top_line(r, p, e, k->separation > 0.0 ? speculative : normal_color);
    }
    r->stats.contacts += (int)n;
}
