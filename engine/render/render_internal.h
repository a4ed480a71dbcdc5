/* Renderer internals shared by the render_*.c files; nothing outside
 * engine/render/ includes this (it pulls in glad). */
#ifndef Q_RENDER_INTERNAL_H
#define Q_RENDER_INTERNAL_H

#include <glad/gl.h>
#include <stdint.h>

#include "core/jobs.h"
#include "render/render.h"

typedef struct q_world_cache q_world_cache; /* render_terrain.c */

/* One vertex of a terrain chunk mesh as uploaded: 20 bytes. */
typedef struct q_terrain_vertex {
    float position[3];  /* metres */
    uint32_t normal;    /* GL_INT_2_10_10_10_REV, signed normalised xyz */
    uint8_t material;   /* material id: texture layer */
    uint8_t sun, ao;    /* baked sun visibility and ambient occlusion, 255 = open */
    uint8_t pad;
} q_terrain_vertex;

typedef struct q_line_vertex {
    float position[3];
    uint8_t rgba[4];
} q_line_vertex;

typedef struct q_text_vertex {
    float position[2];  /* drawable pixels, origin top-left */
    uint8_t rgba[4];
} q_text_vertex;

typedef struct q_terrain_program {
    GLuint program;
    GLint view_proj, camera, fog_color, fog_density, tile, alpha, color, sun, bake;
} q_terrain_program;

struct q_renderer {
    char describe[256];
    q_jobs *jobs;

    /* terrain: one vertex format for every chunk buffer */
    GLuint terrain_vao;
    q_terrain_program solid, water, wire;

    /* material textures (render_textures.c) */
    GLuint texture_array;
    int texture_layers;
    uint64_t material_signature;
    GLuint steep_buffer;     /* SSBO: per material, the layer shown on steep slopes */

    /* overlay (render_overlay.c) */
    GLuint line_program, line_vao, line_buffer;
    GLint line_view_proj;
    GLuint text_program, text_vao, text_buffer;
    GLint text_screen;
    q_line_vertex *lines;
    size_t line_count, line_capacity;
    q_text_vertex *text;
    size_t text_count, text_capacity;
    char *font_scratch;
    size_t font_scratch_size;

    /* world caches (render_terrain.c) */
    q_world_cache **worlds;
    int world_count, world_capacity;

    uint64_t frame;
    bool reported_gl_error;
    int width, height, window_width, window_height;
    float clear_color[4];
    q_render_stats stats;
};

/* render.c */
GLuint q_gl_program(const char *name, const char *vertex_src, const char *fragment_src,
                    const char *defines, char *err, size_t err_size);
/* view_proj = projection * view for the current frame's aspect. */
void q_camera_view_proj(const q_camera *c, float aspect, float out[16]);

/* render_textures.c: (re)builds the texture array when the material table
 * changed since the last call. False only when out of memory. */
bool q_textures_update(q_renderer *r);
void q_textures_destroy(q_renderer *r);

/* render_terrain.c */
bool q_terrain_draw_init(q_renderer *r, char *err, size_t err_size);
void q_terrain_draw_destroy(q_renderer *r);
/* Frees caches of worlds not drawn in the last `frames` frames. */
void q_terrain_draw_evict(q_renderer *r, uint64_t frames);

/* render_overlay.c */
bool q_overlay_init(q_renderer *r, char *err, size_t err_size);
void q_overlay_destroy(q_renderer *r);
void q_overlay_flush(q_renderer *r, const q_camera *camera);

#endif
