/* The host program: one Lua state running a script with LÖVE-style
 * callbacks, in an SDL window or headless, with hot reload of the script.
 *
 * Frame order: input events -> hot-reload check -> update(dt) -> clear ->
 * draw() -> queued lines and text -> screenshots -> present. Headless, dt is exactly 1/60 and nothing
 * touches SDL or GL; in a window dt is measured (vsync paced) and clamped to
 * 0.25 s so that a stall does not hand the world a huge step.
 *
 * The second half of this header is what bindings/graphics.c uses to reach
 * the host's state; `q_host` stays opaque to it.
 */
#ifndef Q_APP_HOST_H
#define Q_APP_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "render/render.h"

typedef struct q_host_options {
    const char *exe;          /* argv[0], used to find <repo>/scripts */
    const char *script;       /* main script path; required */
    int script_argc;          /* arguments after the script, passed to load(args) */
    char **script_argv;
    bool headless;            /* no window, no GL, no SDL video */
    long frames;              /* quit after this many frames; 0 = run until quit */
    const char *screenshot;   /* write the last frame here (PNG, or PPM for .ppm); window only */
    /* Script limits. Each callback (and the main chunk, and each reload) may
     * run at most max_instructions Lua VM instructions before it is stopped
     * with an error; the Lua heap (tables, strings, closures, userdata
     * headers; not engine memory) may not grow past max_memory bytes, an
     * allocation past it fails with a memory error in the script. 0 = no limit.
     * The command line defaults are Q_HOST_DEFAULT_MAX_*. */
    long long max_instructions;
    size_t max_memory;
    /* Untrusted-script mode: no io, debug, os (but os.clock, os.time), no
     * package.loadlib or C modules, no binary chunks, files (dofile,
     * loadfile, require, and the paths given to quarry's load/save/screenshot)
     * only inside the script's directory (require also in <repo>/scripts). */
    bool sandbox;
    /* Record and replay (app/record.h has the format): record writes the
     * run's input events, reloads, frame dts and the answers the script got
     * from the host and the clocks; replay feeds a recording back in place
     * of the window and the clocks (at most one of the two). input delivers
     * the scripted events of an --input file at their frames (not with
     * replay). NULL = off. */
    const char *record;
    const char *replay;
    const char *input;
} q_host_options;

#define Q_HOST_DEFAULT_MAX_INSTRUCTIONS 1000000000LL /* ~3-10 s of Lua per callback */
#define Q_HOST_DEFAULT_MAX_MEMORY ((size_t)1 << 30)    /* 1 GiB of Lua heap */

/* Runs the script until it quits; returns the process exit status:
 * 0 normal end (errors inside callbacks are reported but not fatal),
 * 1 the script, the window or the screenshot could not be loaded/made. */
int q_host_run(const q_host_options *options);

/* ---- host state for the Lua bindings ---- */

typedef struct q_host q_host;

bool q_host_headless(const q_host *h);

/* The renderer drawing into the window; NULL headless. */
q_renderer *q_host_renderer(q_host *h);

/* Window size in window coordinates (those of mouse events and text); the
 * default 1280 x 720 headless. This, q_host_key_down, q_host_mouse_position
 * and q_host_capture_mouse answer the script: their answers are recorded
 * (--record) or taken from the recording (--replay). */
void q_host_window_size(q_host *h, int *width, int *height);

/* Frames completed so far (the frame being run has this number, from 0). */
long q_host_frame(const q_host *h);

/* Captures or releases the mouse (relative motion, hidden cursor). Headless
 * only the state is kept. False when the window system refuses. */
bool q_host_capture_mouse(q_host *h, bool capture);
bool q_host_mouse_captured(const q_host *h);

/* Mutable state read by the renderer each frame. Callers validate values:
 * colour components in [0, 1]; camera as documented in render.h. */
float *q_host_clear_color(q_host *h);   /* rgba[4] each frame starts with; default opaque black */
q_camera *q_host_camera(q_host *h);
q_debug_flags *q_host_debug_flags(q_host *h);

/* Clears the frame being drawn to rgba (in [0, 1]) now; nothing headless. */
void q_host_clear(q_host *h, const float rgba[4]);

/* Asks for the current frame, as drawn when the frame ends, to be written to
 * path (PNG, or PPM when the path ends in .ppm). The file is opened now so a
 * bad path fails here. Returns false with a message when headless, when a
 * screenshot is already pending this frame, or when the file cannot be opened. */
bool q_host_request_screenshot(q_host *h, const char *path, char *err, size_t err_size);

/* Keycode for a key name as given to keypressed ("a", "space", "left shift"),
 * any case; 0 if no such key. */
int q_host_key_lookup(const char *name);
/* Whether the key is held; headless, as the delivered key events (--input,
 * --replay) left it (false without them). */
bool q_host_key_down(q_host *h, int keycode);

/* Mouse position in window coordinates; headless, where the last delivered
 * mouse event was ((0, 0) before any). */
void q_host_mouse_position(q_host *h, double *x, double *y);

/* Frames per second over the last (up to) 60 frames, from their dt, rounded;
 * exactly 60 headless; 0 before the first frame. */
int q_host_fps(const q_host *h);

/* Milliseconds spent in script callbacks (and the main chunk, and reloads)
 * since the host started, the running one included: world:stats() ms_lua
 * takes the engine's share out of it. */
double q_host_script_ms(const q_host *h);

#endif
