/* Helpers shared by the benchmark programs: a monotonic clock, medians, a
 * printed table of "ours vs baseline" rows and raw figures in bench/out/.
 *
 * Each program takes the output directory as argv[1]; it writes
 * <dir>/<program>.tsv with one line per figure:
 *   program  case  value  unit  samples
 * where value is in base units (voxels/s, bytes/s, bytes, ratio) and samples
 * lists every repetition's seconds (comma separated) for timed figures.
 */
#ifndef Q_BENCH_H
#define Q_BENCH_H

#include <stddef.h>

#include "voxel/terrain.h"

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);
/* CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID): time the
 * shared VM gives to other processes is not counted. */
double bench_thread_now(void);
/* Median of v[0..n) (sorts v in place); n >= 1. */
double bench_median(double *v, int n);

/* Opens <dir>/<program>.tsv and prints the table header for a section. */
void bench_begin(const char *program, const char *dir);
void bench_section(const char *title);
/* Like bench_section, but the last column of this section's rows is
 * baseline/ours: for times, above 1 means ours is faster. */
void bench_section_inverse(const char *title);
/* One table row: our figure, the baseline's (negative when there is none)
 * and ours/baseline (baseline/ours in an inverse section). Values are in
 * base units; display divides by scale and appends unit_shown (e.g. 1e6,
 * "Mvox/s"). Both figures go to the tsv, with the samples (seconds per
 * repetition) of ours and of the baseline. */
void bench_row(const char *what, double ours, const double *ours_samples, int n_ours, const char *baseline,
               double base, const double *base_samples, int n_base, const char *unit, double scale,
               const char *unit_shown);
/* A note under the table (also written to the tsv as a comment). */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bench_end(void);

/* Exits with a message when st is not Q_OK. */
void bench_check(q_status st, const char *what, const char *err);
/* A new terrain generated with the default definition but for kind, size
 * and seed; exits with a message on failure. */
q_terrain *bench_world(q_terrain_kind kind, int32_t sx, int32_t sy, int32_t sz, uint64_t seed);
/* q_alloc-free malloc that exits on failure (bench-side buffers). */
void *bench_xmalloc(size_t size);

#endif
