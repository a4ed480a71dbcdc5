/* Quarry renderer: OpenGL 4.5 core through glad.
 *
 * Draws voxel worlds (render_terrain.c: per-chunk meshes of 32^3 render
 * chunks, remeshed from the terrain's change log on worker threads) and
 * their rigid bodies (render_bodies.c),
 * triplanar material textures made at start-up (render_textures.c), and an
 * overlay of 3D lines and bitmap text (render_overlay.c); reads frames back
 * for screenshots.
 *
 * This header includes no GL or SDL header: the host and the bindings use it
 * without knowing about either. Functions taking a q_renderer need the GL
 * context it was created with to be current on the calling thread; the
 * camera helpers at the top are plain math and work headless.
 */
#ifndef Q_RENDER_H
#define Q_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "geom/bake.h"

struct q_world;

/* Same shape as glad's GLADloadfunc: returns the address of a GL function. */
typedef void (*q_gl_proc)(void);
typedef q_gl_proc (*q_gl_loader)(const char *name);

typedef struct q_camera {
    float position[3];   /* metres */
    float target[3];     /* point looked at; never equal to position */
    float fov;           /* vertical field of view, radians, in (0, pi) */
} q_camera;

/* Clip planes of every view, metres. */
#define Q_CAMERA_NEAR 0.1f
#define Q_CAMERA_FAR 4000.0f

/* Default: at (0, 10, 20) looking at the origin with a 60 degree fov. */
q_camera q_default_camera(void);

/* The ray through window point (x, y) (origin top-left, in the same units as
 * width x height, normally window coordinates) for camera c: origin is the
 * camera position, dir a unit vector. x = width/2, y = height/2 is the view
 * direction; points outside the window give rays outside the view. */
void q_camera_ray(const q_camera *c, double width, double height, double x, double y,
                  double origin[3], double dir[3]);

typedef struct q_debug_flags {
    bool wireframe, chunks, broadphase, contacts, kdtree, lod;
} q_debug_flags;

typedef struct q_renderer q_renderer;

/* Loads GL functions through `loader`, checks that the context is at least
 * OpenGL 4.5 core, compiles the shaders and starts mesher threads. On failure
 * writes the reason to err and returns NULL. */
q_renderer *q_render_create(q_gl_loader loader, char *err, size_t err_size);

/* Frees every GL object and thread of the renderer. NULL is ignored. */
void q_render_destroy(q_renderer *r);

/* "renderer | version" of the context, for logs. */
const char *q_render_describe(const q_renderer *r);

/* Starts a frame on a drawable of width x height pixels shown in a window of
 * window_width x window_height (differs on HiDPI; text positions are window
 * coordinates): viewport, clear colour (rgba in 0..1) and depth. Resets the
 * frame's statistics and empties the line and text queues. */
void q_render_begin_frame(q_renderer *r, int width, int height, int window_width, int window_height,
                          const float clear_rgba[4]);

/* Draws the queued lines (through `camera`) and then the text on top. Call
 * after the script's draw() and before reading the frame back. */
void q_render_end_frame(q_renderer *r, const q_camera *camera);

/* Clears colour (rgba in 0..1) and depth of the frame being drawn, now. */
void q_render_clear(const float clear_rgba[4]);

/* ---- worlds ---- */

typedef struct q_draw_world_opts {
    bool wireframe;   /* triangle edges over the solid surface */
    bool chunks;      /* boxes of the render chunks that hold a mesh */
    bool water;       /* draw the water surface (default true) */
    float fog;        /* metres at which fog hides half the colour; 0 = no fog */
    bool bake;        /* baked sun visibility and ambient occlusion (default false) */
    q_bake_def bake_def; /* rays of the bake; its sun is the renderer's (q_render_sun) */
    bool lod;         /* with a viewer set (world:set_viewer): colour the LOD mesh by level */
    bool bodies;      /* the world's rigid bodies (default true) */
    bool contacts;    /* marks at the contact points of the last step, over everything */
} q_draw_world_opts;

/* Defaults: no wireframe, no chunk boxes, water on, fog at 400 voxels, no
 * bake (bake_def: q_default_bake_def for the renderer's sun and the world's
 * voxel size), bodies on, no contact marks. */
q_draw_world_opts q_default_draw_world_opts(const struct q_world *w);

/* Unit direction towards the sun that lights every world. */
void q_render_sun(float out[3]);

/* Draws the world into the current frame through `camera`, fogged towards
 * the frame's clear colour. `key` identifies the world across frames (the
 * renderer keeps its chunk meshes under that key; a key must never be reused
 * for another world). Chunks changed since the last draw of the key are
 * remeshed first, all of them in parallel. Caches of keys not drawn for a
 * while are freed at begin_frame. Returns false with a message when meshing
 * ran out of memory (what was meshed is still drawn).
 *
 * Baking (opts->bake): the solid surface's vertices carry sun visibility
 * and ambient occlusion (geom/bake.h), which scale the sun and ambient terms
 * of the shading. Chunks are baked after all meshing of the draw, on the
 * mesher threads: every vertex of a remeshed chunk, and after an edit the
 * vertices of other chunks whose rays can reach the triangles it may have
 * changed (the changed box grown by four voxels): mostly the terrain below
 * the edit and away from the sun, up to bake_def.sun_distance, and within
 * bake_def.ao_radius all round. The cache keeps a CPU copy of each solid
 * mesh while baking is on; turning it on remeshes and bakes everything,
 * changing bake_def bakes everything, turning it off frees the copies.
 *
 * Bodies (opts->bodies; render_bodies.c): every body of the world is drawn
 * with its shape's triangles (q_collider_triangles) in its material's
 * colour, darker while it sleeps, after the solid terrain and before the
 * water. A body's mesh is uploaded when the renderer first sees it and freed
 * in the first draw after the body is gone; all bodies of a world take one
 * draw call. Contact marks (opts->contacts): at each contact point of the
 * last step a small cross (red between bodies, orange on terrain, grey for
 * speculative contacts not yet touching) and a green line 0.6 voxels long
 * along the normal, drawn over everything at the end of the frame. */
bool q_render_draw_world(q_renderer *r, uint64_t key, struct q_world *w, const q_camera *camera,
                         const q_draw_world_opts *opts, char *err, size_t err_size);

/* Physics debug views of the terrain around the camera target (within 24
 * voxels, in view, nearest first, a line budget per frame; render_debug.c),
 * queued as depth-tested overlay lines. broadphase: a small wire cube per
 * exposed bit of the physics chunks' dilated solid (orange) and water (cyan)
 * masks, a FULL chunk as one red box. kdtree: the kD tree of each nearby
 * chunk's cached solid mesh (built on demand, a few chunks a frame): leaf
 * boxes green, branches' split planes magenta. Syncs the world's terrain
 * physics first. */
void q_render_draw_physics_debug(q_renderer *r, struct q_world *w, const q_camera *camera, bool broadphase,
                                 bool kdtree);

/* ---- overlay ---- */

/* Queues a line from a to b (metres) in colour rgba (0..1), depth tested
 * against what the frame holds when it ends. */
void q_render_line(q_renderer *r, const float a[3], const float b[3], const float rgba[4]);

/* Queues text (ASCII; other bytes show as '?', '\n' starts a new line) with
 * its top-left corner at window point (x, y), `scale` times the 6x12 bitmap
 * font's size, in colour rgba, drawn with a dark shadow over everything. */
void q_render_text(q_renderer *r, const char *text, float x, float y, float scale, const float rgba[4]);

/* ---- statistics of the frame so far ---- */

typedef struct q_render_stats {
    int chunks;          /* render chunks holding a mesh, over the worlds drawn this frame */
    int64_t triangles;   /* triangles drawn (terrain, water and bodies; wireframe not counted) */
    int draw_calls;      /* terrain and body draw calls */
    int bodies;          /* bodies drawn (inside the view) */
    int contacts;        /* contact points marked */
    int remeshed;        /* chunks meshed this frame */
    double mesh_ms;      /* wall time spent meshing, baking and uploading this frame */
    int baked;           /* chunks baked this frame (remeshed or relit by an edit nearby) */
    int64_t baked_vertices; /* vertices whose rays were cast this frame */
    double bake_ms;      /* the part of mesh_ms spent baking (scene build and rays) */
    int64_t gpu_bytes;   /* bytes of chunk and body meshes held for all worlds */
} q_render_stats;

q_render_stats q_render_get_stats(const q_renderer *r);

/* ---- screenshots ---- */

typedef enum q_image_format { Q_IMAGE_PNG, Q_IMAGE_PPM } q_image_format;

/* Q_IMAGE_PPM when path ends in ".ppm" (any case), else Q_IMAGE_PNG. */
q_image_format q_image_format_for_path(const char *path);

/* Reads back the current back buffer (width x height pixels, as drawn so far
 * this frame) and writes it to `out`, top row first: PNG (RGB, 8 bit) or
 * binary PPM (P6). The caller opens and closes `out`. Returns false with a
 * message in err when memory or the write fails. */
bool q_render_write_screenshot(FILE *out, q_image_format format, int width, int height,
                               char *err, size_t err_size);

#endif
