/* OpenGL 4.5 core renderer (see render.h). */
#include "render/render.h"

#include <glad/gl.h>
#include <stdint.h>
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

q_camera q_default_camera(void)
{
    q_camera c = {
        .position = {0.0f, 10.0f, 20.0f},
        .target = {0.0f, 0.0f, 0.0f},
        .fov = 1.04719755f, /* 60 degrees */
    };
    return c;
}

static char describe_buf[256];

bool q_render_init(q_gl_loader loader, char *err, size_t err_size)
{
    int version = gladLoadGL(loader);
    if (version == 0) {
        snprintf(err, err_size, "cannot load OpenGL functions (no current context?)");
        return false;
    }
    int major = GLAD_VERSION_MAJOR(version), minor = GLAD_VERSION_MINOR(version);
    if (major < 4 || (major == 4 && minor < 5)) {
        snprintf(err, err_size, "OpenGL 4.5 core is needed, the context is %d.%d", major, minor);
        return false;
    }
    GLint mask = 0;
    glGetIntegerv(GL_CONTEXT_PROFILE_MASK, &mask);
    if (!(mask & GL_CONTEXT_CORE_PROFILE_BIT)) {
        snprintf(err, err_size, "OpenGL 4.5 core is needed, the context is not a core profile");
        return false;
    }
    const char *renderer = (const char *)glGetString(GL_RENDERER);
    const char *gl_version = (const char *)glGetString(GL_VERSION);
    snprintf(describe_buf, sizeof describe_buf, "%s | %s",
             renderer ? renderer : "?", gl_version ? gl_version : "?");
    return true;
}

const char *q_render_describe(void)
{
    return describe_buf;
}

void q_render_begin_frame(int width, int height, const float clear_rgba[4])
{
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glViewport(0, 0, width, height);
    q_render_clear(clear_rgba);
}

void q_render_clear(const float clear_rgba[4])
{
    glClearColor(clear_rgba[0], clear_rgba[1], clear_rgba[2], clear_rgba[3]);
    glClearDepth(1.0);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
}

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
