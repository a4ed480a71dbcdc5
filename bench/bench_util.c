/* Shared benchmark helpers: see bench.h. */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *g_raw;
static const char *g_program = "";
static char g_section[128]; /* the title up to its first ':', for the tsv */
static int g_inverse;       /* ratio column is baseline/ours */

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_thread_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_begin(const char *program, const char *dir)
{
    char path[4096];
    g_program = program;
    snprintf(path, sizeof path, "%s/%s.tsv", dir, program);
    g_raw = fopen(path, "w");
    if (!g_raw) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        exit(1);
    }
    fprintf(g_raw, "# program\tcase\tvalue\tunit\tsamples_s\n");
}

static void section(const char *title, int inverse)
{
    snprintf(g_section, sizeof g_section, "%s", title);
    g_section[strcspn(g_section, ":")] = '\0';
    g_inverse = inverse;
    printf("\n%s\n", title);
    printf("  %-50s %13s   %-27s %13s  %9s\n", "case", "ours", "baseline", "baseline",
           inverse ? "base/ours" : "ours/base");
    printf("  %-50s %13s   %-27s %13s  %9s\n", "----", "----", "--------", "--------", "---------");
}

void bench_section(const char *title)
{
    section(title, 0);
}

void bench_section_inverse(const char *title)
{
    section(title, 1);
}

static void raw_line(const char *what, double value, const char *unit, const double *samples, int n)
{
    if (!g_raw)
        return;
    fprintf(g_raw, "%s\t%s: %s\t%.10g\t%s\t", g_program, g_section, what, value, unit);
    for (int i = 0; i < n; i++)
        fprintf(g_raw, "%s%.6g", i ? "," : "", samples[i]);
    fprintf(g_raw, "%s\n", n ? "" : "-");
}

void bench_row(const char *what, double ours, const double *ours_samples, int n_ours, const char *baseline,
               double base, const double *base_samples, int n_base, const char *unit, double scale,
               const char *unit_shown)
{
    char a[64], b[64], r[32];
    snprintf(a, sizeof a, "%.4g %s", ours / scale, unit_shown);
    if (base >= 0) {
        snprintf(b, sizeof b, "%.4g %s", base / scale, unit_shown);
        if (g_inverse)
            snprintf(r, sizeof r, "%.3f", ours > 0 ? base / ours : 0.0);
        else
            snprintf(r, sizeof r, "%.3f", base > 0 ? ours / base : 0.0);
    } else {
        snprintf(b, sizeof b, "-");
        snprintf(r, sizeof r, "-");
    }
    printf("  %-50s %13s   %-27s %13s  %9s\n", what, a, base >= 0 ? baseline : "-", b, r);
    fflush(stdout);
    raw_line(what, ours, unit, ours_samples, n_ours);
    if (base >= 0) {
        char name[256];
        snprintf(name, sizeof name, "%s [baseline: %s]", what, baseline);
        raw_line(name, base, unit, base_samples, n_base);
    }
}

void bench_note(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("  note: %s\n", buf);
    if (g_raw)
        fprintf(g_raw, "# %s: %s\n", g_program, buf);
}

void bench_end(void)
{
    if (g_raw)
        fclose(g_raw);
    g_raw = NULL;
}

void bench_check(q_status st, const char *what, const char *err)
{
    if (st != Q_OK) {
        fprintf(stderr, "bench: %s failed (status %d): %s\n", what, (int)st, err);
        exit(1);
    }
}

q_terrain *bench_world(q_terrain_kind kind, int32_t sx, int32_t sy, int32_t sz, uint64_t seed)
{
    char err[256] = "";
    q_terrain *t = q_terrain_create(NULL);
    if (!t) {
        fprintf(stderr, "bench: q_terrain_create failed\n");
        exit(1);
    }
    q_generate_def gd = q_default_generate_def();
    gd.kind = kind;
    gd.size[0] = sx, gd.size[1] = sy, gd.size[2] = sz;
    gd.seed = seed;
    bench_check(q_terrain_generate(t, &gd, err, sizeof err), "q_terrain_generate", err);
    return t;
}

void *bench_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return p;
}
