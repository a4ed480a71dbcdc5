/* Renderer internals shared by the render_*.c files; nothing outside
 * engine/render/ includes this (it pulls in glad). */
#ifndef Q_RENDER_INTERNAL_H
#define Q_RENDER_INTERNAL_H

#include <glad/gl.h>
#include <stdint.h>

#include "core/handle.h"
#include "core/jobs.h"
#include "render/render.h"

typedef struct q_world_cache q_world_cache; /* render_terrain.c */
typedef struct q_body_cache q_body_cache;   /* render_bodies.c */
struct q_debug_contact;

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
    q_line_vertex *top_lines;  /* drawn without the depth test (debug marks) */
    size_t top_line_count, top_line_capacity;
    q_text_vertex *text;
    size_t text_count, text_capacity;
    char *font_scratch;
    size_t font_scratch_size;

    /* bodies (render_bodies.c); the scratch arrays are per frame */
    GLuint body_program, body_vao, body_instance_buffer, body_command_buffer;
    GLint body_view_proj, body_camera, body_fog_color, body_fog_density, body_sun;
    q_handle *body_handles;
    size_t body_handle_capacity;
    void *body_instances, *body_commands;
    size_t body_draw_capacity, body_command_capacity;
    struct q_debug_contact *body_contacts;
    size_t body_contact_capacity;

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

/* render_bodies.c: what a world's draw shares with its bodies. */
typedef struct q_body_view {
    float view_proj[16];
    float planes[6][4];   /* frustum planes, inside where n . x + d >= 0 */
    float camera[3];
    float fog_color[3];   /* linear RGB */
    float fog_density;
} q_body_view;
bool q_body_draw_init(q_renderer *r, char *err, size_t err_size);
void q_body_draw_destroy(q_renderer *r);
/* Draws every body of w (meshes cached in *cache, created when needed);
 * false with a message when out of memory (the others are still drawn). */
bool q_body_draw(q_renderer *r, q_body_cache **cache, struct q_world *w, const q_body_view *view, char *err,
                 size_t err_size);
void q_body_cache_free(q_renderer *r, q_body_cache *c);
/* Queues marks for the contact points of w's last step (on top). */
void q_body_draw_contacts(q_renderer *r, struct q_world *w);

/* render_overlay.c */
bool q_overlay_init(q_renderer *r, char *err, size_t err_size);
/* Queues a line drawn over everything (no depth test). */
void q_overlay_top_line(q_renderer *r, const float a[3], const float b[3], const float rgba[4]);
void q_overlay_destroy(q_renderer *r);
void q_overlay_flush(q_renderer *r, const q_camera *camera);

#endif
