/* Allocation and log hooks: see alloc.h. */
#include "core/alloc.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static q_alloc_fn g_alloc = default_alloc;
static void *g_alloc_ud;
static atomic_size_t g_live;

void q_set_allocator(q_alloc_fn fn, void *ud)
{
    g_alloc = fn ? fn : default_alloc;
    g_alloc_ud = fn ? ud : NULL;
}

void *q_alloc(size_t size)
{
    if (size == 0)
        return NULL;
    void *p = g_alloc(g_alloc_ud, NULL, 0, size);
    if (p)
        atomic_fetch_add(&g_live, size);
    return p;
}

void *q_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    void *p = q_alloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *q_realloc(void *ptr, size_t old_size, size_t new_size)
{
    if (!ptr)
        return q_alloc(new_size);
    if (new_size == 0) {
        q_free(ptr, old_size);
        return NULL;
    }
    void *p = g_alloc(g_alloc_ud, ptr, old_size, new_size);
    if (p) {
        atomic_fetch_sub(&g_live, old_size);
        atomic_fetch_add(&g_live, new_size);
    }
    return p;
}

void q_free(void *ptr, size_t size)
{
    if (!ptr)
        return;
    g_alloc(g_alloc_ud, ptr, size, 0);
    atomic_fetch_sub(&g_live, size);
}

size_t q_alloc_live_bytes(void)
{
    return atomic_load(&g_live);
}

/* ---- log ---- */

static void default_log(void *ud, q_log_level level, const char *message)
{
    (void)ud;
    static const char *names[] = {"debug", "info", "warning", "error"};
    if (level >= Q_LOG_INFO)
        fprintf(stderr, "quarry %s: %s\n", names[level], message);
}

static q_log_fn g_log = default_log;
static void *g_log_ud;

void q_set_log(q_log_fn fn, void *ud)
{
    g_log = fn ? fn : default_log;
    g_log_ud = fn ? ud : NULL;
}

void q_log(q_log_level level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_log(g_log_ud, level, buf);
}
