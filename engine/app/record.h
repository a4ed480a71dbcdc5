/* Recordings of host runs (--record / --replay) and scripted input files
 * (--input): the text formats and their parsers. No Lua, no SDL.
 *
 * A recording is a text file, one item per line, in the order the host met
 * them while running:
 *
 *   quarry-record 1              header, then
 *   seed S                       math.randomseed of the run
 *   script PATH                  the script recorded (for the reader's eyes)
 *   key down NAME                input events as delivered to the callbacks:
 *   key up NAME                    NAME as keypressed gets it ("left shift")
 *   mouse down X Y BUTTON
 *   mouse up X Y BUTTON
 *   mouse move X Y DX DY
 *   wheel DX DY
 *   quit                         the window was closed
 *   reload                       the script was reloaded (hot reload)
 *   update N DT                  frame N (from 0) runs update(DT); the events
 *                                and the reload above it came at its start
 *   ? QUESTION = V...            an answer the script got from the host
 *                                (key state, mouse position, window size,
 *                                os.clock, ...), in the order it asked
 *   end N                        the run ended after N frames
 *
 * Numbers are written with 17 significant digits, so every double reads
 * back bit for bit. An --input file holds event lines, each after the frame
 * (from 0) at whose start it is delivered: "12 key down space". Blank lines
 * and lines starting with '#' are skipped; frames may not go down.
 */
#ifndef Q_APP_RECORD_H
#define Q_APP_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "app/window.h"

#define Q_RECORD_VERSION 1
#define Q_RECORD_MAX_VALUES 4
#define Q_RECORD_MAX_LINE 256

/* ---- writing ---- */

typedef struct q_recorder q_recorder;

/* Creates (truncates) path and writes the header. NULL with a message in err
 * when the file cannot be opened. */
q_recorder *q_recorder_open(const char *path, long long seed, const char *script, char *err,
                            size_t err_size);
void q_recorder_event(q_recorder *r, const q_event *ev);
void q_recorder_reload(q_recorder *r);
/* Also flushes, so that a run killed later keeps its frames so far. */
void q_recorder_frame(q_recorder *r, long frame, double dt);
/* question: a few words without '=' or newline ("key 32", "mouse"). */
void q_recorder_answer(q_recorder *r, const char *question, const double *values, int count);
void q_recorder_end(q_recorder *r, long frames);
/* Closes; false with a message when any write failed. NULL is ignored (true). */
bool q_recorder_close(q_recorder *r, char *err, size_t err_size);

/* ---- reading ---- */

typedef enum q_replay_kind {
    Q_REPLAY_EVENT,
    Q_REPLAY_RELOAD,
    Q_REPLAY_FRAME,        /* an update line */
    Q_REPLAY_ANSWER,
    Q_REPLAY_END,
    Q_REPLAY_EOF,          /* the file ends (without an end line: a run cut short) */
    Q_REPLAY_BAD           /* a line that is none of the above; message in text */
} q_replay_kind;

typedef struct q_replay_item {
    q_replay_kind kind;
    long line;             /* line number in the file, from 1 */
    q_event event;         /* Q_REPLAY_EVENT */
    long frame;            /* Q_REPLAY_FRAME, Q_REPLAY_END */
    double dt;             /* Q_REPLAY_FRAME */
    char question[64];     /* Q_REPLAY_ANSWER */
    double values[Q_RECORD_MAX_VALUES];
    int count;
    char text[160];        /* Q_REPLAY_BAD: what is wrong */
} q_replay_item;

typedef struct q_replayer q_replayer;

/* Opens a recording and reads its header. NULL with a message in err when
 * the file is missing or is not a recording of a version this host reads. */
q_replayer *q_replayer_open(const char *path, char *err, size_t err_size);
long long q_replayer_seed(const q_replayer *r);
/* The next item, left in place until q_replayer_skip. */
const q_replay_item *q_replayer_peek(q_replayer *r);
void q_replayer_skip(q_replayer *r);
void q_replayer_close(q_replayer *r);

/* ---- event lines ---- */

/* Parses "key down space", "mouse move 1 2 3 4", ... into ev; false with a
 * message for anything else. */
bool q_event_parse(const char *text, q_event *ev, char *err, size_t err_size);

/* ---- --input files ---- */

typedef struct q_input_event {
    long frame;
    q_event event;
} q_input_event;

/* Reads a whole --input file. On success *events (free() it; NULL when
 * empty) holds *count events in file order. False with "PATH:LINE: why". */
bool q_input_load(const char *path, q_input_event **events, size_t *count, char *err,
                  size_t err_size);

#endif
