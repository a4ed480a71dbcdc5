/* Terrain edit journal: undo and redo of terrain edits (issue 11, the
 * sandbox's Ctrl+Z / Ctrl+Y).
 *
 * Recording. An edit is bracketed by two calls: q_journal_begin copies the
 * voxels of a box that holds everything the edit may touch (the caller's
 * bound), the edit runs, and q_journal_commit asks the terrain's change log
 * (q_terrain_changes_since) which boxes the edit really logged. The record
 * keeps the copied voxels of the union of those boxes only, so it holds
 * exactly the box the edit reports, not the caller's looser bound. An edit
 * that changed nothing records nothing (and leaves redo alone); any other
 * edit clears the redo stack.
 *
 * Records. A record is a box and its voxels run-length encoded in read order
 * (x fastest, then y, then z): runs of equal (material, occupancy) pairs, each
 * a LEB128 length followed by the two bytes. Terrain is mostly long runs of
 * air and of full solid with a skin of partial voxels, so a ball edit of
 * radius r costs roughly its skin, O(r^2) bytes, instead of 2 (2r)^3.
 *
 * Undo and redo. Undo pops the newest record, reads the current voxels of its
 * box into a new record that goes on the redo stack, and writes the old ones
 * back with q_terrain_write (so the change log, meshes, physics and island
 * tracking all see it as an ordinary change). Redo is the mirror image. Both
 * restore exactly the box content that was recorded: equal content gives an
 * equal q_terrain_hash. Changes made without the journal (islands detached,
 * q_terrain_generate) are not recorded; undo still restores its box as it was
 * before the edit, over whatever happened there since.
 *
 * Budget. limit_bytes bounds the encoded bytes of both stacks together plus
 * a fixed cost per record (sizeof(q_journal_record)); steps bounds the number
 * of records on both stacks together. Past either limit the oldest undo
 * records go first, then the redo records farthest from the present. An edit
 * whose own record does not fit the budget, or whose box could not be
 * bounded beforehand, or is over Q_JOURNAL_MAX_VOXELS, cannot be undone: the
 * journal is cleared (undoing older edits across it would not give back any
 * state the terrain was in). The copy taken by begin is working memory, not
 * counted: at most 2 bytes per voxel of the bound, freed by commit, abort,
 * the next begin or destroy.
 */
#ifndef Q_JOURNAL_H
#define Q_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

/* Largest box begin copies: 2^24 voxels (32 MiB of working copy). */
#define Q_JOURNAL_MAX_VOXELS (1ull << 24)

typedef struct q_journal_def {
    size_t limit_bytes; /* default 16 MiB; at least Q_JOURNAL_MIN_BYTES */
    size_t steps;       /* default 100; 0 turns recording off (and clears) */
} q_journal_def;
#define Q_JOURNAL_MIN_BYTES 1024
#define Q_JOURNAL_MAX_STEPS 1000000

q_journal_def q_default_journal_def(void);

typedef struct q_journal q_journal;

/* NULL when out of memory. def may be NULL for the defaults; its values are
 * clamped to the ranges above. */
q_journal *q_journal_create(const q_journal_def *def);
void q_journal_destroy(q_journal *j);

/* New limits; records past them are dropped at once (oldest first). */
void q_journal_configure(q_journal *j, const q_journal_def *def);
q_journal_def q_journal_get_def(const q_journal *j);

/* Forgets every record. */
void q_journal_clear(q_journal *j);

/* Starts recording an edit of t whose changes all lie inside bound (NULL:
 * the edit's extent is unknown, so commit clears the journal if it changed
 * anything). Returns Q_ERR_MEMORY when the copy cannot be made (the edit may
 * still run; commit then clears the journal if it changed anything). */
q_status q_journal_begin(q_journal *j, const q_terrain *t, const q_box *bound);

typedef enum q_journal_outcome {
    Q_JOURNAL_UNCHANGED, /* the edit changed nothing: no record */
    Q_JOURNAL_RECORDED,  /* one more undo step */
    Q_JOURNAL_CLEARED,   /* it could not be recorded: history forgotten */
} q_journal_outcome;

/* Finishes the edit begun last: records what changed since begin. */
q_journal_outcome q_journal_commit(q_journal *j, const q_terrain *t);
/* Forgets a begun edit that failed (the terrain is unchanged on failure). */
void q_journal_abort(q_journal *j);

/* Undoes the newest recorded edit (*done false when there is none) or redoes
 * the newest undone one. On failure (out of memory while writing) the
 * terrain and both stacks are as before. */
q_status q_journal_undo(q_journal *j, q_terrain *t, bool *done, char *err, size_t errlen);
q_status q_journal_redo(q_journal *j, q_terrain *t, bool *done, char *err, size_t errlen);

typedef struct q_journal_stats {
    size_t undo_steps, redo_steps;
    size_t bytes;      /* counted against limit_bytes */
    size_t cleared;    /* times an edit could not be recorded */
    size_t dropped;    /* records dropped to stay within the limits */
} q_journal_stats;
q_journal_stats q_journal_get_stats(const q_journal *j);

/* Fixed cost counted per record besides its encoded voxels. */
size_t q_journal_record_overhead(void);

#endif
