/* Quarry allocation and log hooks.
 *
 * Every engine allocation goes through q_alloc/q_realloc/q_free so that a host
 * can route memory to its own allocator (the hook has lua_Alloc's shape) and so
 * that the engine can report live bytes. Set the hooks once, before any world
 * is created; they are process-wide.
 */
#ifndef Q_ALLOC_H
#define Q_ALLOC_H

#include <stddef.h>

/* Like lua_Alloc: nsize == 0 frees ptr and returns NULL; otherwise behaves as
 * realloc(ptr, nsize). osize is the size previously requested for ptr (0 when
 * ptr is NULL). Must be thread-safe: worker threads allocate too. */
typedef void *(*q_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* Installs an allocator; NULL restores the default (malloc/realloc/free). */
void q_set_allocator(q_alloc_fn fn, void *ud);

/* Returns NULL on failure (never aborts); size 0 returns NULL. */
void *q_alloc(size_t size);
/* Zero-filled q_alloc of count * size bytes; NULL on overflow or failure. */
void *q_calloc(size_t count, size_t size);
/* Grows or shrinks a block from q_alloc. On failure returns NULL and leaves
 * ptr untouched. */
void *q_realloc(void *ptr, size_t old_size, size_t new_size);
/* Frees a block from q_alloc; size must be the size it was allocated with. */
void q_free(void *ptr, size_t size);

/* Bytes currently allocated through these functions (all worlds). */
size_t q_alloc_live_bytes(void);

/* ---- log ---- */
typedef enum q_log_level { Q_LOG_DEBUG, Q_LOG_INFO, Q_LOG_WARN, Q_LOG_ERROR } q_log_level;
typedef void (*q_log_fn)(void *ud, q_log_level level, const char *message);

/* Installs a log sink; NULL restores the default (stderr, INFO and above). */
void q_set_log(q_log_fn fn, void *ud);
void q_log(q_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
