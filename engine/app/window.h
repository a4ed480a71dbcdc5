/* The host's window: SDL2 with an OpenGL 4.5 core context, and its input
 * events turned into plain structs so that host.c never sees SDL.
 *
 * Only this file and render/ include SDL or GL. Nothing here is called in
 * --headless mode except q_key_lookup(), which is a pure name lookup and does
 * not initialise any SDL subsystem.
 */
#ifndef Q_APP_WINDOW_H
#define Q_APP_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include "render/render.h"

typedef struct q_window q_window;

typedef enum q_event_kind {
    Q_EVENT_QUIT,          /* window closed (or SIGINT in a window) */
    Q_EVENT_KEY_DOWN,      /* key: name; auto-repeat is filtered out */
    Q_EVENT_KEY_UP,
    Q_EVENT_MOUSE_DOWN,    /* x, y, button */
    Q_EVENT_MOUSE_UP,
    Q_EVENT_MOUSE_MOVE,    /* x, y, dx, dy */
    Q_EVENT_WHEEL          /* dx, dy (positive y = away from the user) */
} q_event_kind;

typedef struct q_event {
    q_event_kind kind;
    char key[48];          /* SDL_GetKeyName lowercased: "a", "space", "escape", "left shift" */
    double x, y, dx, dy;   /* window coordinates, origin top-left */
    int button;            /* 1 left, 2 right, 3 middle, 4 and 5 side buttons (LÖVE order) */
} q_event;

/* Initialises SDL video and opens a resizable window of width x height
 * (screen coordinates) with a current OpenGL 4.5 core context and vsync when
 * the driver offers it. On failure returns NULL and writes SDL's reason to err. */
q_window *q_window_open(const char *title, int width, int height, char *err, size_t err_size);

/* Destroys the context and window and shuts SDL down. NULL is ignored. */
void q_window_close(q_window *w);

/* OpenGL function lookup for q_render_create (needs a current context). */
q_gl_proc q_window_gl_proc(const char *name);

/* Name of the SDL video driver in use ("x11", "wayland", "offscreen", ...). */
const char *q_window_driver(const q_window *w);

/* Takes the next pending event; false when there is none. */
bool q_window_poll(q_window *w, q_event *ev);

/* Size of the drawable in pixels (differs from the window size on HiDPI). */
void q_window_drawable_size(const q_window *w, int *width, int *height);

/* Size of the window in screen coordinates (those of mouse events). */
void q_window_size(const q_window *w, int *width, int *height);

/* Captures the mouse (hidden cursor, motion reported as dx, dy without
 * limit) or releases it. Returns whether the driver did what was asked. */
bool q_window_capture_mouse(q_window *w, bool capture);

/* Presents the back buffer. Without vsync, sleeps so that frames are at least
 * 1/60 s apart instead of spinning. */
void q_window_swap(q_window *w);

void q_window_set_title(q_window *w, const char *title);

/* Seconds on a monotonic clock (only meaningful while a window is open). */
double q_window_time(void);

/* Mouse position in window coordinates, as of the last polled event. */
void q_window_mouse_position(const q_window *w, double *x, double *y);

/* Whether the key with this keycode (from q_key_lookup) is held. */
bool q_window_key_down(const q_window *w, int keycode);

/* Keycode for a key name (any case), or 0 for a name SDL does not know.
 * Safe to call without a window. */
int q_key_lookup(const char *name);

#endif
