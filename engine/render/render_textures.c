/* Material textures: one layer of a GL texture array per material id, made
 * procedurally from the material's colour (no image files).
 *
 * Each layer is a 64x64 tileable pattern: fractal value noise whose lattice
 * wraps at the tile edge (so triplanar mapping shows no seams), with a few
 * named materials given their own structure (cracked rock, speckled grass,
 * wood grain, brick courses). Colours are built in linear RGB and stored as
 * sRGB8 so that 8 bits spend their precision where the eye needs it; the
 * shader samples linear values back.
 *
 * The layers are rebuilt whenever the material table changes (a script may
 * define materials at any time), detected by a digest of names and colours.
 * The same pass fills the "steep" table: the layer a material shows on
 * slopes too steep for it (grass and snow show rock, as in seed 002's
 * texturing section).
 */
#include "render/render_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "voxel/material.h"

#define TEX_SIZE 64
#define TEX_LEVELS 7 /* 64 .. 1 */

static uint32_t hash2(uint32_t seed, uint32_t x, uint32_t y)
{
    uint32_t h = seed * 0x9e3779b1u ^ x * 0x85ebca6bu ^ y * 0xc2b2ae35u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

static float unit_hash(uint32_t seed, uint32_t x, uint32_t y)
{
    return (float)(hash2(seed, x, y) >> 8) / 16777216.0f;
}

static float smooth(float t)
{
    return t * t * (3.0f - 2.0f * t);
}

/* Value noise in [0, 1) at (u, v) in tiles, with `period` lattice cells per
 * tile; wraps at the tile edge. */
static float value_noise(uint32_t seed, float u, float v, int period)
{
    float x = u * (float)period, y = v * (float)period;
    float fx = floorf(x), fy = floorf(y);
    int ix = (int)fx, iy = (int)fy;
    float tx = smooth(x - fx), ty = smooth(y - fy);
    uint32_t x0 = (uint32_t)(((ix % period) + period) % period), x1 = (x0 + 1) % (uint32_t)period;
    uint32_t y0 = (uint32_t)(((iy % period) + period) % period), y1 = (y0 + 1) % (uint32_t)period;
    float a = unit_hash(seed, x0, y0), b = unit_hash(seed, x1, y0);
    float c = unit_hash(seed, x0, y1), d = unit_hash(seed, x1, y1);
    return (a + (b - a) * tx) + ((c + (d - c) * tx) - (a + (b - a) * tx)) * ty;
}

/* Fractal sum of `octaves` value noises from `period` up, halving amplitude
 * each octave; in [0, 1). */
static float fbm(uint32_t seed, float u, float v, int period, int octaves)
{
    float sum = 0.0f, amp = 0.5f, norm = 0.0f;
    for (int o = 0; o < octaves; o++) {
        sum += amp * value_noise(seed + (uint32_t)o * 101u, u, v, period << o);
        norm += amp;
        amp *= 0.5f;
    }
    return sum / norm;
}

static float clamp01(float v)
{
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

static uint8_t to_srgb8(float linear)
{
    float c = clamp01(linear);
    float s = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    return (uint8_t)lrintf(s * 255.0f);
}

typedef enum pattern {
    PATTERN_PLAIN, PATTERN_ROCK, PATTERN_GRASS, PATTERN_DIRT, PATTERN_SAND, PATTERN_SNOW,
    PATTERN_WOOD, PATTERN_BRICK, PATTERN_METAL, PATTERN_WATER,
} pattern;

static pattern pattern_of(const char *name)
{
    static const struct {
        const char *name;
        pattern p;
    } named[] = {
        {"rock", PATTERN_ROCK}, {"grass", PATTERN_GRASS}, {"dirt", PATTERN_DIRT},
        {"sand", PATTERN_SAND}, {"snow", PATTERN_SNOW}, {"ice", PATTERN_SNOW},
        {"glass", PATTERN_SNOW}, {"wood", PATTERN_WOOD}, {"brick", PATTERN_BRICK},
        {"metal", PATTERN_METAL}, {"concrete", PATTERN_SAND}, {"water", PATTERN_WATER},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(name, named[i].name) == 0)
            return named[i].p;
    return PATTERN_PLAIN;
}

/* Brightness factor (around 1) and tint of texel (x, y) for a pattern. */
static void texel(pattern p, uint32_t seed, int x, int y, float *bright, float tint[3])
{
    float u = ((float)x + 0.5f) / TEX_SIZE, v = ((float)y + 0.5f) / TEX_SIZE;
    float n = fbm(seed, u, v, 4, 4);
    float grain = unit_hash(seed ^ 0x5eedu, (uint32_t)x, (uint32_t)y);
    tint[0] = tint[1] = tint[2] = 1.0f;
    switch (p) {
    case PATTERN_ROCK: {
        /* Ridged fractal noise: thin, soft dark veins between lighter plates. */
        float ridge = 1.0f - fabsf(2.0f * fbm(seed ^ 0xc0ffeeu, u, v, 4, 3) - 1.0f);
        float t = clamp01((ridge - 0.86f) / 0.12f);
        float vein = 0.3f * t * t * (3.0f - 2.0f * t);
        *bright = 0.72f + 0.55f * n + 0.12f * (grain - 0.5f) - vein;
        break;
    }
    case PATTERN_GRASS: {
        float patch = fbm(seed ^ 0x9a55u, u, v, 2, 3);
        *bright = 0.75f + 0.4f * n + 0.35f * (grain - 0.5f);
        tint[0] = 0.85f + 0.4f * patch; /* drier, yellower patches */
        tint[2] = 0.9f;
        break;
    }
    case PATTERN_DIRT:
        *bright = 0.72f + 0.5f * n + (grain > 0.93f ? 0.35f : 0.1f * (grain - 0.5f));
        break;
    case PATTERN_SAND:
        *bright = 0.9f + 0.16f * n + 0.18f * (grain - 0.5f);
        break;
    case PATTERN_SNOW:
        *bright = 0.94f + 0.1f * n + 0.04f * (grain - 0.5f);
        break;
    case PATTERN_WOOD: {
        float w = fbm(seed ^ 0x30du, u, v, 4, 2);
        float ring = v * 6.0f + 1.5f * w;
        ring -= floorf(ring);
        *bright = 0.8f + 0.25f * ring + 0.1f * (grain - 0.5f);
        break;
    }
    case PATTERN_BRICK: {
        /* Four courses per tile, two bricks per course, every other course
         * shifted by half a brick; 2-texel mortar joints. */
        int course = y / 16, off = course % 2 ? 16 : 0;
        int bx = (x + off) % TEX_SIZE;
        bool mortar = y % 16 < 2 || bx % 32 < 2;
        if (mortar) {
            *bright = 1.6f + 0.1f * (grain - 0.5f);
            tint[0] = 0.9f;
            tint[1] = 1.25f;
            tint[2] = 1.4f;
        } else {
            float brick = unit_hash(seed ^ 0xb41cu, (uint32_t)(bx / 32), (uint32_t)course);
            *bright = 0.8f + 0.3f * brick + 0.2f * n + 0.1f * (grain - 0.5f);
        }
        break;
    }
    case PATTERN_METAL: {
        float streak = value_noise(seed ^ 0x3e7u, u, v * 16.0f / 64.0f, 32);
        *bright = 0.9f + 0.15f * streak + 0.05f * (grain - 0.5f);
        break;
    }
    case PATTERN_WATER:
        *bright = 0.88f + 0.24f * n;
        break;
    default:
        *bright = 0.8f + 0.4f * n + 0.08f * (grain - 0.5f);
        break;
    }
}

static uint32_t name_seed(const char *name)
{
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    return h;
}

static void fill_layer(const q_material *m, uint8_t *out)
{
    pattern p = pattern_of(m->name);
    uint32_t seed = name_seed(m->name);
    for (int y = 0; y < TEX_SIZE; y++)
        for (int x = 0; x < TEX_SIZE; x++) {
            float bright, tint[3];
            texel(p, seed, x, y, &bright, tint);
            uint8_t *px = out + 4 * (y * TEX_SIZE + x);
            for (int k = 0; k < 3; k++)
                px[k] = to_srgb8(m->color[k] * bright * tint[k]);
            px[3] = 255;
        }
}

static uint64_t material_signature(void)
{
    uint64_t h = 1469598103934665603ull;
    int n = q_material_count();
    for (int id = 0; id < n; id++) {
        const q_material *m = q_material_get(id);
        unsigned char bytes[sizeof m->name + sizeof m->color];
        memcpy(bytes, m->name, sizeof m->name);
        memcpy(bytes + sizeof m->name, m->color, sizeof m->color);
        for (size_t i = 0; i < sizeof bytes; i++)
            h = (h ^ bytes[i]) * 1099511628211ull;
    }
    return h ^ (uint64_t)n;
}

/* The layer a material shows where the surface is too steep for it. */
static uint32_t steep_layer(int id)
{
    const char *name = q_material_get(id)->name;
    if (strcmp(name, "grass") == 0 || strcmp(name, "snow") == 0) {
        int rock = q_material_find("rock");
        if (rock >= 0)
            return (uint32_t)rock;
    }
    return (uint32_t)id;
}

bool q_textures_update(q_renderer *r)
{
    uint64_t sig = material_signature();
    if (r->texture_array && sig == r->material_signature)
        return true;
    int layers = q_material_count();
    uint8_t *pixels = malloc((size_t)layers * TEX_SIZE * TEX_SIZE * 4);
    uint32_t *steep = malloc((size_t)layers * sizeof *steep);
    if (!pixels || !steep) {
        free(pixels);
        free(steep);
        return false;
    }
    for (int id = 0; id < layers; id++) {
        fill_layer(q_material_get(id), pixels + (size_t)id * TEX_SIZE * TEX_SIZE * 4);
        steep[id] = steep_layer(id);
    }

    q_textures_destroy(r);
    glCreateTextures(GL_TEXTURE_2D_ARRAY, 1, &r->texture_array);
    glTextureStorage3D(r->texture_array, TEX_LEVELS, GL_SRGB8_ALPHA8, TEX_SIZE, TEX_SIZE, layers);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTextureSubImage3D(r->texture_array, 0, 0, 0, 0, TEX_SIZE, TEX_SIZE, layers, GL_RGBA,
                        GL_UNSIGNED_BYTE, pixels);
    glGenerateTextureMipmap(r->texture_array);
    glTextureParameteri(r->texture_array, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_NEAREST);
    glTextureParameteri(r->texture_array, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTextureParameteri(r->texture_array, GL_TEXTURE_WRAP_S, GL_REPEAT);
    glTextureParameteri(r->texture_array, GL_TEXTURE_WRAP_T, GL_REPEAT);

    glCreateBuffers(1, &r->steep_buffer);
    glNamedBufferStorage(r->steep_buffer, (GLsizeiptr)((size_t)layers * sizeof *steep), steep, 0);

    free(pixels);
    free(steep);
    r->texture_layers = layers;
    r->material_signature = sig;
    return true;
}

void q_textures_destroy(q_renderer *r)
{
    if (r->texture_array)
        glDeleteTextures(1, &r->texture_array);
    if (r->steep_buffer)
        glDeleteBuffers(1, &r->steep_buffer);
    r->texture_array = r->steep_buffer = 0;
    r->texture_layers = 0;
}
