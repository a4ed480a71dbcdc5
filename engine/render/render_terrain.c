/* Terrain drawing: per-world caches of 32^3 render chunk meshes, kept in
 * step with the voxels through the terrain's change log.
 *
 * Dirty tracking. A chunk's mesh (mesh/dc.h) holds the quads of edges that
 * start at its samples, built from vertices whose cells reach two samples
 * beyond the chunk on every side. So a changed box, grown by two samples,
 * dirties every render chunk it overlaps; when the log no longer reaches
 * back to the version last meshed, every chunk is dirty. Chunks are created
 * in the cache when they are first dirtied and removed, GPU buffers and all,
 * when meshing leaves them empty.
 *
 * Meshing. All dirty chunks of a draw are sorted by (z, y, x) and meshed in
 * parallel (core/jobs.h), each into its own slot; the main thread then
 * uploads the slots in that order. One GL buffer per chunk and surface holds
 * the vertices followed by the indices, 16-bit ones unless the chunk has
 * more than 65536 vertices (real terrain stays far below).
 *
 * Baking (geom/bake.h, when a draw asks for it). While baking, each chunk
 * keeps a CPU copy of its solid mesh blob. After meshing, every chunk marked
 * for it is baked: one scene (two grid sorts) is built over the triangles of
 * the chunks within the rays' reach of the vertices to bake, culled to what
 * those rays can reach; then the chunks are baked in parallel, each writing
 * the sun and ambient bytes of its own copy, and uploaded in (z, y, x)
 * order. A vertex's light depends only on its position, its normal and the
 * triangles within reach, so it is the same however chunks are grouped and
 * whichever draw bakes it.
 *
 * What is baked: every vertex of a chunk whose solid mesh is new (remeshed,
 * or bake_def changed), and, after an edit, the vertices of other chunks
 * whose rays can reach the triangles the edit may have changed: those lie in
 * the changed box grown by CHANGE_REACH_VOXELS, and q_bake_box_reaches (per
 * chunk, on the change log) and q_bake_vertices_reaching (per vertex) pick
 * the vertices conservatively. That is mostly terrain below the edit and
 * away from the sun, up to sun_distance, plus ao_radius all round.
 *
 * Why one scene per draw over the neighbourhood, not a whole-world scene
 * rebuilt after edits: building the two grid sorts costs about 1 us per
 * triangle on one thread (0.4 s for a 192x64x192 caves world of 350k), and
 * an edit needs only the few tens of thousands of triangles around it. For
 * the first bake of a world the neighbourhood is the whole world anyway.
 *
 * Drawing. Solid chunks inside the view frustum first (back faces culled),
 * then the world's bodies (render_bodies.c), then the translucent water
 * surface of every chunk, far to near, blended and without depth writes,
 * then the optional wireframe and chunk boxes.
 */
#include "render/render_internal.h"

#include <cglm/cglm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hashmap.h"
#include "geom/bake.h"
#include "mesh/clipmap.h"
#include "mesh/dc.h"
#include "voxel/material.h"
#include "world/world.h"

#define SURFACES 2     /* Q_SURFACE_SOLID, Q_SURFACE_WATER */
#define TILE_VOXELS 4  /* one texture tile spans this many voxels */
#define DEFAULT_FOG_VOXELS 400.0
#define BOX_HIGHLIGHT_FRAMES 30 /* chunk boxes show remeshes after edits this long */
/* Finest cell of the bake scene's grid sorts, in voxels: finer cells cost
 * more to build than they save on rays (measured on caves terrain). */
#define BAKE_CELL_VOXELS 2.0f
/* Voxels around a changed box within which triangles may have changed: a
 * vertex depends on the samples two voxels either side of its cell, and a
 * triangle spans a cell more. */
#define CHANGE_REACH_VOXELS 4.0

/* Towards the sun; the shaders get it as u_sun. */
static const float SUN_DIR[3] = {-0.45f, 0.75f, -0.35f};

/* A mesh packed for upload: vertices, then indices. */
typedef struct mesh_blob {
    uint8_t *data;          /* malloc'd; NULL when empty */
    size_t bytes, index_offset;
    uint32_t index_count;
    GLenum index_type;
} mesh_blob;

typedef struct chunk_mesh {
    GLuint buffer;          /* vertices, then indices; 0 when empty */
    uint32_t index_count;
    GLenum index_type;      /* GL_UNSIGNED_SHORT unless over 65536 vertices */
    size_t index_offset;    /* bytes into buffer */
    size_t bytes;
} chunk_mesh;

typedef struct render_chunk {
    int32_t c[3];           /* chunk coordinates: voxels [32c, 32c + 32) */
    chunk_mesh mesh[SURFACES];
    mesh_blob solid;        /* while baking: the solid mesh as uploaded (NULL data when empty) */
    bool dirty;
    bool rebake;            /* while baking: solid's light is out of date */
    bool relight_all;       /* rebake every vertex (new mesh), else those reaching relight_lo..hi */
    float relight_lo[3], relight_hi[3]; /* metres: where triangles changed since the last bake */
    uint64_t meshed_frame;
} render_chunk;

struct q_world_cache {
    uint64_t key;
    uint64_t last_frame;    /* renderer frame of the last draw */
    uint64_t version;       /* terrain version the meshes are of */
    bool valid;             /* false: everything must be marked dirty */
    uint64_t rebuilt_frame; /* frame everything was last marked dirty */
    float scale;            /* voxel_size the meshes were built with */
    bool baking;            /* chunks keep CPU copies and are baked with bake_def */
    q_bake_def bake_def;
    q_hashmap map;          /* chunk key -> index into chunks */
    render_chunk *chunks;
    size_t count, capacity;
    /* Clipmap LOD (mesh/clipmap.h): while the world has a viewer, one mesh of
     * the active chunk meshes and seams replaces the solid chunk meshes. The
     * clipmap rebuilds it on its worker thread when levels or terrain change;
     * the old one is drawn until a new one is published and uploaded. */
    chunk_mesh lod_mesh;
    bool lod_valid, lod_coloured;
    uint64_t lod_serial; /* q_clipmap_result.serial of the uploaded mesh */
    q_body_cache *bodies;   /* the world's body meshes (render_bodies.c); NULL until a body is seen */
};

/* ---- shaders ---- */

static const char *const VERTEX_SRC =
    "layout(location = 0) in vec3 a_position;\n"
    "layout(location = 1) in vec4 a_normal;\n"
    "layout(location = 2) in uint a_material;\n"
    "layout(location = 3) in vec2 a_bake;\n"
    "uniform mat4 u_view_proj;\n"
    "uniform float u_bake;\n"
    "out vec3 v_position;\n"
    "out vec3 v_normal;\n"
    "out vec2 v_bake;\n"
    "flat out uint v_material;\n"
    "void main() {\n"
    "    v_position = a_position;\n"
    "    v_normal = a_normal.xyz;\n"
    "    v_bake = mix(vec2(1.0), a_bake, u_bake);\n"
    "    v_material = a_material;\n"
    "    gl_Position = u_view_proj * vec4(a_position, 1.0);\n"
    "}\n";

/* Lighting is done in linear RGB and written out gamma encoded (the default
 * framebuffer is not sRGB). Fog reaches half strength at 1 / u_fog_density
 * metres and fades to the clear colour, so far terrain melts into the sky.
 * v_bake scales the sun (x: visibility) and ambient (y: occlusion) terms;
 * it is 1 unless the chunks are baked. */
static const char *const FRAGMENT_SRC =
    "in vec3 v_position;\n"
    "in vec3 v_normal;\n"
    "in vec2 v_bake;\n"
    "flat in uint v_material;\n"
    "out vec4 o_color;\n"
    "layout(binding = 0) uniform sampler2DArray u_textures;\n"
    "layout(std430, binding = 0) readonly buffer Steep { uint steep_layer[]; };\n"
    "uniform vec3 u_camera;\n"
    "uniform vec3 u_fog_color;\n"
    "uniform float u_fog_density;\n"
    "uniform float u_tile;\n"
    "uniform float u_alpha;\n"
    "uniform vec4 u_color;\n"
    "uniform vec3 u_sun;\n"
    "const vec3 SUN = vec3(0.9, 0.85, 0.75);\n"
    "const vec3 SKY_AMBIENT = vec3(0.26, 0.31, 0.4);\n"
    "const vec3 GROUND_AMBIENT = vec3(0.12, 0.1, 0.08);\n"
    "vec3 unit_normal() {\n"
    "    vec3 n = dot(v_normal, v_normal) > 1e-8 ? normalize(v_normal) : vec3(0.0, 1.0, 0.0);\n"
    "    return gl_FrontFacing ? n : -n;\n"
    "}\n"
    "vec3 ambient(vec3 n) { return mix(GROUND_AMBIENT, SKY_AMBIENT, 0.5 + 0.5 * n.y); }\n"
    "vec3 fogged(vec3 c) {\n"
    "    float d = length(v_position - u_camera) * u_fog_density;\n"
    "    return mix(c, u_fog_color, 1.0 - exp2(-d * d));\n"
    "}\n"
    "vec4 encode(vec3 c, float a) { return vec4(pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)), a); }\n"
    "#if defined(SOLID)\n"
    /* Triplanar mapping with the blend weights of seed 002; the top
     * projection of grass-like materials turns to their steep layer (rock) as
     * the slope grows, the side projections always show it. */
    "vec3 albedo(vec3 n, vec3 p) {\n"
    "    uint layer = v_material;\n"
    "    uint steep = layer < uint(steep_layer.length()) ? steep_layer[layer] : layer;\n"
    "    vec3 w = max((abs(n) - 0.2) * 7.0, 0.0);\n"
    "    w /= max(w.x + w.y + w.z, 1e-4);\n"
    "    vec3 t = p * u_tile;\n"
    "    vec3 c = vec3(0.0);\n"
    "    if (w.x > 0.0) c += w.x * texture(u_textures, vec3(t.zy, float(steep))).rgb;\n"
    "    if (w.z > 0.0) c += w.z * texture(u_textures, vec3(t.xy, float(steep))).rgb;\n"
    "    if (w.y > 0.0) {\n"
    "        vec3 top = texture(u_textures, vec3(t.xz, float(layer))).rgb;\n"
    "        if (steep != layer) {\n"
    "            float flat_ground = smoothstep(0.7, 0.85, n.y);\n"
    "            top = mix(texture(u_textures, vec3(t.xz, float(steep))).rgb, top, flat_ground);\n"
    "        }\n"
    "        c += w.y * top;\n"
    "    }\n"
    "    return c;\n"
    "}\n"
    "void main() {\n"
    "    vec3 n = unit_normal();\n"
    "    vec3 light = SUN * (max(dot(n, u_sun), 0.0) * v_bake.x) + ambient(n) * v_bake.y;\n"
    "    o_color = encode(fogged(albedo(n, v_position) * light), 1.0);\n"
    "}\n"
    "#elif defined(WATER)\n"
    /* Translucent, more opaque and sky-tinted at grazing angles (Schlick's
     * Fresnel term), with a sun highlight. */
    "void main() {\n"
    "    vec3 n = unit_normal();\n"
    "    vec3 v = normalize(u_camera - v_position);\n"
    "    vec3 base = texture(u_textures, vec3(v_position.xz * u_tile * 0.5, float(v_material))).rgb;\n"
    "    float fresnel = pow(1.0 - max(dot(n, v), 0.0), 5.0);\n"
    "    vec3 c = base * (0.6 * SUN * max(dot(n, u_sun), 0.0) + ambient(n));\n"
    "    c = mix(c, u_fog_color, 0.5 * fresnel);\n"
    "    vec3 h = normalize(u_sun + v);\n"
    "    c += SUN * 0.7 * pow(max(dot(n, h), 0.0), 120.0);\n"
    "    o_color = encode(fogged(c), mix(u_alpha, 1.0, 0.8 * fresnel));\n"
    "}\n"
    "#else\n"
    "void main() { o_color = u_color; }\n"
    "#endif\n";

static bool make_program(q_terrain_program *p, const char *name, const char *define, char *err,
                         size_t err_size)
{
    p->program = q_gl_program(name, VERTEX_SRC, FRAGMENT_SRC, define, err, err_size);
    if (!p->program)
        return false;
    p->view_proj = glGetUniformLocation(p->program, "u_view_proj");
    p->camera = glGetUniformLocation(p->program, "u_camera");
    p->fog_color = glGetUniformLocation(p->program, "u_fog_color");
    p->fog_density = glGetUniformLocation(p->program, "u_fog_density");
    p->tile = glGetUniformLocation(p->program, "u_tile");
    p->alpha = glGetUniformLocation(p->program, "u_alpha");
    p->color = glGetUniformLocation(p->program, "u_color");
    p->sun = glGetUniformLocation(p->program, "u_sun");
    p->bake = glGetUniformLocation(p->program, "u_bake");
    return true;
}

bool q_terrain_draw_init(q_renderer *r, char *err, size_t err_size)
{
    if (!make_program(&r->solid, "terrain", "#define SOLID\n", err, err_size) ||
        !make_program(&r->water, "water", "#define WATER\n", err, err_size) ||
        !make_program(&r->wire, "wireframe", "#define WIRE\n", err, err_size))
        return false;
    glCreateVertexArrays(1, &r->terrain_vao);
    GLuint vao = r->terrain_vao;
    glEnableVertexArrayAttrib(vao, 0);
    glVertexArrayAttribFormat(vao, 0, 3, GL_FLOAT, GL_FALSE, offsetof(q_terrain_vertex, position));
    glEnableVertexArrayAttrib(vao, 1);
    glVertexArrayAttribFormat(vao, 1, 4, GL_INT_2_10_10_10_REV, GL_TRUE, offsetof(q_terrain_vertex, normal));
    glEnableVertexArrayAttrib(vao, 2);
    glVertexArrayAttribIFormat(vao, 2, 1, GL_UNSIGNED_BYTE, offsetof(q_terrain_vertex, material));
    glEnableVertexArrayAttrib(vao, 3);
    glVertexArrayAttribFormat(vao, 3, 2, GL_UNSIGNED_BYTE, GL_TRUE, offsetof(q_terrain_vertex, sun));
    for (GLuint a = 0; a < 4; a++)
        glVertexArrayAttribBinding(vao, a, 0);
    return true;
}

/* ---- caches ---- */

static uint64_t chunk_key(const int32_t c[3])
{
    const int64_t bias = 1 << 20; /* chunk coordinates lie within +-2^19 */
    return (uint64_t)(c[0] + bias) | (uint64_t)(c[1] + bias) << 21 | (uint64_t)(c[2] + bias) << 42;
}

static void free_mesh(q_renderer *r, chunk_mesh *m)
{
    if (m->buffer)
        glDeleteBuffers(1, &m->buffer);
    r->stats.gpu_bytes -= (int64_t)m->bytes;
    memset(m, 0, sizeof *m);
}

static void free_blob(mesh_blob *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static void free_cache(q_renderer *r, q_world_cache *c)
{
    for (size_t i = 0; i < c->count; i++) {
        for (int s = 0; s < SURFACES; s++)
            free_mesh(r, &c->chunks[i].mesh[s]);
        free_blob(&c->chunks[i].solid);
    }
    free_mesh(r, &c->lod_mesh);
    q_body_cache_free(r, c->bodies);
    free(c->chunks);
    q_hashmap_free(&c->map);
    free(c);
}

void q_terrain_draw_evict(q_renderer *r, uint64_t frames)
{
    int kept = 0;
    for (int i = 0; i < r->world_count; i++) {
        q_world_cache *c = r->worlds[i];
        if (r->frame - c->last_frame > frames)
            free_cache(r, c);
        else
            r->worlds[kept++] = c;
    }
    r->world_count = kept;
}

void q_terrain_draw_destroy(q_renderer *r)
{
    for (int i = 0; i < r->world_count; i++)
        free_cache(r, r->worlds[i]);
    free(r->worlds);
    r->worlds = NULL;
    r->world_count = r->world_capacity = 0;
    if (r->terrain_vao)
        glDeleteVertexArrays(1, &r->terrain_vao);
    q_terrain_program *programs[] = {&r->solid, &r->water, &r->wire};
    for (int i = 0; i < 3; i++)
        if (programs[i]->program)
            glDeleteProgram(programs[i]->program);
}

static q_world_cache *find_cache(q_renderer *r, uint64_t key)
{
    for (int i = 0; i < r->world_count; i++)
        if (r->worlds[i]->key == key)
            return r->worlds[i];
    if (r->world_count == r->world_capacity) {
        int cap = r->world_capacity ? 2 * r->world_capacity : 4;
        q_world_cache **grown = realloc(r->worlds, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        r->worlds = grown;
        r->world_capacity = cap;
    }
    q_world_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->key = key;
    r->worlds[r->world_count++] = c;
    return c;
}

/* Marks chunk c dirty, adding it to the cache if needed; false when out of memory. */
static bool mark_chunk(q_world_cache *c, const int32_t cc[3])
{
    uint64_t key = chunk_key(cc);
    uint32_t at = q_hashmap_get(&c->map, key);
    if (at != Q_HASHMAP_EMPTY) {
        c->chunks[at].dirty = true;
        return true;
    }
    if (c->count == c->capacity) {
        size_t cap = c->capacity ? 2 * c->capacity : 64;
        render_chunk *grown = realloc(c->chunks, cap * sizeof *grown);
        if (!grown)
            return false;
        c->chunks = grown;
        c->capacity = cap;
    }
    if (!q_hashmap_set(&c->map, key, (uint32_t)c->count))
        return false;
    render_chunk *ch = &c->chunks[c->count++];
    memset(ch, 0, sizeof *ch);
    memcpy(ch->c, cc, sizeof ch->c);
    ch->dirty = true;
    return true;
}

static int32_t floor_div_chunk(int64_t v)
{
    return (int32_t)(v >= 0 ? v / Q_CHUNK_SIZE : -((-v + Q_CHUNK_SIZE - 1) / Q_CHUNK_SIZE));
}

typedef struct mark_ctx {
    q_world_cache *cache;
    bool failed;
    float reach_lo[3], reach_hi[3]; /* q_bake_reach of the cache's bake_def, when baking */
} mark_ctx;

/* The box (metres) holding the vertices of render chunk cc. */
static void chunk_vertex_box(const int32_t cc[3], float scale, float lo[3], float hi[3])
{
    for (int a = 0; a < 3; a++) {
        lo[a] = ((float)cc[a] * Q_CHUNK_SIZE - 0.5f) * scale;
        hi[a] = ((float)cc[a] * Q_CHUNK_SIZE + Q_CHUNK_SIZE + 0.5f) * scale;
    }
}

/* Render chunks whose vertices (in [32c - .5, 32c + 32.5] voxels) can lie
 * in the box [lo, hi] (voxels), as an inclusive range of chunk coordinates,
 * clamped to where chunk keys work. */
static void chunks_holding(const double lo[3], const double hi[3], int32_t clo[3], int32_t chi[3])
{
    const double limit = (double)(1 << 19) - 1;
    for (int a = 0; a < 3; a++) {
        double l = ceil((lo[a] - Q_CHUNK_SIZE - 0.5) / Q_CHUNK_SIZE);
        double h = floor((hi[a] + 0.5) / Q_CHUNK_SIZE);
        clo[a] = (int32_t)(l < -limit ? -limit : l > limit ? limit : l);
        chi[a] = (int32_t)(h < -limit ? -limit : h > limit ? limit : h);
    }
}

typedef void (*chunk_fn)(q_world_cache *c, render_chunk *ch, void *ud);

/* Calls fn for every cached chunk with coordinates in [lo, hi] (inclusive):
 * by lookups, or by a scan of the cache when the range holds more
 * coordinates than the cache holds chunks (long bake reaches, huge edits). */
static void each_cached_chunk(q_world_cache *c, const int32_t lo[3], const int32_t hi[3], chunk_fn fn, void *ud)
{
    double volume = 1.0;
    for (int a = 0; a < 3; a++)
        volume *= hi[a] < lo[a] ? 0.0 : (double)hi[a] - lo[a] + 1.0;
    if (volume > (double)c->count) {
        for (size_t i = 0; i < c->count; i++) {
            const int32_t *cc = c->chunks[i].c;
            if (cc[0] >= lo[0] && cc[0] <= hi[0] && cc[1] >= lo[1] && cc[1] <= hi[1] && cc[2] >= lo[2] &&
                cc[2] <= hi[2])
                fn(c, &c->chunks[i], ud);
        }
        return;
    }
    int32_t cc[3];
    for (cc[2] = lo[2]; cc[2] <= hi[2]; cc[2]++)
        for (cc[1] = lo[1]; cc[1] <= hi[1]; cc[1]++)
            for (cc[0] = lo[0]; cc[0] <= hi[0]; cc[0]++) {
                uint32_t at = q_hashmap_get(&c->map, chunk_key(cc));
                if (at != Q_HASHMAP_EMPTY)
                    fn(c, &c->chunks[at], ud);
            }
}

/* each_cached_chunk callback: marks a chunk for relighting when its
 * vertices' rays can reach the box (metres) at ud. */
static void relight_chunk(q_world_cache *c, render_chunk *ch, void *ud)
{
    const float *t = ud; /* lo[3], hi[3] */
    if (ch->rebake && ch->relight_all)
        return;
    float clo[3], chi[3];
    chunk_vertex_box(ch->c, c->scale, clo, chi);
    if (!q_bake_box_reaches(&c->bake_def, clo, chi, t, t + 3))
        return;
    for (int a = 0; a < 3; a++) {
        ch->relight_lo[a] = ch->rebake ? fminf(ch->relight_lo[a], t[a]) : t[a];
        ch->relight_hi[a] = ch->rebake ? fmaxf(ch->relight_hi[a], t[3 + a]) : t[3 + a];
    }
    ch->rebake = true;
}

/* Change-log callback: the box grown by the two samples a mesh vertex
 * reaches, mapped to render chunks to remesh. When baking, also the chunks
 * whose rays can reach what changed: they are relit. */
static void on_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    mark_ctx *m = ud;
    q_world_cache *c = m->cache;
    int32_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        if (box.max[a] <= box.min[a])
            return;
        lo[a] = floor_div_chunk((int64_t)box.min[a] - 2);
        hi[a] = floor_div_chunk((int64_t)box.max[a] - 1 + 2);
    }
    int32_t cc[3];
    for (cc[2] = lo[2]; cc[2] <= hi[2]; cc[2]++)
        for (cc[1] = lo[1]; cc[1] <= hi[1]; cc[1]++)
            for (cc[0] = lo[0]; cc[0] <= hi[0]; cc[0]++)
                if (!mark_chunk(c, cc))
                    m->failed = true;
    if (!c->baking)
        return;
    /* Triangles that changed lie in the box grown by CHANGE_REACH_VOXELS; a
     * vertex at p sees no further than [p + reach_lo, p + reach_hi], and
     * q_bake_box_reaches narrows that down per chunk. Only chunks in the
     * cache hold vertices. */
    double vlo[3], vhi[3];
    float changed[6]; /* lo, hi: metres */
    for (int a = 0; a < 3; a++) {
        vlo[a] = box.min[a] - CHANGE_REACH_VOXELS - m->reach_hi[a] / c->scale;
        vhi[a] = box.max[a] + CHANGE_REACH_VOXELS - m->reach_lo[a] / c->scale;
        changed[a] = (float)((box.min[a] - CHANGE_REACH_VOXELS) * c->scale);
        changed[3 + a] = (float)((box.max[a] + CHANGE_REACH_VOXELS) * c->scale);
    }
    chunks_holding(vlo, vhi, lo, hi);
    each_cached_chunk(c, lo, hi, relight_chunk, changed);
}

/* Everything dirty: the chunks held, and every render chunk whose mesh can
 * be non-empty, i.e. whose samples [32c, 32c + 33) touch a stored chunk. */
static bool mark_all(q_world_cache *c, const q_terrain *t)
{
    for (size_t i = 0; i < c->count; i++)
        c->chunks[i].dirty = true;
    size_t n = q_terrain_chunk_count(t);
    if (n == 0)
        return true;
    q_chunk_view *views = malloc(n * sizeof *views);
    if (!views)
        return false;
    q_terrain_chunk_views(t, views);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        for (int k = 0; k < 8 && ok; k++) {
            int32_t cc[3] = {views[i].cx - (k & 1), views[i].cy - ((k >> 1) & 1),
                             views[i].cz - ((k >> 2) & 1)};
            ok = mark_chunk(c, cc);
        }
    free(views);
    return ok;
}

/* ---- meshing ---- */

typedef struct mesh_slot {
    int32_t c[3];
    mesh_blob blob[SURFACES];
    bool failed;
} mesh_slot;

typedef struct mesh_job {
    const q_terrain *terrain;
    float scale;
    mesh_slot *slots;
} mesh_job;

static uint32_t pack_normal(const float *n)
{
    uint32_t out = 0;
    for (int k = 0; k < 3; k++) {
        float v = n[k] < -1.0f ? -1.0f : n[k] > 1.0f ? 1.0f : n[k];
        out |= ((uint32_t)(int32_t)lrintf(v * 511.0f) & 0x3ffu) << (10 * k);
    }
    return out;
}

/* Packs a mesher output into one upload blob: vertices (lit as open
 * ground), then indices. */
static bool pack(const q_dc_output *o, mesh_blob *b)
{
    if (o->index_count == 0)
        return true;
    bool small = o->vertex_count <= 65536;
    size_t vbytes = o->vertex_count * sizeof(q_terrain_vertex);
    size_t bytes = vbytes + o->index_count * (small ? sizeof(uint16_t) : sizeof(uint32_t));
    uint8_t *blob = malloc(bytes);
    if (!blob)
        return false;
    q_terrain_vertex *v = (q_terrain_vertex *)blob;
    for (size_t i = 0; i < o->vertex_count; i++) {
        memcpy(v[i].position, o->positions + 3 * i, sizeof v[i].position);
        v[i].normal = pack_normal(o->normals + 3 * i);
        v[i].material = o->materials[i];
        v[i].sun = v[i].ao = 255;
        v[i].pad = 0;
    }
    if (small) {
        uint16_t *idx = (uint16_t *)(blob + vbytes);
        for (size_t i = 0; i < o->index_count; i++)
            idx[i] = (uint16_t)o->indices[i];
    } else {
        memcpy(blob + vbytes, o->indices, o->index_count * sizeof(uint32_t));
    }
    b->index_type = small ? GL_UNSIGNED_SHORT : GL_UNSIGNED_INT;
    b->data = blob;
    b->bytes = bytes;
    b->index_offset = vbytes;
    b->index_count = (uint32_t)o->index_count;
    return true;
}

static void mesh_one(void *ctx, int index)
{
    mesh_job *job = ctx;
    mesh_slot *slot = &job->slots[index];
    q_box box;
    for (int a = 0; a < 3; a++) {
        /* The mesher needs two samples of margin inside the coordinate limits. */
        int64_t lo = (int64_t)slot->c[a] * Q_CHUNK_SIZE, hi = lo + Q_CHUNK_SIZE;
        const int64_t limit = Q_TERRAIN_LIMIT - 2;
        box.min[a] = (int32_t)(lo < -limit ? -limit : lo > limit ? limit : lo);
        box.max[a] = (int32_t)(hi < -limit ? -limit : hi > limit ? limit : hi);
    }
    size_t nv = q_dc_vertex_bound(box), ni = q_dc_index_bound(box);
    q_dc_output o = {
        .positions = malloc(nv * 3 * sizeof(float)),
        .normals = malloc(nv * 3 * sizeof(float)),
        .materials = malloc(nv),
        .indices = malloc(ni * sizeof(uint32_t)),
        .vertex_capacity = nv,
        .index_capacity = ni,
    };
    bool ok = nv == 0 || (o.positions && o.normals && o.materials && o.indices);
    for (int s = 0; s < SURFACES && ok && nv > 0; s++) {
        char err[128];
        ok = q_dc_mesh(job->terrain, box, s == 0 ? Q_SURFACE_SOLID : Q_SURFACE_WATER, job->scale, &o,
                       NULL, err, sizeof err) == Q_OK &&
             pack(&o, &slot->blob[s]);
    }
    slot->failed = !ok;
    free(o.positions);
    free(o.normals);
    free(o.materials);
    free(o.indices);
}

static int compare_chunks(const void *pa, const void *pb)
{
    const int32_t *a = pa, *b = pb; /* the leading c[3] of mesh_slot */
    for (int k = 2; k >= 0; k--)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void remove_chunk(q_world_cache *c, size_t i)
{
    q_hashmap_remove(&c->map, chunk_key(c->chunks[i].c));
    size_t last = c->count - 1;
    if (i != last) {
        c->chunks[i] = c->chunks[last];
        q_hashmap_set(&c->map, chunk_key(c->chunks[i].c), (uint32_t)i); /* replaces: never grows */
    }
    c->count--;
}

static void upload(q_renderer *r, chunk_mesh *m, const mesh_blob *b)
{
    if (!b->data) {
        free_mesh(r, m);
        return;
    }
    if (!m->buffer)
        glCreateBuffers(1, &m->buffer);
    glNamedBufferData(m->buffer, (GLsizeiptr)b->bytes, b->data, GL_STATIC_DRAW);
    r->stats.gpu_bytes += (int64_t)b->bytes - (int64_t)m->bytes;
    m->bytes = b->bytes;
    m->index_offset = b->index_offset;
    m->index_count = b->index_count;
    m->index_type = b->index_type;
}

/* Meshes every dirty chunk and uploads the results; false if any failed
 * (those stay dirty and are tried again next draw). While baking, a solid
 * mesh goes to the chunk's CPU copy instead, marked for baking. */
static bool remesh(q_renderer *r, q_world_cache *c, const q_terrain *t)
{
    size_t n = 0;
    for (size_t i = 0; i < c->count; i++)
        n += c->chunks[i].dirty;
    if (n == 0)
        return true;
    mesh_slot *slots = calloc(n, sizeof *slots);
    if (!slots)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->chunks[i].dirty)
            memcpy(slots[k++].c, c->chunks[i].c, sizeof slots->c);
    qsort(slots, n, sizeof *slots, compare_chunks);

    mesh_job job = {t, c->scale, slots};
    q_jobs_for(r->jobs, (int)n, mesh_one, &job);

    bool ok = true;
    for (size_t j = 0; j < n; j++) {
        mesh_slot *slot = &slots[j];
        render_chunk *ch = &c->chunks[q_hashmap_get(&c->map, chunk_key(slot->c))];
        if (slot->failed) {
            ok = false;
        } else {
            for (int s = 0; s < SURFACES; s++) {
                if (s == Q_SURFACE_SOLID && c->baking) {
                    free_blob(&ch->solid);
                    ch->solid = slot->blob[s];
                    memset(&slot->blob[s], 0, sizeof slot->blob[s]);
                    ch->rebake = ch->relight_all = true;
                } else {
                    upload(r, &ch->mesh[s], &slot->blob[s]);
                }
            }
            ch->dirty = false;
            ch->meshed_frame = r->frame;
            r->stats.remeshed++;
        }
        for (int s = 0; s < SURFACES; s++)
            free_blob(&slot->blob[s]);
    }
    free(slots);
    return ok;
}

/* Removes chunks left with nothing to draw or bake. */
static void remove_empty_chunks(q_world_cache *c)
{
    for (size_t i = c->count; i-- > 0;) {
        render_chunk *ch = &c->chunks[i];
        if (!ch->dirty && !ch->mesh[0].buffer && !ch->mesh[1].buffer && !ch->solid.data)
            remove_chunk(c, i);
    }
}

/* ---- baking ---- */

typedef struct bake_item {
    int32_t c[3];       /* leading, for compare_chunks */
    uint32_t index;     /* into the cache's chunks */
    float lo[3], hi[3]; /* metres: the vertices to bake lie in here */
    size_t baked;       /* vertices baked */
    bool failed;
} bake_item;

typedef struct bake_job {
    const q_bake_scene *scene;
    render_chunk *chunks;
    bake_item *items;
} bake_job;

static size_t blob_vertex_count(const mesh_blob *b)
{
    return b->index_offset / sizeof(q_terrain_vertex);
}

static uint32_t blob_index(const mesh_blob *b, size_t i)
{
    const uint8_t *p = b->data + b->index_offset;
    return b->index_type == GL_UNSIGNED_SHORT ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
}

/* Bakes one chunk's CPU copy in place: its vertices' sun and ao bytes. */
static void bake_one(void *ctx, int index)
{
    bake_job *job = ctx;
    bake_item *item = &job->items[index];
    const render_chunk *ch = &job->chunks[item->index];
    const mesh_blob *b = &ch->solid;
    size_t n = blob_vertex_count(b);
    q_terrain_vertex *v = (q_terrain_vertex *)b->data;
    float *p = calloc(n * 3, sizeof(float)), *nm = calloc(n * 3, sizeof(float));
    uint8_t *sun = malloc(n), *ao = malloc(n);
    bool ok = p && nm && sun && ao;
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            memcpy(p + 3 * i, v[i].position, sizeof v[i].position);
            /* GL_INT_2_10_10_10_REV, signed normalised: v / 511. */
            float len2 = 0.0f, *ni = nm + 3 * i;
            for (int k = 0; k < 3; k++) {
                int32_t q = (int32_t)((v[i].normal >> (10 * k)) & 0x3ffu);
                ni[k] = (float)(q >= 512 ? q - 1024 : q) / 511.0f;
                len2 += ni[k] * ni[k];
            }
            float inv = len2 > 1e-8f ? 1.0f / sqrtf(len2) : 0.0f;
            for (int k = 0; k < 3; k++)
                ni[k] *= inv;
            if (inv == 0.0f)
                ni[1] = 1.0f;
        }
        if (ch->relight_all) {
            ok = q_bake_vertices(job->scene, p, nm, n, sun, ao);
            item->baked = n;
        } else {
            for (size_t i = 0; i < n; i++) {
                sun[i] = v[i].sun;
                ao[i] = v[i].ao;
            }
            ok = q_bake_vertices_reaching(job->scene, p, nm, n, ch->relight_lo, ch->relight_hi, sun, ao,
                                          &item->baked);
        }
    }
    if (ok)
        for (size_t i = 0; i < n; i++) {
            v[i].sun = sun[i];
            v[i].ao = ao[i];
        }
    item->failed = !ok;
    free(p);
    free(nm);
    free(sun);
    free(ao);
}

typedef struct occluder_ctx {
    bool *use;                 /* per cached chunk */
    const float *vlo, *vhi;    /* vertices to bake */
} occluder_ctx;

/* each_cached_chunk callback: flags a chunk whose triangles the rays of
 * the vertices in ctx's box can reach. */
static void flag_occluder(q_world_cache *c, render_chunk *ch, void *ud)
{
    occluder_ctx *o = ud;
    size_t at = (size_t)(ch - c->chunks);
    if (o->use[at] || !ch->solid.data)
        return;
    float tlo[3], thi[3];
    chunk_vertex_box(ch->c, c->scale, tlo, thi);
    o->use[at] = q_bake_box_reaches(&c->bake_def, o->vlo, o->vhi, tlo, thi);
}

/* The occluders of the chunks in items: the triangles of every cached
 * chunk whose box meets a baked chunk's box grown by the rays' reach
 * (positions copied whole per chunk, indices rebased), and the box around
 * the baked chunks' vertices (metres), which the scene culls them to.
 * False when out of memory. */
static bool gather_occluders(q_world_cache *c, const bake_item *items, size_t n, float **positions,
                             size_t *vertex_count, uint32_t **indices, size_t *index_count, float vlo[3],
                             float vhi[3])
{
    float lo[3], hi[3];
    q_bake_reach(&c->bake_def, lo, hi);
    bool *use = calloc(c->count ? c->count : 1, sizeof *use);
    if (!use)
        return false;
    for (size_t j = 0; j < n; j++) {
        const float *blo = items[j].lo, *bhi = items[j].hi;
        double rlo[3], rhi[3];
        for (int a = 0; a < 3; a++) {
            vlo[a] = j ? fminf(vlo[a], blo[a]) : blo[a];
            vhi[a] = j ? fmaxf(vhi[a], bhi[a]) : bhi[a];
            rlo[a] = (blo[a] + lo[a]) / c->scale;
            rhi[a] = (bhi[a] + hi[a]) / c->scale;
        }
        int32_t clo[3], chi[3];
        chunks_holding(rlo, rhi, clo, chi);
        occluder_ctx o = {use, blo, bhi};
        each_cached_chunk(c, clo, chi, flag_occluder, &o);
    }
    size_t nv = 0, ni = 0;
    for (size_t i = 0; i < c->count; i++)
        if (use[i]) {
            nv += blob_vertex_count(&c->chunks[i].solid);
            ni += c->chunks[i].solid.index_count;
        }
    float *P = malloc((nv ? nv : 1) * 3 * sizeof(float));
    uint32_t *I = malloc((ni ? ni : 1) * sizeof(uint32_t));
    if (!P || !I) {
        free(use);
        free(P);
        free(I);
        return false;
    }
    size_t v = 0, k = 0;
    for (size_t i = 0; i < c->count; i++) {
        if (!use[i])
            continue;
        const mesh_blob *b = &c->chunks[i].solid;
        const q_terrain_vertex *vert = (const q_terrain_vertex *)b->data;
        size_t bn = blob_vertex_count(b);
        for (size_t q = 0; q < bn; q++)
            memcpy(P + 3 * (v + q), vert[q].position, sizeof vert[q].position);
        for (size_t q = 0; q < b->index_count; q++)
            I[k++] = blob_index(b, q) + (uint32_t)v;
        v += bn;
    }
    free(use);
    *positions = P;
    *vertex_count = nv;
    *indices = I;
    *index_count = k;
    return true;
}

/* Bakes and uploads every chunk marked for it. When the scene cannot be
 * built the meshes are uploaded unbaked and stay marked. */
static bool bake_chunks(q_renderer *r, q_world_cache *c, char *err, size_t err_size)
{
    size_t n = 0;
    for (size_t i = 0; i < c->count; i++) {
        render_chunk *ch = &c->chunks[i];
        if (ch->rebake && !ch->solid.data) {
            ch->rebake = ch->relight_all = false;
            free_mesh(r, &ch->mesh[Q_SURFACE_SOLID]);
        }
        n += ch->rebake;
    }
    if (n == 0)
        return true;
    double t0 = now_ms();
    bake_item *items = calloc(n, sizeof *items);
    if (!items) {
        snprintf(err, err_size, "out of memory while baking");
        return false;
    }
    /* The vertices to bake: all of a chunk's, or those within reach of
     * where triangles changed (the changed box grown by the mirrored reach). */
    float lo[3], hi[3];
    q_bake_reach(&c->bake_def, lo, hi);
    size_t k = 0;
    for (size_t i = 0; i < c->count; i++) {
        const render_chunk *ch = &c->chunks[i];
        if (!ch->rebake)
            continue;
        bake_item *it = &items[k++];
        memcpy(it->c, ch->c, sizeof it->c);
        it->index = (uint32_t)i;
        chunk_vertex_box(ch->c, c->scale, it->lo, it->hi);
        if (!ch->relight_all)
            for (int a = 0; a < 3; a++) {
                it->lo[a] = fmaxf(it->lo[a], ch->relight_lo[a] - hi[a]);
                it->hi[a] = fmaxf(it->lo[a], fminf(it->hi[a], ch->relight_hi[a] - lo[a]));
            }
    }
    qsort(items, n, sizeof *items, compare_chunks);

    float *positions = NULL;
    uint32_t *indices = NULL;
    size_t nv = 0, ni = 0;
    float vlo[3], vhi[3];
    q_bake_scene *scene = NULL;
    bool ok = gather_occluders(c, items, n, &positions, &nv, &indices, &ni, vlo, vhi);
    if (!ok) {
        snprintf(err, err_size, "out of memory gathering occluders for baking");
    } else {
        char why[200];
        ok = q_bake_scene_build(&scene, &c->bake_def, positions, nv, indices, ni, vlo, vhi,
                                BAKE_CELL_VOXELS * c->scale, r->jobs, why, sizeof why) == Q_OK;
        if (!ok)
            snprintf(err, err_size, "baking: %s", why);
    }
    free(positions);
    free(indices);
    if (ok) {
        bake_job job = {scene, c->chunks, items};
        q_jobs_for(r->jobs, (int)n, bake_one, &job);
    }
    q_bake_scene_free(scene);
    bool scene_ok = ok;
    for (size_t j = 0; j < n; j++) {
        render_chunk *ch = &c->chunks[items[j].index];
        upload(r, &ch->mesh[Q_SURFACE_SOLID], &ch->solid);
        bool done = scene_ok && !items[j].failed;
        ch->rebake = !done;
        if (done) {
            ch->relight_all = false;
            r->stats.baked++;
            r->stats.baked_vertices += (int64_t)items[j].baked;
        } else if (ok) {
            ok = false;
            snprintf(err, err_size, "out of memory while baking");
        }
    }
    free(items);
    r->stats.bake_ms += now_ms() - t0;
    return ok;
}

/* ---- drawing ---- */

void q_render_sun(float out[3])
{
    float len = sqrtf(SUN_DIR[0] * SUN_DIR[0] + SUN_DIR[1] * SUN_DIR[1] + SUN_DIR[2] * SUN_DIR[2]);
    for (int k = 0; k < 3; k++)
        out[k] = SUN_DIR[k] / len;
}

q_draw_world_opts q_default_draw_world_opts(const q_world *w)
{
    q_draw_world_opts o = {.water = true, .bodies = true};
    double voxel = q_world_get_def(w)->voxel_size;
    o.fog = (float)(DEFAULT_FOG_VOXELS * voxel);
    float sun[3];
    q_render_sun(sun);
    o.bake_def = q_default_bake_def(sun, voxel);
    return o;
}

static bool same_bake_def(const q_bake_def *a, const q_bake_def *b)
{
    return a->sun[0] == b->sun[0] && a->sun[1] == b->sun[1] && a->sun[2] == b->sun[2] &&
           a->sun_rays == b->sun_rays && a->sun_cone == b->sun_cone && a->sun_distance == b->sun_distance &&
           a->ao_rays == b->ao_rays && a->ao_radius == b->ao_radius && a->offset == b->offset;
}

/* Follows the draw's bake switch: turning it on remeshes everything (the
 * CPU copies come from meshing), a new bake_def relights everything,
 * turning it off frees the copies (the shader then ignores the baked bytes
 * left on the GPU). */
static void set_baking(q_renderer *r, q_world_cache *c, const q_draw_world_opts *o)
{
    if (o->bake) {
        if (!c->baking) {
            c->baking = true;
            c->valid = false;
        } else if (!same_bake_def(&c->bake_def, &o->bake_def)) {
            for (size_t i = 0; i < c->count; i++)
                c->chunks[i].rebake = c->chunks[i].relight_all = c->chunks[i].solid.data != NULL;
        }
        c->bake_def = o->bake_def;
    } else if (c->baking) {
        c->baking = false;
        for (size_t i = 0; i < c->count; i++) {
            render_chunk *ch = &c->chunks[i];
            if (ch->rebake && ch->relight_all) /* never uploaded: show it unlit rather than not at all */
                upload(r, &ch->mesh[Q_SURFACE_SOLID], &ch->solid);
            ch->rebake = ch->relight_all = false;
            free_blob(&ch->solid);
        }
    }
}

/* Uploads the clipmap's last complete LOD mesh when a new one is published;
 * false when the world has no viewer or no LOD mesh is complete yet (then the
 * chunk meshes are drawn). The rebuild runs on the clipmap's worker
 * (mesh/clipmap.h), so a frame never waits for it. With colour_by_level,
 * vertices take a fixed material per level of their chunk (debug{lod = true}). */
static bool update_lod(q_renderer *r, q_world_cache *c, q_world *w, float scale, bool colour_by_level)
{
    q_clipmap *cm = q_world_clipmap(w);
    if (!cm || !cm->has_viewer)
        return false;
    const q_terrain *t = q_world_terrain(w);
    q_box b;
    if (!q_terrain_bounds(t, &b))
        b = (q_box){{0, 0, 0}, {0, 0, 0}};
    else
        for (int a = 0; a < 3; a++) {
            b.min[a] -= 1;
            b.max[a] += 1;
        }
    char err[128];
    q_clipmap_update(cm, q_world_jobs(w), t, b, scale, false, err, sizeof err);
    q_clipmap_result res = q_clipmap_get(cm);
    if (res.serial == 0)
        return false;
    if (c->lod_valid && c->lod_serial == res.serial && c->lod_coloured == colour_by_level)
        return true;
    mesh_blob blob = {0};
    bool ok = true;
    const q_mesh *m = res.mesh;
    if (m && m->vertex_count) {
        uint8_t *mat = m->materials;
        if (colour_by_level) {
            static const char *const names[Q_LOD_MAX_LEVEL + 1] = {"grass", "sand", "rock", "snow", "brick"};
            mat = malloc(m->vertex_count);
            ok = mat != NULL;
            for (size_t i = 0; ok && i < m->vertex_count; i++) {
                int32_t ch[3];
                for (int a = 0; a < 3; a++)
                    ch[a] = (int32_t)floor(m->positions[3 * i + a] / scale / Q_LOD_CHUNK);
                int id = q_material_find(names[q_clipmap_level(cm, ch)]);
                mat[i] = (uint8_t)(id > 0 ? id : m->materials[i]);
            }
        }
        q_dc_output o = {.positions = m->positions, .normals = m->normals, .materials = mat,
                         .indices = m->indices, .vertex_count = m->vertex_count, .index_count = m->index_count};
        ok = ok && pack(&o, &blob);
        if (mat != m->materials)
            free(mat);
    }
    if (ok) {
        upload(r, &c->lod_mesh, &blob);
        free(blob.data);
        c->lod_valid = true;
        c->lod_serial = res.serial;
        c->lod_coloured = colour_by_level;
    }
    return true;
}

static void chunk_aabb(const render_chunk *ch, float scale, vec3 box[2])
{
    /* Vertices of cells [32c - 1, 32c + 32) lie in [32c - .5, 32c + 32.5]. */
    chunk_vertex_box(ch->c, scale, box[0], box[1]);
}

static void draw_mesh(q_renderer *r, const chunk_mesh *m)
{
    glVertexArrayVertexBuffer(r->terrain_vao, 0, m->buffer, 0, sizeof(q_terrain_vertex));
    glVertexArrayElementBuffer(r->terrain_vao, m->buffer);
    glDrawElements(GL_TRIANGLES, (GLsizei)m->index_count, m->index_type,
                   (const void *)(uintptr_t)m->index_offset);
}

static void set_common_uniforms(const q_terrain_program *p, const float vp[16], const q_camera *cam,
                                const float fog_color[3], float fog_density, float tile)
{
    float sun[3];
    q_render_sun(sun);
    glUseProgram(p->program);
    glUniform3fv(p->sun, 1, sun);
    glUniformMatrix4fv(p->view_proj, 1, GL_FALSE, vp);
    glUniform3fv(p->camera, 1, cam->position);
    glUniform3fv(p->fog_color, 1, fog_color);
    glUniform1f(p->fog_density, fog_density);
    glUniform1f(p->tile, tile);
}

typedef struct draw_item {
    float distance2;   /* squared, camera to chunk centre */
    const chunk_mesh *mesh;
} draw_item;

static int nearer_first(const void *pa, const void *pb)
{
    const draw_item *a = pa, *b = pb;
    return a->distance2 < b->distance2 ? -1 : a->distance2 > b->distance2 ? 1 : 0;
}

/* The visible meshes of one surface, sorted near to far: solids drawn in
 * that order let the depth test reject hidden fragments before shading. */
static size_t visible_meshes(const q_world_cache *c, const bool *visible, int surface,
                             const float eye[3], draw_item *items)
{
    size_t n = 0;
    for (size_t i = 0; i < c->count; i++) {
        const render_chunk *ch = &c->chunks[i];
        if (!visible[i] || !ch->mesh[surface].buffer)
            continue;
        float d2 = 0.0f;
        for (int a = 0; a < 3; a++) {
            float mid = ((float)ch->c[a] + 0.5f) * Q_CHUNK_SIZE * c->scale - eye[a];
            d2 += mid * mid;
        }
        items[n++] = (draw_item){d2, &ch->mesh[surface]};
    }
    qsort(items, n, sizeof *items, nearer_first);
    return n;
}

static void chunk_boxes(q_renderer *r, const q_world_cache *c)
{
    static const float recent[4] = {1.0f, 0.85f, 0.2f, 1.0f}, steady[4] = {0.2f, 0.85f, 1.0f, 1.0f};
    for (size_t i = 0; i < c->count; i++) {
        const render_chunk *ch = &c->chunks[i];
        float lo[3], hi[3];
        for (int a = 0; a < 3; a++) {
            lo[a] = (float)ch->c[a] * Q_CHUNK_SIZE * c->scale;
            hi[a] = lo[a] + Q_CHUNK_SIZE * c->scale;
        }
        bool edited = ch->meshed_frame != c->rebuilt_frame && r->frame - ch->meshed_frame < BOX_HIGHLIGHT_FRAMES;
        const float *col = edited ? recent : steady;
        for (int e = 0; e < 12; e++) {
            /* Edge e runs along axis e / 4 from the corner picked by the
             * two bits of e % 4 on the other two axes. */
            int axis = e / 4, b1 = (axis + 1) % 3, b2 = (axis + 2) % 3;
            float a[3], b[3];
            a[axis] = lo[axis];
            b[axis] = hi[axis];
            a[b1] = b[b1] = (e & 1) ? hi[b1] : lo[b1];
            a[b2] = b[b2] = (e & 2) ? hi[b2] : lo[b2];
            q_render_line(r, a, b, col);
        }
    }
}

bool q_render_draw_world(q_renderer *r, uint64_t key, q_world *w, const q_camera *camera,
                         const q_draw_world_opts *opts, char *err, size_t err_size)
{
    bool ok = true;
    q_world_cache *c = find_cache(r, key);
    if (!c || !q_textures_update(r)) {
        snprintf(err, err_size, "out of memory for the world's render cache");
        return false;
    }
    c->last_frame = r->frame;
    const q_terrain *t = q_world_terrain(w);
    float scale = (float)q_world_get_def(w)->voxel_size;

    double t0 = now_ms();
    set_baking(r, c, opts);
    uint64_t version = q_terrain_version(t);
    if (!c->valid || c->scale != scale) {
        c->scale = scale;
        c->valid = mark_all(c, t);
        c->rebuilt_frame = r->frame;
    } else if (version != c->version) {
        mark_ctx m = {.cache = c};
        if (c->baking)
            q_bake_reach(&c->bake_def, m.reach_lo, m.reach_hi);
        if (!q_terrain_changes_since(t, c->version, on_change, &m)) {
            m.failed = !mark_all(c, t);
            c->rebuilt_frame = r->frame;
        }
        c->valid = !m.failed;
    }
    c->version = version;
    if (!c->valid || !remesh(r, c, t)) {
        snprintf(err, err_size, "out of memory while meshing the terrain");
        ok = false;
    }
    if (c->baking && !bake_chunks(r, c, err, err_size))
        ok = false;
    remove_empty_chunks(c);
    bool lod = update_lod(r, c, w, scale, opts->lod);
    r->stats.mesh_ms += now_ms() - t0;

    mat4 view_proj; /* cglm's SIMD code needs its aligned type */
    q_camera_view_proj(camera, r->height > 0 ? (float)r->width / (float)r->height : 1.0f,
                       (float *)view_proj);
    const float *vp = (const float *)view_proj;
    vec4 planes[6];
    glm_frustum_planes(view_proj, planes);
    float fog_color[3];
    for (int k = 0; k < 3; k++)
        fog_color[k] = powf(r->clear_color[k], 2.2f);
    float fog_density = opts->fog > 0.0f ? 1.0f / opts->fog : 0.0f;
    float tile = 1.0f / (TILE_VOXELS * scale);

    bool *visible = calloc(c->count ? c->count : 1, sizeof *visible);
    draw_item *items = malloc((c->count ? c->count : 1) * sizeof *items);
    if (!visible || !items) {
        free(visible);
        free(items);
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (size_t i = 0; i < c->count; i++) {
        vec3 box[2];
        chunk_aabb(&c->chunks[i], scale, box);
        visible[i] = glm_aabb_frustum(box, planes);
        r->stats.chunks += c->chunks[i].mesh[0].buffer || c->chunks[i].mesh[1].buffer;
    }

    glBindVertexArray(r->terrain_vao);
    glBindTextureUnit(0, r->texture_array);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, r->steep_buffer);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDepthMask(GL_TRUE);
    glEnable(GL_CULL_FACE);
    glCullFace(GL_BACK);
    glFrontFace(GL_CCW);
    glDisable(GL_BLEND);

    set_common_uniforms(&r->solid, vp, camera, fog_color, fog_density, tile);
    glUniform1f(r->solid.bake, c->baking ? 1.0f : 0.0f);
    size_t n = lod ? 0 : visible_meshes(c, visible, Q_SURFACE_SOLID, camera->position, items);
    if (lod && c->lod_mesh.buffer) {
        items[0] = (draw_item){0.0f, &c->lod_mesh};
        n = 1;
    }
    for (size_t i = 0; i < n; i++) {
        draw_mesh(r, items[i].mesh);
        r->stats.triangles += items[i].mesh->index_count / 3;
        r->stats.draw_calls++;
    }

    if (opts->wireframe) {
        set_common_uniforms(&r->wire, vp, camera, fog_color, fog_density, tile);
        glUniform4f(r->wire.color, 0.05f, 0.05f, 0.05f, 0.55f);
        glEnable(GL_BLEND);
        glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
        glPolygonMode(GL_FRONT_AND_BACK, GL_LINE);
        glEnable(GL_POLYGON_OFFSET_LINE);
        glPolygonOffset(-1.0f, -1.0f);
        glDepthMask(GL_FALSE);
        glDepthFunc(GL_LEQUAL);
        for (size_t i = 0; i < n; i++)
            draw_mesh(r, items[i].mesh);
        glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
        glDisable(GL_POLYGON_OFFSET_LINE);
        glDepthFunc(GL_LESS);
        glDepthMask(GL_TRUE);
        glDisable(GL_BLEND);
    }

    if (opts->bodies) {
        q_body_view bv;
        memcpy(bv.view_proj, vp, sizeof bv.view_proj);
        memcpy(bv.planes, planes, sizeof bv.planes);
        memcpy(bv.camera, camera->position, sizeof bv.camera);
        memcpy(bv.fog_color, fog_color, sizeof bv.fog_color);
        bv.fog_density = fog_density;
        if (!q_body_draw(r, &c->bodies, w, &bv, err, err_size))
            ok = false;
        glBindVertexArray(r->terrain_vao);
    }

    if (opts->water) {
        /* Translucent: blended far to near. */
        size_t nw = visible_meshes(c, visible, Q_SURFACE_WATER, camera->position, items);
        set_common_uniforms(&r->water, vp, camera, fog_color, fog_density, tile);
        glUniform1f(r->water.alpha, 0.6f);
        glEnable(GL_BLEND);
        glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
        glDepthMask(GL_FALSE);
        glDisable(GL_CULL_FACE); /* seen from below too */
        for (size_t i = nw; i-- > 0;) {
            draw_mesh(r, items[i].mesh);
            r->stats.triangles += items[i].mesh->index_count / 3;
            r->stats.draw_calls++;
        }
        glDepthMask(GL_TRUE);
        glDisable(GL_BLEND);
    }
    free(visible);
    free(items);

    glDisable(GL_CULL_FACE);
    glBindVertexArray(0);
    glUseProgram(0);
    if (opts->chunks)
        chunk_boxes(r, c);
    if (opts->contacts)
        q_body_draw_contacts(r, w);
    return ok;
}
