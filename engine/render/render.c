/* OpenGL 4.5 core renderer: context checks, frames, camera, shader
 * programs and screenshots (see render.h). */
#include "render/render_internal.h"

#include <cglm/cglm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The PNG encoder: stb_image_write from libstb-dev, compiled here and only
 * here. Its own code is not held to our warning flags. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

/* Caches of worlds not drawn for this many frames are freed. Long enough
 * that a script drawing a world now and then does not remesh it every time. */
#define EVICT_FRAMES 120

/* ---- camera ---- */

q_camera q_default_camera(void)
{
    q_camera c = {
        .position = {0.0f, 10.0f, 20.0f},
        .target = {0.0f, 0.0f, 0.0f},
        .fov = 1.04719755f, /* 60 degrees */
    };
    return c;
}

/* Forward, right and up unit vectors of a camera, as glm_lookat builds them.
 * Looking straight up or down, "up" falls back to -Z so the basis exists. */
static void camera_basis(const q_camera *c, double f[3], double r[3], double u[3])
{
    double len = 0.0;
    for (int k = 0; k < 3; k++) {
        f[k] = (double)c->target[k] - c->position[k];
        len += f[k] * f[k];
    }
    len = sqrt(len);
    for (int k = 0; k < 3; k++)
        f[k] = len > 0.0 ? f[k] / len : (k == 2 ? -1.0 : 0.0);
    double up[3] = {0.0, 1.0, 0.0};
    if (fabs(f[1]) > 0.9999) {
        up[1] = 0.0;
        up[2] = -1.0;
    }
    r[0] = f[1] * up[2] - f[2] * up[1];
    r[1] = f[2] * up[0] - f[0] * up[2];
    r[2] = f[0] * up[1] - f[1] * up[0];
    len = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; k++)
        r[k] /= len;
    u[0] = r[1] * f[2] - r[2] * f[1];
    u[1] = r[2] * f[0] - r[0] * f[2];
    u[2] = r[0] * f[1] - r[1] * f[0];
}

void q_camera_ray(const q_camera *c, double width, double height, double x, double y,
                  double origin[3], double dir[3])
{
    double f[3], r[3], u[3];
    camera_basis(c, f, r, u);
    double aspect = width > 0.0 && height > 0.0 ? width / height : 1.0;
    double nx = width > 0.0 ? 2.0 * x / width - 1.0 : 0.0;
    double ny = height > 0.0 ? 1.0 - 2.0 * y / height : 0.0;
    double t = tan(0.5 * c->fov);
    double len = 0.0;
    for (int k = 0; k < 3; k++) {
        origin[k] = c->position[k];
        dir[k] = f[k] + r[k] * nx * t * aspect + u[k] * ny * t;
        len += dir[k] * dir[k];
    }
    len = sqrt(len);
    for (int k = 0; k < 3; k++)
        dir[k] /= len;
}

void q_camera_view_proj(const q_camera *c, float aspect, float out[16])
{
    double f[3], r[3], u[3];
    camera_basis(c, f, r, u);
    vec3 eye = {c->position[0], c->position[1], c->position[2]};
    vec3 center = {eye[0] + (float)f[0], eye[1] + (float)f[1], eye[2] + (float)f[2]};
    vec3 up = {(float)u[0], (float)u[1], (float)u[2]};
    mat4 view, proj, vp;
    glm_lookat(eye, center, up, view);
    glm_perspective(c->fov, aspect > 0.0f ? aspect : 1.0f, Q_CAMERA_NEAR, Q_CAMERA_FAR, proj);
    glm_mat4_mul(proj, view, vp);
    memcpy(out, vp, sizeof vp);
}

/* ---- shader programs ---- */

static GLuint compile(GLenum kind, const char *name, const char *defines, const char *src,
                      char *err, size_t err_size)
{
    GLuint s = glCreateShader(kind);
    const char *parts[3] = {"#version 450 core\n", defines ? defines : "", src};
    glShaderSource(s, 3, parts, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[1024] = "";
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        snprintf(err, err_size, "%s %s shader does not compile: %s", name,
                 kind == GL_VERTEX_SHADER ? "vertex" : "fragment", log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

GLuint q_gl_program(const char *name, const char *vertex_src, const char *fragment_src,
                    const char *defines, char *err, size_t err_size)
{
    GLuint vs = compile(GL_VERTEX_SHADER, name, defines, vertex_src, err, err_size);
    if (!vs)
        return 0;
    GLuint fs = compile(GL_FRAGMENT_SHADER, name, defines, fragment_src, err, err_size);
    if (!fs) {
        glDeleteShader(vs);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, vs);
    glAttachShader(p, fs);
    glLinkProgram(p);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[1024] = "";
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        snprintf(err, err_size, "%s shader program does not link: %s", name, log);
        glDeleteProgram(p);
        return 0;
    }
    return p;
}

/* ---- renderer ---- */

q_renderer *q_render_create(q_gl_loader loader, char *err, size_t err_size)
{
    if (err_size > 0)
        err[0] = '\0';
    int version = gladLoadGL(loader);
    if (version == 0) {
        snprintf(err, err_size, "cannot load OpenGL functions (no current context?)");
        return NULL;
    }
    int major = GLAD_VERSION_MAJOR(version), minor = GLAD_VERSION_MINOR(version);
    if (major < 4 || (major == 4 && minor < 5)) {
        snprintf(err, err_size, "OpenGL 4.5 core is needed, the context is %d.%d", major, minor);
        return NULL;
    }
    GLint mask = 0;
    glGetIntegerv(GL_CONTEXT_PROFILE_MASK, &mask);
    if (!(mask & GL_CONTEXT_CORE_PROFILE_BIT)) {
        snprintf(err, err_size, "OpenGL 4.5 core is needed, the context is not a core profile");
        return NULL;
    }
    q_renderer *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    const char *renderer = (const char *)glGetString(GL_RENDERER);
    const char *gl_version = (const char *)glGetString(GL_VERSION);
    snprintf(r->describe, sizeof r->describe, "%s | %s", renderer ? renderer : "?",
             gl_version ? gl_version : "?");
    r->jobs = q_jobs_create(-1);
    if (!q_terrain_draw_init(r, err, err_size) || !q_body_draw_init(r, err, err_size) ||
        !q_overlay_init(r, err, err_size) || !q_textures_update(r)) {
        if (!err[0])
            snprintf(err, err_size, "out of memory for material textures");
        q_render_destroy(r);
        return NULL;
    }
    return r;
}

void q_render_destroy(q_renderer *r)
{
    if (!r)
        return;
    q_terrain_draw_destroy(r);
    q_body_draw_destroy(r);
    q_overlay_destroy(r);
    q_textures_destroy(r);
    q_jobs_destroy(r->jobs);
    free(r);
}

const char *q_render_describe(const q_renderer *r)
{
    return r->describe;
}

void q_render_begin_frame(q_renderer *r, int width, int height, int window_width, int window_height,
                          const float clear_rgba[4])
{
    r->frame++;
    r->width = width;
    r->height = height;
    r->window_width = window_width > 0 ? window_width : width;
    r->window_height = window_height > 0 ? window_height : height;
    memcpy(r->clear_color, clear_rgba, sizeof r->clear_color);
    r->line_count = r->top_line_count = r->text_count = 0;
    int64_t gpu_bytes = r->stats.gpu_bytes;
    memset(&r->stats, 0, sizeof r->stats);
    r->stats.gpu_bytes = gpu_bytes;
    q_terrain_draw_evict(r, EVICT_FRAMES);

    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glViewport(0, 0, width, height);
    q_render_clear(clear_rgba);
}

void q_render_end_frame(q_renderer *r, const q_camera *camera)
{
    q_overlay_flush(r, camera);
    /* A GL error is a bug in the renderer: say so once, not every frame. */
    GLenum e = glGetError();
    if (e != GL_NO_ERROR && !r->reported_gl_error) {
        fprintf(stderr, "quarry: OpenGL error 0x%04x in frame %llu (renderer bug)\n", e,
                (unsigned long long)r->frame);
        r->reported_gl_error = true;
    }
}

void q_render_clear(const float clear_rgba[4])
{
    glDepthMask(GL_TRUE);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glClearColor(clear_rgba[0], clear_rgba[1], clear_rgba[2], clear_rgba[3]);
    glClearDepth(1.0);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
}

q_render_stats q_render_get_stats(const q_renderer *r)
{
    return r->stats;
}

/* ---- screenshots ---- */

q_image_format q_image_format_for_path(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && strcasecmp(path + n - 4, ".ppm") == 0)
        return Q_IMAGE_PPM;
    return Q_IMAGE_PNG;
}

typedef struct png_sink {
    FILE *out;
    bool failed;
} png_sink;

static void png_write(void *context, void *data, int size)
{
    png_sink *sink = context;
    if (size > 0 && fwrite(data, 1, (size_t)size, sink->out) != (size_t)size)
        sink->failed = true;
}

bool q_render_write_screenshot(FILE *out, q_image_format format, int width, int height,
                               char *err, size_t err_size)
{
    if (width <= 0 || height <= 0) {
        snprintf(err, err_size, "the drawable is empty (%dx%d)", width, height);
        return false;
    }
    size_t row = (size_t)width * 3;
    uint8_t *pixels = malloc(row * (size_t)height);
    uint8_t *flipped = malloc(row * (size_t)height);
    if (!pixels || !flipped) {
        free(pixels);
        free(flipped);
        snprintf(err, err_size, "out of memory for a %dx%d screenshot", width, height);
        return false;
    }
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels);
    /* GL's first row is the bottom one; image files start at the top. */
    for (int y = 0; y < height; y++)
        memcpy(flipped + row * (size_t)y, pixels + row * (size_t)(height - 1 - y), row);
    free(pixels);

    bool ok;
    if (format == Q_IMAGE_PPM) {
        ok = fprintf(out, "P6\n%d %d\n255\n", width, height) > 0 &&
             fwrite(flipped, 1, row * (size_t)height, out) == row * (size_t)height;
    } else {
        png_sink sink = {out, false};
        ok = stbi_write_png_to_func(png_write, &sink, width, height, 3, flipped, (int)row) != 0 &&
             !sink.failed;
    }
    free(flipped);
    if (ok && fflush(out) != 0)
        ok = false;
    if (!ok)
        snprintf(err, err_size, "writing the image failed");
    return ok;
}
