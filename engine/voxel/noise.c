/* Gradient noise: see noise.h. */
#include "voxel/noise.h"

#include <math.h>

static uint64_t hash3(uint64_t seed, int64_t x, int64_t y, int64_t z)
{
    uint64_t h = seed ^ 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)x * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 31)) * 0x94d049bb133111ebull;
    h ^= (uint64_t)y * 0xd6e8feb86659fd93ull;
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
    h ^= (uint64_t)z * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 32)) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

static double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }
static double lerp(double a, double b, double t) { return a + (b - a) * t; }

/* Dot of one of 12 edge-midpoint gradients (Perlin 2002) with the offset. */
static double grad3(uint64_t h, double x, double y, double z)
{
    switch ((h >> 40) % 12) {
    case 0: return x + y;
    case 1: return -x + y;
    case 2: return x - y;
    case 3: return -x - y;
    case 4: return x + z;
    case 5: return -x + z;
    case 6: return x - z;
    case 7: return -x - z;
    case 8: return y + z;
    case 9: return -y + z;
    case 10: return y - z;
    default: return -y - z;
    }
}

double q_noise3(uint64_t seed, double x, double y, double z)
{
    double fx = floor(x), fy = floor(y), fz = floor(z);
    int64_t ix = (int64_t)fx, iy = (int64_t)fy, iz = (int64_t)fz;
    double dx = x - fx, dy = y - fy, dz = z - fz;
    double u = fade(dx), v = fade(dy), w = fade(dz);
    double c[8];
    for (int k = 0; k < 8; k++) {
        int a = k & 1, b = (k >> 1) & 1, e = (k >> 2) & 1;
        c[k] = grad3(hash3(seed, ix + a, iy + b, iz + e), dx - a, dy - b, dz - e);
    }
    double x00 = lerp(c[0], c[1], u), x10 = lerp(c[2], c[3], u);
    double x01 = lerp(c[4], c[5], u), x11 = lerp(c[6], c[7], u);
    return lerp(lerp(x00, x10, v), lerp(x01, x11, v), w);
}

double q_noise2(uint64_t seed, double x, double y)
{
    /* A slice of 3D noise off the lattice plane (z = 0 would give zero
     * gradient contribution along z and visible grid artefacts). */
    return q_noise3(seed, x, y, 0.5) * 1.4;
}

double q_fbm2(uint64_t seed, double x, double y, int octaves, double gain)
{
    double sum = 0, amp = 1, norm = 0;
    for (int i = 0; i < octaves; i++) {
        sum += amp * q_noise2(seed + (uint64_t)i * 7919u, x, y);
        norm += amp;
        amp *= gain;
        x *= 2.0;
        y *= 2.0;
    }
    return sum / norm;
}

double q_fbm3(uint64_t seed, double x, double y, double z, int octaves, double gain)
{
    double sum = 0, amp = 1, norm = 0;
    for (int i = 0; i < octaves; i++) {
        sum += amp * q_noise3(seed + (uint64_t)i * 7919u, x, y, z);
        norm += amp;
        amp *= gain;
        x *= 2.0;
        y *= 2.0;
        z *= 2.0;
    }
    return sum / norm;
}
