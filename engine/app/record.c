/* Recordings and --input files: writing and parsing (see record.h). */
#include "app/record.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM "%.17g"   /* 17 significant digits: a double reads back exactly */

struct q_recorder {
    FILE *f;
    char *path;
};

struct q_replayer {
    FILE *f;
    long line;
    long long seed;
    bool have;            /* item holds the next item, not yet skipped */
    q_replay_item item;
};

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

/* ---- writing ---- */

q_recorder *q_recorder_open(const char *path, long long seed, const char *script, char *err,
                            size_t err_size)
{
    q_recorder *r = calloc(1, sizeof *r);
    char *p = copy_string(path);
    if (!r || !p) {
        free(r);
        free(p);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    r->f = fopen(path, "w");
    if (!r->f) {
        snprintf(err, err_size, "cannot write %s: %s", path, strerror(errno));
        free(r);
        free(p);
        return NULL;
    }
    r->path = p;
    fprintf(r->f, "quarry-record %d\nseed %lld\n", Q_RECORD_VERSION, seed);
    /* The path is informational; a newline in it would end the line early. */
    fputs("script ", r->f);
    for (const char *s = script; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? '?' : *s, r->f);
    fputc('\n', r->f);
    return r;
}

void q_recorder_event(q_recorder *r, const q_event *ev)
{
    switch (ev->kind) {
    case Q_EVENT_QUIT:
        fputs("quit\n", r->f);
        break;
    case Q_EVENT_KEY_DOWN:
    case Q_EVENT_KEY_UP:
        fprintf(r->f, "key %s %s\n", ev->kind == Q_EVENT_KEY_DOWN ? "down" : "up", ev->key);
        break;
    case Q_EVENT_MOUSE_DOWN:
    case Q_EVENT_MOUSE_UP:
        fprintf(r->f, "mouse %s " NUM " " NUM " %d\n", ev->kind == Q_EVENT_MOUSE_DOWN ? "down" : "up",
                ev->x, ev->y, ev->button);
        break;
    case Q_EVENT_MOUSE_MOVE:
        fprintf(r->f, "mouse move " NUM " " NUM " " NUM " " NUM "\n", ev->x, ev->y, ev->dx, ev->dy);
        break;
    case Q_EVENT_WHEEL:
        fprintf(r->f, "wheel " NUM " " NUM "\n", ev->dx, ev->dy);
        break;
    }
}

void q_recorder_reload(q_recorder *r)
{
    fputs("reload\n", r->f);
}

void q_recorder_frame(q_recorder *r, long frame, double dt)
{
    fprintf(r->f, "update %ld " NUM "\n", frame, dt);
    fflush(r->f);
}

void q_recorder_answer(q_recorder *r, const char *question, const double *values, int count)
{
    fprintf(r->f, "? %s =", question);
    for (int i = 0; i < count; i++)
        fprintf(r->f, " " NUM, values[i]);
    fputc('\n', r->f);
}

void q_recorder_end(q_recorder *r, long frames)
{
    fprintf(r->f, "end %ld\n", frames);
}

bool q_recorder_close(q_recorder *r, char *err, size_t err_size)
{
    if (!r)
        return true;
    bool ok = !ferror(r->f);
    int saved = errno;
    if (fclose(r->f) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok)
        snprintf(err, err_size, "writing %s failed: %s", r->path, strerror(saved));
    free(r->path);
    free(r);
    return ok;
}

/* ---- parsing ---- */

/* Parses up to `max` finite numbers, each after one space, from s; returns
 * how many, or -1 when something else follows them. */
static int parse_list(const char *s, double *out, int max)
{
    int n = 0;
    while (*s == ' ' && n < max) {
        char *end;
        errno = 0;
        double v = strtod(s + 1, &end);
        if (end == s + 1 || errno == ERANGE || !isfinite(v))
            return -1;
        out[n++] = v;
        s = end;
    }
    return *s == '\0' ? n : -1;
}

/* Exactly `count` numbers and nothing after them. */
static bool parse_numbers(const char *s, double *out, int count)
{
    return parse_list(s, out, count) == count;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool q_event_parse(const char *text, q_event *ev, char *err, size_t err_size)
{
    memset(ev, 0, sizeof *ev);
    double v[4];
    if (strcmp(text, "quit") == 0) {
        ev->kind = Q_EVENT_QUIT;
        return true;
    }
    if (starts_with(text, "key down ") || starts_with(text, "key up ")) {
        bool down = text[4] == 'd';
        const char *name = text + (down ? 9 : 7);
        size_t n = strlen(name);
        if (n == 0 || n >= sizeof ev->key) {
            snprintf(err, err_size, "a key name of 1 to %zu characters is needed", sizeof ev->key - 1);
            return false;
        }
        ev->kind = down ? Q_EVENT_KEY_DOWN : Q_EVENT_KEY_UP;
        memcpy(ev->key, name, n + 1);
        return true;
    }
    if (starts_with(text, "mouse down") || starts_with(text, "mouse up")) {
        bool down = text[6] == 'd';
        if (!parse_numbers(text + (down ? 10 : 8), v, 3) || v[2] != floor(v[2]) || v[2] < 1 || v[2] > 32) {
            snprintf(err, err_size, "'mouse %s' needs X Y BUTTON (button 1 to 32)", down ? "down" : "up");
            return false;
        }
        ev->kind = down ? Q_EVENT_MOUSE_DOWN : Q_EVENT_MOUSE_UP;
        ev->x = v[0];
        ev->y = v[1];
        ev->button = (int)v[2];
        return true;
    }
    if (starts_with(text, "mouse move")) {
        if (!parse_numbers(text + 10, v, 4)) {
            snprintf(err, err_size, "'mouse move' needs X Y DX DY");
            return false;
        }
        ev->kind = Q_EVENT_MOUSE_MOVE;
        ev->x = v[0];
        ev->y = v[1];
        ev->dx = v[2];
        ev->dy = v[3];
        return true;
    }
    if (starts_with(text, "wheel")) {
        if (!parse_numbers(text + 5, v, 2)) {
            snprintf(err, err_size, "'wheel' needs DX DY");
            return false;
        }
        ev->kind = Q_EVENT_WHEEL;
        ev->dx = v[0];
        ev->dy = v[1];
        return true;
    }
    snprintf(err, err_size, "unknown event '%.40s' (valid: key down NAME, key up NAME, mouse down X Y "
             "BUTTON, mouse up X Y BUTTON, mouse move X Y DX DY, wheel DX DY, quit)", text);
    return false;
}

/* Reads one line without its newline into buf. Returns 1, 2 for a last line
 * without a newline, 0 at the end of the file, -1 for a line too long (the
 * rest of it is skipped). */
static int read_line(FILE *f, char *buf, size_t size)
{
    if (!fgets(buf, (int)size, f))
        return 0;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '\n') {
        buf[--n] = '\0';
        if (n > 0 && buf[n - 1] == '\r')
            buf[--n] = '\0';
        return 1;
    }
    if (feof(f))
        return 2;
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n')
        ;
    return -1;
}

/* A whole decimal integer >= 0, and nothing after it. */
static bool parse_count(const char *s, long *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE || (*end != '\0' && *end != ' '))
        return false;
    *out = v;
    return true;
}

/* ---- reading ---- */

q_replayer *q_replayer_open(const char *path, char *err, size_t err_size)
{
    q_replayer *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    r->f = fopen(path, "r");
    if (!r->f) {
        snprintf(err, err_size, "cannot read %s: %s", path, strerror(errno));
        free(r);
        return NULL;
    }
    char line[Q_RECORD_MAX_LINE];
    int version = 0;
    char tail;
    if (read_line(r->f, line, sizeof line) != 1 || sscanf(line, "quarry-record %d%c", &version, &tail) != 1) {
        snprintf(err, err_size, "%s is not a quarry recording (it does not start with 'quarry-record')", path);
        goto fail;
    }
    if (version != Q_RECORD_VERSION) {
        snprintf(err, err_size, "%s is a recording of version %d; this host reads version %d", path,
                 version, Q_RECORD_VERSION);
        goto fail;
    }
    if (read_line(r->f, line, sizeof line) != 1 || sscanf(line, "seed %lld%c", &r->seed, &tail) != 1) {
        snprintf(err, err_size, "%s:2: 'seed N' expected", path);
        goto fail;
    }
    if (read_line(r->f, line, sizeof line) != 1 || !starts_with(line, "script ")) {
        snprintf(err, err_size, "%s:3: 'script PATH' expected", path);
        goto fail;
    }
    r->line = 3;
    return r;
fail:
    fclose(r->f);
    free(r);
    return NULL;
}

long long q_replayer_seed(const q_replayer *r)
{
    return r->seed;
}

static void parse_item(q_replayer *r, q_replay_item *it)
{
    char line[Q_RECORD_MAX_LINE];
    memset(it, 0, sizeof *it);
    int got = read_line(r->f, line, sizeof line);
    if (got == 0 || got == 2) {
        /* a last line without its newline is a write cut short: the end */
        it->kind = Q_REPLAY_EOF;
        it->line = r->line + 1;
        return;
    }
    it->line = ++r->line;
    it->kind = Q_REPLAY_BAD;
    if (got < 0) {
        snprintf(it->text, sizeof it->text, "line longer than %d characters", Q_RECORD_MAX_LINE - 2);
        return;
    }
    if (strcmp(line, "reload") == 0) {
        it->kind = Q_REPLAY_RELOAD;
    } else if (starts_with(line, "update ")) {
        const char *sp = strchr(line + 7, ' ');
        if (!parse_count(line + 7, &it->frame) || !sp || !parse_numbers(sp, &it->dt, 1) || it->dt < 0)
            snprintf(it->text, sizeof it->text, "'update N DT' needs a frame number and a dt >= 0");
        else
            it->kind = Q_REPLAY_FRAME;
    } else if (starts_with(line, "end ")) {
        if (!parse_count(line + 4, &it->frame) || strchr(line + 4, ' '))
            snprintf(it->text, sizeof it->text, "'end N' needs a number of frames");
        else
            it->kind = Q_REPLAY_END;
    } else if (starts_with(line, "? ")) {
        char *eq = strstr(line, " =");
        size_t qlen = eq ? (size_t)(eq - (line + 2)) : 0;
        if (!eq || qlen == 0 || qlen >= sizeof it->question) {
            snprintf(it->text, sizeof it->text, "'? QUESTION = VALUES' expected");
            return;
        }
        memcpy(it->question, line + 2, qlen);
        it->question[qlen] = '\0';
        it->count = parse_list(eq + 2, it->values, Q_RECORD_MAX_VALUES);
        if (it->count < 0) {
            snprintf(it->text, sizeof it->text, "bad values in an answer (at most %d numbers)",
                     Q_RECORD_MAX_VALUES);
            return;
        }
        it->kind = Q_REPLAY_ANSWER;
    } else {
        char why[160];
        if (q_event_parse(line, &it->event, why, sizeof why))
            it->kind = Q_REPLAY_EVENT;
        else
            snprintf(it->text, sizeof it->text, "%s", why);
    }
}

const q_replay_item *q_replayer_peek(q_replayer *r)
{
    if (!r->have) {
        parse_item(r, &r->item);
        r->have = true;
    }
    return &r->item;
}

void q_replayer_skip(q_replayer *r)
{
    /* The end of the file stays the end of the file. */
    if (r->have && r->item.kind != Q_REPLAY_EOF)
        r->have = false;
}

void q_replayer_close(q_replayer *r)
{
    if (!r)
        return;
    fclose(r->f);
    free(r);
}

/* ---- --input files ---- */

bool q_input_load(const char *path, q_input_event **events, size_t *count, char *err,
                  size_t err_size)
{
    *events = NULL;
    *count = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_size, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    q_input_event *list = NULL;
    size_t n = 0, cap = 0;
    long lineno = 0, last_frame = 0;
    char line[Q_RECORD_MAX_LINE];
    int got;
    while ((got = read_line(f, line, sizeof line)) != 0) {
        lineno++;
        if (got < 0) {
            snprintf(err, err_size, "%s:%ld: line longer than %d characters", path, lineno,
                     Q_RECORD_MAX_LINE - 2);
            goto fail;
        }
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        long frame;
        const char *sp = strchr(s, ' ');
        if (!parse_count(s, &frame) || !sp) {
            snprintf(err, err_size, "%s:%ld: a line is FRAME EVENT, as in '12 key down space'", path, lineno);
            goto fail;
        }
        if (frame < last_frame) {
            snprintf(err, err_size, "%s:%ld: frame %ld comes after frame %ld (frames may not go down)",
                     path, lineno, frame, last_frame);
            goto fail;
        }
        last_frame = frame;
        if (n == cap) {
            size_t grow = cap ? cap * 2 : 64;
            q_input_event *bigger = realloc(list, grow * sizeof *list);
            if (!bigger) {
                snprintf(err, err_size, "%s: out of memory", path);
                goto fail;
            }
            list = bigger;
            cap = grow;
        }
        char why[200];
        while (*sp == ' ')
            sp++;
        if (!q_event_parse(sp, &list[n].event, why, sizeof why)) {
            snprintf(err, err_size, "%s:%ld: %s", path, lineno, why);
            goto fail;
        }
        list[n].frame = frame;
        n++;
    }
    fclose(f);
    *events = list;
    *count = n;
    return true;
fail:
    fclose(f);
    free(list);
    return false;
}
