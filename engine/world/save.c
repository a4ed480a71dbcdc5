/* World files: versioned, little-endian, zstd-compressed chunks, a digest per
 * record, written atomically.
 *
 * Layout (version 2; version 1 files, without flags and bodies, still load):
 *   magic    8 bytes  "QRYW\r\n\x1a\n" (PNG's trick: text-mode mangling shows)
 *   version  u32
 *   hsize    u32      bytes of the header record that follows
 *   header   voxel_size f64, gravity 3 f64, step f64, substeps u32, seed u64,
 *            frame u64, accumulator f64, materials u32 then per material
 *            {id u8, name_len u8, name, density f32, friction f32,
 *            restitution f32, color 3 f32, strength f32, flags u8},
 *            world flags u8 (1: auto_detach), chunks u64
 *   hdigest  u64      digest of the header record
 *   chunks   per chunk: cx i32, cy i32, cz i32, kind u8, then
 *            kind 0 (uniform): material u8, occupancy u8
 *            kind 1 (dense):   size u32, zstd frame of 32^3 materials then
 *                              32^3 occupancies (x fastest)
 *            then a u64 digest of the chunk record
 *   bodies   size u64, the record of physics/bodies_io.c, u64 digest of it
 *   trailer  "QEND", u64 digest of (chunk count, every chunk digest, the
 *            bodies digest)
 *
 * The loader reads the whole file and checks every length, digest, id and
 * coordinate before building the world, so it never returns a partial world.
 */
#include "world/world.h"

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/digest.h"
#include "physics/bodies.h"
#include "voxel/material.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>

#define FILE_VERSION 2
#define ZSTD_LEVEL 3
#define MAX_FILE_BYTES (1ull << 34)
#define CHUNK_LIMIT (Q_TERRAIN_LIMIT / Q_CHUNK_SIZE)

static const unsigned char MAGIC[8] = {'Q', 'R', 'Y', 'W', '\r', '\n', 0x1a, '\n'};
static const unsigned char TRAILER[4] = {'Q', 'E', 'N', 'D'};

static long g_fail_after = -1;

void q_world_debug_fail_save_after(long bytes)
{
    g_fail_after = bytes;
}

/* ---- writing ---- */

typedef struct writer {
    int fd;
    bool failed;
    char *err;
    size_t errlen;
} writer;

static void write_all(writer *w, const void *p, size_t n)
{
    const unsigned char *s = p;
    while (!w->failed && n > 0) {
        size_t chunk = n;
        if (g_fail_after >= 0 && (long)chunk > g_fail_after)
            chunk = (size_t)g_fail_after;
        if (chunk == 0) {
            snprintf(w->err, w->errlen, "write failed: simulated failure (test hook)");
            w->failed = true;
            return;
        }
        ssize_t k = write(w->fd, s, chunk);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            snprintf(w->err, w->errlen, "write failed: %s", strerror(errno));
            w->failed = true;
            return;
        }
        if (g_fail_after >= 0)
            g_fail_after -= k;
        s += k;
        n -= (size_t)k;
    }
}

static void header_record(const q_world *w, size_t chunks, q_buf *h)
{
    const q_world_def *d = q_world_get_def(w);
    q_buf_f64(h, d->voxel_size);
    for (int a = 0; a < 3; a++)
        q_buf_f64(h, d->gravity[a]);
    q_buf_f64(h, d->step);
    q_buf_u32(h, (uint32_t)d->substeps);
    q_buf_u64(h, d->seed);
    q_buf_u64(h, q_world_frame(w));
    q_buf_f64(h, q_world_accumulator(w));
    int nmat = q_material_count();
    q_buf_u32(h, (uint32_t)nmat);
    for (int i = 0; i < nmat; i++) {
        const q_material *m = q_material_get(i);
        size_t len = strlen(m->name);
        q_buf_u8(h, (uint8_t)i);
        q_buf_u8(h, (uint8_t)len);
        q_buf_put(h, m->name, len);
        q_buf_f32(h, m->density);
        q_buf_f32(h, m->friction);
        q_buf_f32(h, m->restitution);
        for (int c = 0; c < 3; c++)
            q_buf_f32(h, m->color[c]);
        q_buf_f32(h, m->strength);
        q_buf_u8(h, (uint8_t)((m->brittle ? 1 : 0) | (m->liquid ? 2 : 0)));
    }
    q_buf_u8(h, (uint8_t)(d->auto_detach ? 1 : 0));
    q_buf_u64(h, (uint64_t)chunks);
}

/* Encodes one chunk record (without its digest) into rec. */
static bool chunk_record(const q_chunk_view *v, ZSTD_CCtx *cctx, unsigned char *planar, q_buf *rec)
{
    rec->size = 0;
    q_buf_u32(rec, (uint32_t)v->cx);
    q_buf_u32(rec, (uint32_t)v->cy);
    q_buf_u32(rec, (uint32_t)v->cz);
    if (!v->voxels) {
        q_buf_u8(rec, 0);
        q_buf_u8(rec, v->uniform.material);
        q_buf_u8(rec, v->uniform.occupancy);
        return !rec->failed;
    }
    q_buf_u8(rec, 1);
    for (int i = 0; i < Q_CHUNK_VOXELS; i++) {
        planar[i] = v->voxels[i].material;
        planar[Q_CHUNK_VOXELS + i] = v->voxels[i].occupancy;
    }
    size_t bound = ZSTD_compressBound(2 * Q_CHUNK_VOXELS);
    size_t at = rec->size + 4;
    q_buf_u32(rec, 0);
    if (!q_buf_grow(rec, bound)) /* room for the frame; trimmed below */
        return false;
    size_t n = ZSTD_compressCCtx(cctx, rec->data + at, bound, planar, 2 * Q_CHUNK_VOXELS, ZSTD_LEVEL);
    if (ZSTD_isError(n))
        return false;
    rec->size = at + n;
    for (int k = 0; k < 4; k++)
        rec->data[at - 4 + k] = (unsigned char)(n >> (8 * k));
    return true;
}

/* True when process pid has ended: kill(pid, 0) fails with ESRCH, or it is a
 * zombie (ended, not yet reaped by its parent, which for an orphan may take a
 * while; kill() still finds it, Linux's /proc shows state Z). EPERM (alive,
 * another user's) counts as alive. */
static bool process_gone(long pid)
{
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char name[64], text[512];
    snprintf(name, sizeof name, "/proc/%ld/stat", pid);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = 0;
    /* "pid (comm) S ...": comm may hold spaces and parentheses */
    const char *end = strrchr(text, ')');
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* A save killed between creating "<path>.tmp-<pid>" and renaming it onto path
 * leaves that file behind. Removes the ones of this path whose writer has
 * ended (process_gone). A live writer's file stays: two processes saving the
 * same path never delete each other's file mid-write. A stale file whose pid
 * has been reused stays until that process ends. Best effort, and it never
 * touches path itself, so it cannot weaken the guarantee that path holds a
 * whole save. */
static void remove_stale_temps(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    char dir[4096];
    if (blen == 0)
        return;
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        size_t dlen = (size_t)(slash - path);
        if (dlen >= sizeof dir)
            return;
        memcpy(dir, path, dlen);
        dir[dlen] = 0;
    }
    DIR *d = opendir(dir);
    if (!d)
        return;
    const long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5) != 0)
            continue;
        /* the pid exactly as the saver writes it: decimal, no sign, no leading 0 */
        const char *digits = name + blen + 5;
        long pid = 0;
        int nd = 0;
        while (digits[nd] >= '0' && digits[nd] <= '9' && nd < 10)
            pid = 10 * pid + (digits[nd++] - '0');
        if (nd == 0 || digits[nd] != 0 || digits[0] == '0' || pid == self || pid > INT32_MAX)
            continue;
        if (process_gone(pid))
            unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

q_status q_world_save(const q_world *w, const char *path, char *err, size_t errlen)
{
    q_terrain *t = q_world_terrain((q_world *)w);
    size_t n = q_terrain_chunk_count(t);
    q_chunk_view *views = q_alloc(n * sizeof *views + 1);
    unsigned char *planar = q_alloc(2 * Q_CHUNK_VOXELS);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    q_buf head = {0}, rec = {0};
    q_status st = Q_OK;
    char tmp[4096];
    int fd = -1;
    bool created = false;

    if (!views || !planar || !cctx) {
        snprintf(err, errlen, "out of memory");
        st = Q_ERR_MEMORY;
        goto done;
    }
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errlen, "path too long");
        st = Q_ERR_ARGUMENT;
        goto done;
    }
    q_terrain_chunk_views(t, views);
    remove_stale_temps(path); /* first: frees the space they hold */

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
        st = Q_ERR_IO;
        goto done;
    }
    created = true;
    writer wr = {fd, false, err, errlen};
    header_record(w, n, &head);
    q_buf pre = {0};
    q_buf_put(&pre, MAGIC, sizeof MAGIC);
    q_buf_u32(&pre, FILE_VERSION);
    q_buf_u32(&pre, (uint32_t)head.size);
    q_buf_u64(&head, q_digest_of(head.data, head.size, 0));
    if (pre.failed || head.failed) {
        q_buf_free(&pre);
        snprintf(err, errlen, "out of memory");
        st = Q_ERR_MEMORY;
        goto done;
    }
    write_all(&wr, pre.data, pre.size);
    q_buf_free(&pre);
    write_all(&wr, head.data, head.size);

    q_digest all;
    q_digest_init(&all, 0);
    q_digest_u64(&all, n);
    for (size_t i = 0; i < n && !wr.failed; i++) {
        if (!chunk_record(&views[i], cctx, planar, &rec)) {
            snprintf(err, errlen, "out of memory while compressing");
            st = Q_ERR_MEMORY;
            goto done;
        }
        uint64_t dg = q_digest_of(rec.data, rec.size, 0);
        q_buf_u64(&rec, dg);
        q_digest_u64(&all, dg);
        write_all(&wr, rec.data, rec.size);
    }
    rec.size = 0;
    if (!wr.failed) {
        /* bodies: length, record, digest */
        q_buf_u64(&rec, 0);
        size_t start = rec.size;
        if (!q_bodies_write(q_world_bodies((q_world *)w), &rec)) {
            snprintf(err, errlen, "out of memory");
            st = Q_ERR_MEMORY;
            goto done;
        }
        uint64_t body_bytes = rec.size - start, dg = q_digest_of(rec.data + start, body_bytes, 0);
        for (int k = 0; k < 8; k++)
            rec.data[k] = (unsigned char)(body_bytes >> (8 * k));
        q_buf_u64(&rec, dg);
        q_digest_u64(&all, dg);
        write_all(&wr, rec.data, rec.size);
        rec.size = 0;
    }
    q_buf_put(&rec, TRAILER, sizeof TRAILER);
    q_buf_u64(&rec, q_digest_final(&all));
    write_all(&wr, rec.data, rec.size);
    if (!wr.failed && fsync(fd) != 0) {
        snprintf(err, errlen, "fsync failed: %s", strerror(errno));
        wr.failed = true;
    }
    if (close(fd) != 0 && !wr.failed) {
        snprintf(err, errlen, "close failed: %s", strerror(errno));
        wr.failed = true;
    }
    fd = -1;
    if (wr.failed) {
        st = Q_ERR_IO;
        goto done;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename onto '%s': %s", path, strerror(errno));
        st = Q_ERR_IO;
        goto done;
    }
    /* Make the rename itself durable. */
    {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
done:
    if (fd >= 0)
        close(fd);
    if (st != Q_OK && created)
        unlink(tmp);
    q_buf_free(&head);
    q_buf_free(&rec);
    ZSTD_freeCCtx(cctx);
    q_free(planar, 2 * Q_CHUNK_VOXELS);
    q_free(views, n * sizeof *views + 1);
    return st;
}

/* ---- reading ---- */

static unsigned char *read_file(const char *path, size_t *size, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        close(fd);
        return NULL;
    }
    if ((unsigned long long)sb.st_size > MAX_FILE_BYTES) {
        snprintf(err, errlen, "'%s' is too large to be a world file", path);
        close(fd);
        return NULL;
    }
    *size = (size_t)sb.st_size;
    unsigned char *data = q_alloc(*size + 1);
    if (!data) {
        snprintf(err, errlen, "out of memory reading '%s'", path);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < *size) {
        ssize_t k = read(fd, data + got, *size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(err, errlen, "cannot read '%s': %s", path, k < 0 ? strerror(errno) : "file shrank");
            q_free(data, *size + 1);
            close(fd);
            return NULL;
        }
        got += (size_t)k;
    }
    close(fd);
    return data;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        goto fail;                                                                                 \
    } while (0)

q_world *q_world_load(const char *path, char *err, size_t errlen)
{
    size_t size = 0;
    unsigned char *data = read_file(path, &size, err, errlen);
    if (!data)
        return NULL;
    q_world *w = NULL;
    q_voxel *voxels = q_alloc(Q_CHUNK_VOXELS * sizeof *voxels);
    unsigned char *planar = q_alloc(2 * Q_CHUNK_VOXELS);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    uint8_t remap[Q_MATERIAL_MAX] = {0};
    int file_materials = 0;
    q_reader r = {data, size, 0, false};

    if (!voxels || !planar || !dctx)
        FAIL("out of memory");
    const unsigned char *magic = q_read_take(&r, sizeof MAGIC);
    if (!magic || memcmp(magic, MAGIC, sizeof MAGIC) != 0)
        FAIL("'%s' is not a Quarry world file (bad magic)", path);
    uint32_t version = q_read_u32(&r);
    if (r.failed)
        FAIL("'%s' is truncated", path);
    if (version < 1 || version > FILE_VERSION)
        FAIL("'%s' has format version %u; this build reads versions 1 to %d", path, version, FILE_VERSION);
    uint32_t hsize = q_read_u32(&r);
    const unsigned char *hdata = q_read_take(&r, hsize);
    uint64_t hdigest = q_read_u64(&r);
    if (r.failed)
        FAIL("'%s' is truncated (in the header)", path);
    if (q_digest_of(hdata, hsize, 0) != hdigest)
        FAIL("'%s' is corrupt: header checksum mismatch", path);

    q_reader h = {hdata, hsize, 0, false};
    q_world_def def = q_default_world_def();
    def.voxel_size = q_read_f64(&h);
    for (int a = 0; a < 3; a++)
        def.gravity[a] = q_read_f64(&h);
    def.step = q_read_f64(&h);
    def.substeps = (int)q_read_u32(&h);
    def.seed = q_read_u64(&h);
    uint64_t frame = q_read_u64(&h);
    double accumulator = q_read_f64(&h);
    uint32_t nmat = q_read_u32(&h);
    if (h.failed || nmat == 0 || nmat > Q_MATERIAL_MAX)
        FAIL("'%s' is corrupt: bad header", path);
    file_materials = (int)nmat;
    for (uint32_t i = 0; i < nmat; i++) {
        uint8_t id = q_read_u8(&h), len = q_read_u8(&h);
        const unsigned char *name = q_read_take(&h, len);
        q_material m = q_default_material();
        m.density = q_read_f32(&h);
        m.friction = q_read_f32(&h);
        m.restitution = q_read_f32(&h);
        for (int c = 0; c < 3; c++)
            m.color[c] = q_read_f32(&h);
        m.strength = q_read_f32(&h);
        uint8_t flags = q_read_u8(&h);
        if (h.failed || id != i || len > Q_MATERIAL_NAME_MAX)
            FAIL("'%s' is corrupt: bad material table", path);
        memcpy(m.name, name, len);
        m.name[len] = '\0';
        m.brittle = flags & 1;
        m.liquid = (flags & 2) != 0;
        int local = q_material_find(m.name);
        if (local < 0) {
            char why[160];
            local = q_material_define(&m, why, sizeof why);
            if (local < 0)
                FAIL("'%s': cannot define material '%s': %s", path, m.name, why);
        }
        remap[i] = (uint8_t)local;
    }
    if (version >= 2)
        def.auto_detach = (q_read_u8(&h) & 1) != 0;
    uint64_t nchunks = q_read_u64(&h);
    if (h.failed || h.at != h.size)
        FAIL("'%s' is corrupt: bad header", path);
    if (nchunks > (r.size - r.at) / 16)
        FAIL("'%s' is truncated or corrupt: %llu chunks announced", path, (unsigned long long)nchunks);

    char why[256];
    w = q_world_create(&def, why, sizeof why);
    if (!w)
        FAIL("'%s' holds invalid world settings: %s", path, why);
    q_world_set_clock(w, frame, accumulator);
    q_terrain *t = q_world_terrain(w);

    q_digest all;
    q_digest_init(&all, 0);
    q_digest_u64(&all, nchunks);
    for (uint64_t c = 0; c < nchunks; c++) {
        size_t start = r.at;
        int32_t cx = (int32_t)q_read_u32(&r), cy = (int32_t)q_read_u32(&r), cz = (int32_t)q_read_u32(&r);
        uint8_t kind = q_read_u8(&r);
        q_voxel uniform = {0, 0};
        const unsigned char *payload = NULL;
        uint32_t psize = 0;
        if (kind == 0) {
            uniform.material = q_read_u8(&r);
            uniform.occupancy = q_read_u8(&r);
        } else if (kind == 1) {
            psize = q_read_u32(&r);
            payload = q_read_take(&r, psize);
        } else if (!r.failed) {
            FAIL("'%s' is corrupt: chunk %llu has unknown kind %u", path, (unsigned long long)c, kind);
        }
        size_t end = r.at;
        uint64_t dg = q_read_u64(&r);
        if (r.failed)
            FAIL("'%s' is truncated (in chunk %llu of %llu)", path, (unsigned long long)c,
                 (unsigned long long)nchunks);
        if (q_digest_of(data + start, end - start, 0) != dg)
            FAIL("'%s' is corrupt: checksum mismatch in chunk %llu", path, (unsigned long long)c);
        q_digest_u64(&all, dg);
        if (cx < -CHUNK_LIMIT || cx >= CHUNK_LIMIT || cy < -CHUNK_LIMIT || cy >= CHUNK_LIMIT ||
            cz < -CHUNK_LIMIT || cz >= CHUNK_LIMIT)
            FAIL("'%s' is corrupt: chunk %llu lies outside the world", path, (unsigned long long)c);
        if (q_terrain_has_chunk(t, cx, cy, cz))
            FAIL("'%s' is corrupt: chunk (%d, %d, %d) appears twice", path, cx, cy, cz);
        if (kind == 0) {
            if (uniform.material >= file_materials)
                FAIL("'%s' is corrupt: bad material id in chunk %llu", path, (unsigned long long)c);
            uniform.material = remap[uniform.material];
            if (q_terrain_set_chunk(t, cx, cy, cz, NULL, uniform) != Q_OK)
                FAIL("out of memory");
            continue;
        }
        size_t got = ZSTD_decompressDCtx(dctx, planar, 2 * Q_CHUNK_VOXELS, payload, psize);
        if (ZSTD_isError(got) || got != 2 * Q_CHUNK_VOXELS)
            FAIL("'%s' is corrupt: chunk %llu does not decompress", path, (unsigned long long)c);
        for (int i = 0; i < Q_CHUNK_VOXELS; i++) {
            if (planar[i] >= file_materials)
                FAIL("'%s' is corrupt: bad material id in chunk %llu", path, (unsigned long long)c);
            voxels[i] = (q_voxel){remap[planar[i]], planar[Q_CHUNK_VOXELS + i]};
        }
        if (q_terrain_set_chunk(t, cx, cy, cz, voxels, uniform) != Q_OK)
            FAIL("out of memory");
    }
    if (version >= 2) {
        uint64_t body_bytes = q_read_u64(&r);
        const unsigned char *body_rec = r.failed || body_bytes > r.size - r.at ? NULL : q_read_take(&r, body_bytes);
        uint64_t dg = q_read_u64(&r);
        if (r.failed || !body_rec)
            FAIL("'%s' is truncated (in the bodies)", path);
        if (q_digest_of(body_rec, body_bytes, 0) != dg)
            FAIL("'%s' is corrupt: checksum mismatch in the bodies", path);
        q_digest_u64(&all, dg);
        q_reader br = {body_rec, body_bytes, 0, false};
        if (!q_bodies_read(q_world_bodies(w), &br, remap, file_materials, why, sizeof why))
            FAIL("'%s' is corrupt: %s", path, why);
        if (br.at != br.size)
            FAIL("'%s' is corrupt: unexpected bytes in the bodies", path);
    }
    const unsigned char *trailer = q_read_take(&r, sizeof TRAILER);
    uint64_t total = q_read_u64(&r);
    if (r.failed || memcmp(trailer, TRAILER, sizeof TRAILER) != 0)
        FAIL("'%s' is truncated (no end marker)", path);
    if (total != q_digest_final(&all))
        FAIL("'%s' is corrupt: chunk list checksum mismatch", path);
    if (r.at != r.size)
        FAIL("'%s' is corrupt: %zu unexpected bytes after the end marker", path, r.size - r.at);
    goto done;
fail:
    q_world_destroy(w);
    w = NULL;
done:
    ZSTD_freeDCtx(dctx);
    q_free(planar, 2 * Q_CHUNK_VOXELS);
    q_free(voxels, Q_CHUNK_VOXELS * sizeof *voxels);
    q_free(data, size + 1);
    return w;
}
