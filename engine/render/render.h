/* Quarry renderer: OpenGL 4.5 core through glad.
 *
 * For now it checks the context, clears the frame and reads it back for
 * screenshots. The camera and debug-draw switches are stored here already so
 * that the Lua side (quarry.graphics) has one place to set them; they do not
 * change the picture yet.
 *
 * This header includes no GL or SDL header: the host and the bindings use it
 * without knowing about either. All functions need the context from
 * q_render_init to be current on the calling thread.
 */
#ifndef Q_RENDER_H
#define Q_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Same shape as glad's GLADloadfunc: returns the address of a GL function. */
typedef void (*q_gl_proc)(void);
typedef q_gl_proc (*q_gl_loader)(const char *name);

typedef struct q_camera {
    float position[3];   /* metres */
    float target[3];     /* point looked at; never equal to position */
    float fov;           /* vertical field of view, radians, in (0, pi) */
} q_camera;

/* Default: at (0, 10, 20) looking at the origin with a 60 degree fov. */
q_camera q_default_camera(void);

typedef struct q_debug_flags {
    bool wireframe, chunks, broadphase, contacts, kdtree, lod;
} q_debug_flags;

/* Loads GL functions through `loader` and checks that the context is at least
 * OpenGL 4.5 core. On failure writes the reason to err and returns false. */
bool q_render_init(q_gl_loader loader, char *err, size_t err_size);

/* "renderer | version" of the current context, for logs. */
const char *q_render_describe(void);

/* Starts a frame on a width x height (pixels) drawable: viewport, clear colour
 * (rgba in 0..1) and depth. */
void q_render_begin_frame(int width, int height, const float clear_rgba[4]);

/* Clears colour (rgba in 0..1) and depth of the frame being drawn, now. */
void q_render_clear(const float clear_rgba[4]);

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
