/* Overlay: 3D lines and screen text queued during a frame and drawn at its
 * end, lines depth tested against the scene (debug marks such as contact
 * points on top of it), text on top of everything.
 *
 * Text uses stb_easy_font (libstb-dev), which builds glyphs from quads: no
 * font file, no texture. Its quads are turned into triangles here and drawn
 * in drawable pixels, so text positions given in window coordinates are
 * scaled by the drawable/window ratio on HiDPI screens.
 */
#include "render/render_internal.h"

#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wshadow"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

#define MAX_TEXT_CHARS 16384    /* per call; longer text is cut */
#define FONT_BYTES_PER_CHAR 1024 /* stb_easy_font vertex bytes, worst case with margin */

static const char *const LINE_VS =
    "layout(location = 0) in vec3 a_position;\n"
    "layout(location = 1) in vec4 a_color;\n"
    "uniform mat4 u_view_proj;\n"
    "out vec4 v_color;\n"
    "void main() { v_color = a_color; gl_Position = u_view_proj * vec4(a_position, 1.0); }\n";

static const char *const TEXT_VS =
    "layout(location = 0) in vec2 a_position;\n"
    "layout(location = 1) in vec4 a_color;\n"
    "uniform vec2 u_screen;\n"
    "out vec4 v_color;\n"
    "void main() {\n"
    "    v_color = a_color;\n"
    "    gl_Position = vec4(2.0 * a_position.x / u_screen.x - 1.0, 1.0 - 2.0 * a_position.y / u_screen.y, 0.0, 1.0);\n"
    "}\n";

static const char *const COLOR_FS =
    "in vec4 v_color;\n"
    "out vec4 o_color;\n"
    "void main() { o_color = v_color; }\n";

static GLuint make_vao(GLuint buffer, GLint components, GLuint color_offset, GLsizei stride)
{
    GLuint vao;
    glCreateVertexArrays(1, &vao);
    glEnableVertexArrayAttrib(vao, 0);
    glVertexArrayAttribFormat(vao, 0, components, GL_FLOAT, GL_FALSE, 0);
    glEnableVertexArrayAttrib(vao, 1);
    glVertexArrayAttribFormat(vao, 1, 4, GL_UNSIGNED_BYTE, GL_TRUE, color_offset);
    glVertexArrayAttribBinding(vao, 0, 0);
    glVertexArrayAttribBinding(vao, 1, 0);
    glVertexArrayVertexBuffer(vao, 0, buffer, 0, stride);
    return vao;
}

bool q_overlay_init(q_renderer *r, char *err, size_t err_size)
{
    r->line_program = q_gl_program("line", LINE_VS, COLOR_FS, NULL, err, err_size);
    r->text_program = q_gl_program("text", TEXT_VS, COLOR_FS, NULL, err, err_size);
    if (!r->line_program || !r->text_program)
        return false;
    r->line_view_proj = glGetUniformLocation(r->line_program, "u_view_proj");
    r->text_screen = glGetUniformLocation(r->text_program, "u_screen");
    glCreateBuffers(1, &r->line_buffer);
    glCreateBuffers(1, &r->text_buffer);
    r->line_vao = make_vao(r->line_buffer, 3, offsetof(q_line_vertex, rgba), sizeof(q_line_vertex));
    r->text_vao = make_vao(r->text_buffer, 2, offsetof(q_text_vertex, rgba), sizeof(q_text_vertex));
    return true;
}

void q_overlay_destroy(q_renderer *r)
{
    GLuint programs[] = {r->line_program, r->text_program};
    for (int i = 0; i < 2; i++)
        if (programs[i])
            glDeleteProgram(programs[i]);
    GLuint buffers[] = {r->line_buffer, r->text_buffer};
    glDeleteBuffers(2, buffers);
    GLuint vaos[] = {r->line_vao, r->text_vao};
    glDeleteVertexArrays(2, vaos);
    free(r->lines);
    free(r->top_lines);
    free(r->text);
    free(r->font_scratch);
}

static bool reserve(void **data, size_t *capacity, size_t need, size_t item)
{
    if (need <= *capacity)
        return true;
    size_t cap = *capacity ? *capacity : 256;
    while (cap < need)
        cap *= 2;
    void *grown = realloc(*data, cap * item);
    if (!grown)
        return false;
    *data = grown;
    *capacity = cap;
    return true;
}

static void to_rgba8(const float rgba[4], uint8_t out[4])
{
    for (int k = 0; k < 4; k++) {
        float c = rgba[k] < 0.0f ? 0.0f : rgba[k] > 1.0f ? 1.0f : rgba[k];
        out[k] = (uint8_t)(c * 255.0f + 0.5f);
    }
}

static void queue_line(q_line_vertex **lines, size_t *count, size_t *capacity, const float a[3],
                       const float b[3], const float rgba[4])
{
    if (!reserve((void **)lines, capacity, *count + 2, sizeof **lines))
        return; /* out of memory: the line is dropped, the frame goes on */
    q_line_vertex *v = *lines + *count;
    memcpy(v[0].position, a, sizeof v[0].position);
    memcpy(v[1].position, b, sizeof v[1].position);
    to_rgba8(rgba, v[0].rgba);
    memcpy(v[1].rgba, v[0].rgba, sizeof v[1].rgba);
    *count += 2;
}

void q_render_line(q_renderer *r, const float a[3], const float b[3], const float rgba[4])
{
    queue_line(&r->lines, &r->line_count, &r->line_capacity, a, b, rgba);
}

void q_overlay_top_line(q_renderer *r, const float a[3], const float b[3], const float rgba[4])
{
    queue_line(&r->top_lines, &r->top_line_count, &r->top_line_capacity, a, b, rgba);
}

/* Appends the font's quads as triangles, offset and scaled into pixels. */
static void add_quads(q_renderer *r, const char *vbuf, int quads, float x, float y, float scale,
                      const uint8_t rgba[4])
{
    if (!reserve((void **)&r->text, &r->text_capacity, r->text_count + (size_t)quads * 6, sizeof *r->text))
        return;
    float sx = r->window_width > 0 ? (float)r->width / (float)r->window_width : 1.0f;
    float sy = r->window_height > 0 ? (float)r->height / (float)r->window_height : 1.0f;
    static const int corners[6] = {0, 1, 2, 0, 2, 3};
    for (int q = 0; q < quads; q++) {
        for (int k = 0; k < 6; k++) {
            float p[2]; /* stb_easy_font vertex: x, y, z floats then 4 colour bytes */
            memcpy(p, vbuf + (size_t)(4 * q + corners[k]) * 16, sizeof p);
            q_text_vertex *v = &r->text[r->text_count++];
            v->position[0] = (x + p[0] * scale) * sx;
            v->position[1] = (y + p[1] * scale) * sy;
            memcpy(v->rgba, rgba, sizeof v->rgba);
        }
    }
}

void q_render_text(q_renderer *r, const char *text, float x, float y, float scale, const float rgba[4])
{
    size_t n = strlen(text);
    if (n > MAX_TEXT_CHARS)
        n = MAX_TEXT_CHARS;
    size_t need = n * FONT_BYTES_PER_CHAR + 64;
    if (need > r->font_scratch_size) {
        char *grown = realloc(r->font_scratch, need + n + 1);
        if (!grown)
            return;
        r->font_scratch = grown;
        r->font_scratch_size = need;
    }
    /* The font covers printable ASCII only; its tables are indexed by
     * (char - 32), so anything else must not reach it. */
    char *clean = r->font_scratch + r->font_scratch_size;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        clean[i] = c == '\n' || (c >= 32 && c < 127) ? (char)c : '?';
    }
    clean[n] = '\0';
    int quads = stb_easy_font_print(0.0f, 0.0f, clean, NULL, r->font_scratch, (int)need);
    uint8_t shadow[4] = {0, 0, 0, 0}, fill[4];
    to_rgba8(rgba, fill);
    shadow[3] = (uint8_t)(fill[3] * 0.75f);
    add_quads(r, r->font_scratch, quads, x + scale, y + scale, scale, shadow);
    add_quads(r, r->font_scratch, quads, x, y, scale, fill);
}

void q_overlay_flush(q_renderer *r, const q_camera *camera)
{
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glDisable(GL_CULL_FACE);
    for (int pass = 0; pass < 2; pass++) {
        const q_line_vertex *lines = pass ? r->top_lines : r->lines;
        size_t count = pass ? r->top_line_count : r->line_count;
        if (count == 0)
            continue;
        float vp[16];
        q_camera_view_proj(camera, r->height > 0 ? (float)r->width / (float)r->height : 1.0f, vp);
        glNamedBufferData(r->line_buffer, (GLsizeiptr)(count * sizeof *lines), lines, GL_STREAM_DRAW);
        glUseProgram(r->line_program);
        glUniformMatrix4fv(r->line_view_proj, 1, GL_FALSE, vp);
        if (pass) {
            glDisable(GL_DEPTH_TEST);
        } else {
            glEnable(GL_DEPTH_TEST);
            glDepthFunc(GL_LEQUAL);
        }
        glDepthMask(GL_FALSE);
        glBindVertexArray(r->line_vao);
        glDrawArrays(GL_LINES, 0, (GLsizei)count);
        glDepthMask(GL_TRUE);
        glDepthFunc(GL_LESS);
    }
    if (r->text_count > 0) {
        glNamedBufferData(r->text_buffer, (GLsizeiptr)(r->text_count * sizeof *r->text), r->text,
                          GL_STREAM_DRAW);
        glUseProgram(r->text_program);
        glUniform2f(r->text_screen, (float)r->width, (float)r->height);
        glDisable(GL_DEPTH_TEST);
        glBindVertexArray(r->text_vao);
        glDrawArrays(GL_TRIANGLES, 0, (GLsizei)r->text_count);
    }
    glBindVertexArray(0);
    glUseProgram(0);
    glDisable(GL_BLEND);
    glDisable(GL_DEPTH_TEST);
    r->line_count = r->top_line_count = r->text_count = 0;
}
