/* Bit broadphase over 8^3 physics chunks (seed 000, "Bit broadphase"): mask
 * construction by shifts and ORs, and the AABB test with two lookup tables.
 * The chunk table and sync live in terrain_physics.c. */
#include "physics/physics_internal.h"

#include "voxel/material.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* Rows of 10 bits: the chunk's 8 voxels plus one on each side. */
#define ROW_MASK 0x3ffu

bool q_bp_build_chunk(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz, q_bp_masks *out)
{
    q_box box = {{cx * Q_PHYS_CHUNK - 1, cy * Q_PHYS_CHUNK - 1, cz * Q_PHYS_CHUNK - 1},
                 {cx * Q_PHYS_CHUNK + 9, cy * Q_PHYS_CHUNK + 9, cz * Q_PHYS_CHUNK + 9}};
    char err[64];
    memset(out, 0, sizeof *out);
    if (q_terrain_read(p->terrain, box, p->mat10, p->occ10, err, sizeof err) != Q_OK)
        return false;
    uint16_t solid[10][10], water[10][10]; /* [y][z], bit x */
    int nsolid = 0, nwater = 0;
    for (int y = 0; y < 10; y++)
        for (int z = 0; z < 10; z++) {
            uint16_t s = 0, w = 0;
            for (int x = 0; x < 10; x++) {
                int i = x + 10 * (y + 10 * z);
                if (p->occ10[i] < 128)
                    continue;
                if (p->liquid[p->mat10[i]])
                    w |= (uint16_t)(1u << x);
                else
                    s |= (uint16_t)(1u << x);
            }
            solid[y][z] = s;
            water[y][z] = w;
            nsolid += __builtin_popcount(s);
            nwater += __builtin_popcount(w);
        }
    out->solid_tag = nsolid == 0 ? Q_BP_NONE : nsolid == 1000 ? Q_BP_FULL : Q_BP_MASK;
    out->water_tag = nwater == 0 ? Q_BP_NONE : nwater == 1000 ? Q_BP_FULL : Q_BP_MASK;
    for (int kind = 0; kind < 2; kind++) {
        uint16_t(*in)[10] = kind == 0 ? solid : water;
        uint8_t tag = kind == 0 ? out->solid_tag : out->water_tag;
        if (tag != Q_BP_MASK)
            continue;
        uint16_t dx[10][10], dz[10][10];
        for (int y = 0; y < 10; y++)
            for (int z = 0; z < 10; z++) {
                uint16_t r = in[y][z];
                dx[y][z] = (uint16_t)((r | r << 1 | r >> 1) & ROW_MASK);
            }
        for (int y = 0; y < 10; y++)
            for (int z = 0; z < 10; z++)
                dz[y][z] = (uint16_t)(dx[y][z] | (z > 0 ? dx[y][z - 1] : 0) | (z < 9 ? dx[y][z + 1] : 0));
        uint64_t *words = kind == 0 ? out->solid : out->water;
        uint64_t any = 0;
        for (int y = 1; y <= 8; y++) {
            uint64_t word = 0;
            for (int z = 1; z <= 8; z++) {
                uint16_t r = (uint16_t)(dz[y - 1][z] | dz[y][z] | dz[y + 1][z]);
                word |= (uint64_t)((r >> 1) & 0xffu) << (8 * (z - 1));
            }
            words[y - 1] = word;
            any |= word;
        }
        if (!any) { /* inside samples only in the ring, and none reach the chunk */
            if (kind == 0)
                out->solid_tag = Q_BP_NONE;
            else
                out->water_tag = Q_BP_NONE;
        }
    }
    return true;
}

/* LUT_X[a][b]: x in [a, b] on every z row; LUT_Z[a][b]: rows z in [a, b]. */
static uint64_t LUT_X[8][8], LUT_Z[8][8];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

static void init_luts(void)
{
    for (int a = 0; a < 8; a++)
        for (int b = a; b < 8; b++) {
            uint64_t row = ((1u << (b + 1)) - 1u) & ~((1u << a) - 1u);
            LUT_X[a][b] = row * 0x0101010101010101ull;
            uint64_t rows = 0;
            for (int z = a; z <= b; z++)
                rows |= 0xffull << (8 * z);
            LUT_Z[a][b] = rows;
        }
}

/* The masks of one stored chunk against the voxel range [vmin, vmax]. */
static void test_entry(const q_terrain_physics *p, const q_bp_entry *e, const int64_t vmin[3], const int64_t vmax[3],
                       q_overlap *r)
{
    int lo[3], hi[3];
    const int64_t c[3] = {e->cx, e->cy, e->cz};
    for (int a = 0; a < 3; a++) {
        int64_t base = c[a] * Q_PHYS_CHUNK;
        lo[a] = (int)(vmin[a] > base ? vmin[a] - base : 0);
        hi[a] = (int)(vmax[a] < base + 7 ? vmax[a] - base : 7);
    }
    uint64_t mask = LUT_X[lo[0]][hi[0]] & LUT_Z[lo[2]][hi[2]];
    for (int kind = 0; kind < 2; kind++) {
        uint8_t tag = kind == 0 ? e->solid_tag : e->water_tag;
        bool *flag = kind == 0 ? &r->solid : &r->water;
        if (*flag || tag == Q_BP_NONE)
            continue;
        if (tag == Q_BP_FULL) {
            *flag = true;
            continue;
        }
        const uint64_t *words = p->pool[kind].slots.data[e->slot[kind]].bits;
        for (int y = lo[1]; y <= hi[1]; y++)
            if (words[y] & mask) {
                *flag = true;
                break;
            }
    }
}

q_overlap q_terrain_physics_broadphase(q_terrain_physics *p, const double min[3], const double max[3])
{
    q_overlap r = {false, false};
    if (!q_terrain_physics_sync(p))
        return (q_overlap){true, true}; /* conservative when the data is unavailable */
    pthread_once(&lut_once, init_luts);
    int64_t vmin[3], vmax[3]; /* inclusive voxel range, grown by one voxel */
    for (int a = 0; a < 3; a++) {
        double lo = floor(min[a] / p->voxel_size) - 1, hi = floor(max[a] / p->voxel_size) + 1;
        if (!(lo <= hi) || hi < -Q_PHYS_LIMIT || lo >= Q_PHYS_LIMIT)
            return r;
        vmin[a] = (int64_t)fmax(lo, -Q_PHYS_LIMIT);
        vmax[a] = (int64_t)fmin(hi, Q_PHYS_LIMIT - 1);
    }
    /* A box spanning more chunks than are stored walks the stored entries
     * instead (a huge box must not mean a huge loop). */
    double span = (double)((vmax[0] >> 3) - (vmin[0] >> 3) + 1) * (double)((vmax[1] >> 3) - (vmin[1] >> 3) + 1) *
                  (double)((vmax[2] >> 3) - (vmin[2] >> 3) + 1);
    if (span > (double)p->bp.count) {
        for (size_t i = 0; i < p->bp.count && !(r.solid && r.water); i++) {
            const q_bp_entry *e = &p->bp.data[i];
            if (e->cx >= vmin[0] >> 3 && e->cx <= vmax[0] >> 3 && e->cy >= vmin[1] >> 3 && e->cy <= vmax[1] >> 3 &&
                e->cz >= vmin[2] >> 3 && e->cz <= vmax[2] >> 3)
                test_entry(p, e, vmin, vmax, &r);
        }
        return r;
    }
    for (int64_t cz = vmin[2] >> 3; cz <= vmax[2] >> 3; cz++)
        for (int64_t cy = vmin[1] >> 3; cy <= vmax[1] >> 3; cy++)
            for (int64_t cx = vmin[0] >> 3; cx <= vmax[0] >> 3; cx++) {
                const q_bp_entry *e = q_bp_find(p, (int32_t)cx, (int32_t)cy, (int32_t)cz);
                if (e)
                    test_entry(p, e, vmin, vmax, &r);
                if (r.solid && r.water)
                    return r;
            }
    return r;
}
