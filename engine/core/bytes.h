/* Little-endian byte buffers for file formats: a growable writer that
 * remembers a failed allocation (check once at the end) and a bounds-checked
 * reader that returns zeros once it runs past the end (check r.failed). */
#ifndef Q_BYTES_H
#define Q_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct q_buf {
    unsigned char *data;
    size_t size, capacity;
    bool failed;
} q_buf;

/* Appends n uninitialised bytes and returns them (NULL once failed). */
unsigned char *q_buf_grow(q_buf *b, size_t n);
void q_buf_put(q_buf *b, const void *p, size_t n);
void q_buf_u8(q_buf *b, uint8_t v);
void q_buf_u16(q_buf *b, uint16_t v);
void q_buf_u32(q_buf *b, uint32_t v);
void q_buf_u64(q_buf *b, uint64_t v);
void q_buf_f32(q_buf *b, float v);
void q_buf_f64(q_buf *b, double v);
void q_buf_f64s(q_buf *b, const double *v, size_t n);
void q_buf_free(q_buf *b);

typedef struct q_reader {
    const unsigned char *p;
    size_t size, at;
    bool failed;
} q_reader;

/* The next n bytes, or NULL (and failed) when fewer are left. */
const unsigned char *q_read_take(q_reader *r, size_t n);
uint8_t q_read_u8(q_reader *r);
uint16_t q_read_u16(q_reader *r);
uint32_t q_read_u32(q_reader *r);
uint64_t q_read_u64(q_reader *r);
float q_read_f32(q_reader *r);
double q_read_f64(q_reader *r);
void q_read_f64s(q_reader *r, double *v, size_t n);

#endif
