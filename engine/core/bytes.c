/* Little-endian byte buffers: see bytes.h. */
#include "core/bytes.h"

#include "core/alloc.h"

#include <string.h>

unsigned char *q_buf_grow(q_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (n > SIZE_MAX / 2 - b->size) {
        b->failed = true;
        return NULL;
    }
    if (b->size + n > b->capacity) {
        size_t cap = b->capacity ? b->capacity : 4096;
        while (cap < b->size + n)
            cap *= 2;
        unsigned char *d = q_realloc(b->data, b->capacity, cap);
        if (!d) {
            b->failed = true;
            return NULL;
        }
        b->data = d;
        b->capacity = cap;
    }
    b->size += n;
    return b->data + b->size - n;
}

void q_buf_put(q_buf *b, const void *p, size_t n)
{
    unsigned char *d = q_buf_grow(b, n);
    if (d && n)
        memcpy(d, p, n);
}

void q_buf_u8(q_buf *b, uint8_t v) { q_buf_put(b, &v, 1); }

void q_buf_u16(q_buf *b, uint16_t v)
{
    unsigned char s[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    q_buf_put(b, s, 2);
}

void q_buf_u32(q_buf *b, uint32_t v)
{
    unsigned char s[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    q_buf_put(b, s, 4);
}

void q_buf_u64(q_buf *b, uint64_t v)
{
    q_buf_u32(b, (uint32_t)v);
    q_buf_u32(b, (uint32_t)(v >> 32));
}

void q_buf_f32(q_buf *b, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    q_buf_u32(b, u);
}

void q_buf_f64(q_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    q_buf_u64(b, u);
}

void q_buf_f64s(q_buf *b, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        q_buf_f64(b, v[i]);
}

void q_buf_free(q_buf *b)
{
    q_free(b->data, b->capacity);
    memset(b, 0, sizeof *b);
}

const unsigned char *q_read_take(q_reader *r, size_t n)
{
    if (r->failed || r->size - r->at < n) {
        r->failed = true;
        return NULL;
    }
    const unsigned char *s = r->p + r->at;
    r->at += n;
    return s;
}

uint8_t q_read_u8(q_reader *r)
{
    const unsigned char *s = q_read_take(r, 1);
    return s ? s[0] : 0;
}

uint16_t q_read_u16(q_reader *r)
{
    const unsigned char *s = q_read_take(r, 2);
    return s ? (uint16_t)(s[0] | s[1] << 8) : 0;
}

uint32_t q_read_u32(q_reader *r)
{
    const unsigned char *s = q_read_take(r, 4);
    return s ? (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24 : 0;
}

uint64_t q_read_u64(q_reader *r)
{
    uint64_t lo = q_read_u32(r);
    return lo | (uint64_t)q_read_u32(r) << 32;
}

float q_read_f32(q_reader *r)
{
    uint32_t u = q_read_u32(r);
    float v;
    memcpy(&v, &u, 4);
    return v;
}

double q_read_f64(q_reader *r)
{
    uint64_t u = q_read_u64(r);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

void q_read_f64s(q_reader *r, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = q_read_f64(r);
}
