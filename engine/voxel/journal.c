/* Terrain edit journal (journal.h): box snapshots, run-length encoded, on an
 * undo stack and a redo stack. */
#include "voxel/journal.h"

#include "core/alloc.h"
#include "core/array.h"

#include <stdio.h>
#include <string.h>

typedef struct q_journal_record {
    q_box box;
    uint8_t *data; /* runs: LEB128 length, material, occupancy */
    size_t size;
} q_journal_record;

typedef Q_ARRAY(q_journal_record) record_stack; /* newest last */

struct q_journal {
    q_journal_def def;
    record_stack undo, redo;
    size_t bytes;
    size_t cleared, dropped;
    /* the edit between begin and commit */
    bool pending, have_copy;
    uint64_t version;
    q_box bound;
    uint8_t *copy; /* materials then occupancy, volume(bound) each */
    size_t copy_n;
};

q_journal_def q_default_journal_def(void)
{
    return (q_journal_def){.limit_bytes = 16u << 20, .steps = 100};
}

size_t q_journal_record_overhead(void)
{
    return sizeof(q_journal_record);
}

static q_journal_def clamp_def(const q_journal_def *def)
{
    q_journal_def d = def ? *def : q_default_journal_def();
    if (d.limit_bytes < Q_JOURNAL_MIN_BYTES)
        d.limit_bytes = Q_JOURNAL_MIN_BYTES;
    if (d.steps > Q_JOURNAL_MAX_STEPS)
        d.steps = Q_JOURNAL_MAX_STEPS;
    return d;
}

q_journal *q_journal_create(const q_journal_def *def)
{
    q_journal *j = q_calloc(1, sizeof *j);
    if (j)
        j->def = clamp_def(def);
    return j;
}

static void free_copy(q_journal *j)
{
    q_free(j->copy, 2 * j->copy_n);
    j->copy = NULL;
    j->copy_n = 0;
    j->have_copy = false;
}

static size_t cost(const q_journal_record *r)
{
    return r->size + sizeof *r;
}

static void free_records(q_journal *j, record_stack *s)
{
    for (size_t i = 0; i < s->count; i++) {
        j->bytes -= cost(&s->data[i]);
        q_free(s->data[i].data, s->data[i].size);
    }
    s->count = 0;
}

void q_journal_clear(q_journal *j)
{
    free_records(j, &j->undo);
    free_records(j, &j->redo);
}

void q_journal_destroy(q_journal *j)
{
    if (!j)
        return;
    q_journal_clear(j);
    q_array_free(&j->undo);
    q_array_free(&j->redo);
    free_copy(j);
    q_free(j, sizeof *j);
}

/* Drops the record at index i of s. */
static void drop(q_journal *j, record_stack *s, size_t i)
{
    j->bytes -= cost(&s->data[i]);
    q_free(s->data[i].data, s->data[i].size);
    memmove(&s->data[i], &s->data[i + 1], (s->count - i - 1) * sizeof *s->data);
    s->count--;
    j->dropped++;
}

/* Oldest undo records first, then the redo records farthest from now. */
static void trim(q_journal *j)
{
    while (j->undo.count + j->redo.count > j->def.steps || j->bytes > j->def.limit_bytes) {
        if (j->undo.count > 0)
            drop(j, &j->undo, 0);
        else
            drop(j, &j->redo, 0);
    }
}

void q_journal_configure(q_journal *j, const q_journal_def *def)
{
    j->def = clamp_def(def);
    trim(j);
}

q_journal_def q_journal_get_def(const q_journal *j)
{
    return j->def;
}

q_journal_stats q_journal_get_stats(const q_journal *j)
{
    return (q_journal_stats){j->undo.count, j->redo.count, j->bytes, j->cleared, j->dropped};
}

/* ---- run-length coding ---- */

static size_t varint_size(size_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_run(uint8_t *out, size_t len, uint8_t m, uint8_t o)
{
    while (len >= 0x80) {
        *out++ = (uint8_t)(len | 0x80);
        len >>= 7;
    }
    *out++ = (uint8_t)len;
    *out++ = m;
    *out++ = o;
    return out;
}

/* Encodes the voxels of crop (inside src) from src-shaped arrays mat/occ.
 * Two passes: the first sizes the output exactly. False when out of memory. */
static bool encode(q_box src, const uint8_t *mat, const uint8_t *occ, q_box crop, q_journal_record *out)
{
    const size_t nx = (size_t)(src.max[0] - src.min[0]), ny = (size_t)(src.max[1] - src.min[1]);
    uint8_t *data = NULL, *w = NULL;
    size_t size = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t run = 0;
        uint8_t rm = 0, ro = 0;
        for (int32_t z = crop.min[2]; z < crop.max[2]; z++)
            for (int32_t y = crop.min[1]; y < crop.max[1]; y++) {
                size_t i = (size_t)(crop.min[0] - src.min[0]) +
                           nx * ((size_t)(y - src.min[1]) + ny * (size_t)(z - src.min[2]));
                for (int32_t x = crop.min[0]; x < crop.max[0]; x++, i++) {
                    if (run > 0 && mat[i] == rm && occ[i] == ro) {
                        run++;
                        continue;
                    }
                    if (run > 0) {
                        if (pass == 0)
                            size += varint_size(run) + 2;
                        else
                            w = put_run(w, run, rm, ro);
                    }
                    run = 1;
                    rm = mat[i];
                    ro = occ[i];
                }
            }
        if (run > 0) {
            if (pass == 0)
                size += varint_size(run) + 2;
            else
                w = put_run(w, run, rm, ro);
        }
        if (pass == 0) {
            if (size == 0)
                break;
            data = w = q_alloc(size);
            if (!data)
                return false;
        }
    }
    *out = (q_journal_record){crop, data, size};
    return true;
}

/* Expands a record into arrays of volume(r->box) entries. */
static void decode(const q_journal_record *r, uint8_t *mat, uint8_t *occ)
{
    const uint8_t *p = r->data, *end = r->data + r->size;
    size_t at = 0;
    while (p < end) {
        size_t len = 0;
        int shift = 0;
        while (*p & 0x80) {
            len |= (size_t)(*p++ & 0x7f) << shift;
            shift += 7;
        }
        len |= (size_t)*p++ << shift;
        memset(mat + at, p[0], len);
        memset(occ + at, p[1], len);
        p += 2;
        at += len;
    }
}

/* ---- recording ---- */

q_status q_journal_begin(q_journal *j, const q_terrain *t, const q_box *bound)
{
    free_copy(j);
    j->pending = j->def.steps > 0;
    if (!j->pending)
        return Q_OK;
    j->version = q_terrain_version(t);
    if (!bound)
        return Q_OK;
    q_box b = *bound;
    for (int a = 0; a < 3; a++) {
        if (b.min[a] < -Q_TERRAIN_LIMIT)
            b.min[a] = -Q_TERRAIN_LIMIT;
        if (b.max[a] > Q_TERRAIN_LIMIT)
            b.max[a] = Q_TERRAIN_LIMIT;
        if (b.max[a] < b.min[a])
            b.max[a] = b.min[a];
    }
    uint64_t n = q_box_volume(b);
    if (n > Q_JOURNAL_MAX_VOXELS)
        return Q_OK;
    if (n > 0) {
        j->copy = q_alloc(2 * (size_t)n);
        if (!j->copy)
            return Q_ERR_MEMORY;
        j->copy_n = (size_t)n;
        char err[64];
        if (q_terrain_read(t, b, j->copy, j->copy + n, err, sizeof err) != Q_OK) {
            free_copy(j);
            return Q_ERR_MEMORY;
        }
    }
    j->bound = b;
    j->have_copy = true;
    return Q_OK;
}

void q_journal_abort(q_journal *j)
{
    j->pending = false;
    free_copy(j);
}

typedef struct box_union {
    q_box box;
    bool any;
} box_union;

static void add_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    box_union *u = ud;
    if (q_box_volume(box) == 0)
        return;
    if (!u->any) {
        u->box = box;
        u->any = true;
        return;
    }
    for (int a = 0; a < 3; a++) {
        if (box.min[a] < u->box.min[a])
            u->box.min[a] = box.min[a];
        if (box.max[a] > u->box.max[a])
            u->box.max[a] = box.max[a];
    }
}

static bool inside(q_box in, q_box out)
{
    for (int a = 0; a < 3; a++)
        if (in.min[a] < out.min[a] || in.max[a] > out.max[a])
            return false;
    return true;
}

static q_journal_outcome forget(q_journal *j)
{
    free_copy(j);
    q_journal_clear(j);
    j->cleared++;
    return Q_JOURNAL_CLEARED;
}

q_journal_outcome q_journal_commit(q_journal *j, const q_terrain *t)
{
    if (!j->pending)
        return Q_JOURNAL_UNCHANGED;
    j->pending = false;
    if (q_terrain_version(t) == j->version) {
        free_copy(j);
        return Q_JOURNAL_UNCHANGED;
    }
    box_union u = {0};
    if (!q_terrain_changes_since(t, j->version, add_change, &u) || !j->have_copy)
        return forget(j);
    if (!u.any) { /* versions moved but no box was logged: nothing to restore */
        free_copy(j);
        return Q_JOURNAL_UNCHANGED;
    }
    if (!inside(u.box, j->bound))
        return forget(j);
    q_journal_record r;
    if (!encode(j->bound, j->copy, j->copy + j->copy_n, u.box, &r))
        return forget(j);
    free_copy(j);
    if (cost(&r) > j->def.limit_bytes || !q_array_reserve(&j->undo, j->undo.count + 1)) {
        q_free(r.data, r.size);
        return forget(j);
    }
    free_records(j, &j->redo);
    j->undo.data[j->undo.count++] = r;
    j->bytes += cost(&r);
    trim(j);
    return Q_JOURNAL_RECORDED;
}

/* ---- undo and redo ---- */

/* Pops the newest record of `from`, records the current voxels of its box on
 * `to` and writes the popped voxels back. */
static q_status move(q_journal *j, q_terrain *t, record_stack *from, record_stack *to, bool *done, char *err,
                     size_t errlen)
{
    *done = false;
    q_journal_abort(j);
    if (from->count == 0)
        return Q_OK;
    q_journal_record *r = &from->data[from->count - 1];
    size_t n = (size_t)q_box_volume(r->box);
    if (!q_array_reserve(to, to->count + 1))
        goto oom;
    uint8_t *buf = q_alloc(4 * n); /* current materials, occupancy; recorded ones */
    if (!buf)
        goto oom;
    q_journal_record now;
    q_status st = q_terrain_read(t, r->box, buf, buf + n, err, errlen);
    if (st == Q_OK && !encode(r->box, buf, buf + n, r->box, &now)) {
        q_free(buf, 4 * n);
        goto oom;
    }
    if (st == Q_OK) {
        decode(r, buf + 2 * n, buf + 3 * n);
        st = q_terrain_write(t, r->box, buf + 2 * n, buf + 3 * n, err, errlen);
        if (st != Q_OK)
            q_free(now.data, now.size);
    }
    q_free(buf, 4 * n);
    if (st != Q_OK)
        return st;
    j->bytes -= cost(r);
    q_free(r->data, r->size);
    from->count--;
    to->data[to->count++] = now;
    j->bytes += cost(&now);
    trim(j);
    *done = true;
    return Q_OK;
oom:
    snprintf(err, errlen, "out of memory");
    return Q_ERR_MEMORY;
}

q_status q_journal_undo(q_journal *j, q_terrain *t, bool *done, char *err, size_t errlen)
{
    return move(j, t, &j->undo, &j->redo, done, err, errlen);
}

q_status q_journal_redo(q_journal *j, q_terrain *t, bool *done, char *err, size_t errlen)
{
    return move(j, t, &j->redo, &j->undo, done, err, errlen);
}
