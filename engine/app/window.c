/* SDL2 window and OpenGL 4.5 core context for the host (see window.h). */
#define SDL_MAIN_HANDLED
#include "app/window.h"

#include <SDL.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct q_window {
    SDL_Window *window;
    SDL_GLContext context;
    bool vsync;
    double last_swap;      /* q_window_time() of the previous swap, for pacing without vsync */
    double mouse_x, mouse_y;
};

static void set_error(char *err, size_t err_size, const char *what)
{
    if (err && err_size > 0)
        snprintf(err, err_size, "%s: %s", what, SDL_GetError());
}

q_window *q_window_open(const char *title, int width, int height, char *err, size_t err_size)
{
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        set_error(err, err_size, "cannot initialise SDL video");
        return NULL;
    }
    q_window *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_size, "out of memory");
        SDL_Quit();
        return NULL;
    }
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_PROFILE_MASK, SDL_GL_CONTEXT_PROFILE_CORE);
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_MAJOR_VERSION, 4);
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_MINOR_VERSION, 5);
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_FLAGS, SDL_GL_CONTEXT_FORWARD_COMPATIBLE_FLAG);
    SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1);
    SDL_GL_SetAttribute(SDL_GL_DEPTH_SIZE, 24);
    SDL_GL_SetAttribute(SDL_GL_STENCIL_SIZE, 8);

    w->window = SDL_CreateWindow(title, SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED,
                                 width, height,
                                 SDL_WINDOW_OPENGL | SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    if (!w->window) {
        set_error(err, err_size, "cannot create an OpenGL window");
        q_window_close(w);
        return NULL;
    }
    w->context = SDL_GL_CreateContext(w->window);
    if (!w->context) {
        set_error(err, err_size, "cannot create an OpenGL 4.5 core context");
        q_window_close(w);
        return NULL;
    }
    if (SDL_GL_MakeCurrent(w->window, w->context) != 0) {
        set_error(err, err_size, "cannot make the OpenGL context current");
        q_window_close(w);
        return NULL;
    }
    /* Vsync paces the loop; drivers without it are paced in q_window_swap
     * instead. The offscreen driver accepts the swap interval but never waits. */
    const char *driver = SDL_GetCurrentVideoDriver();
    w->vsync = SDL_GL_SetSwapInterval(1) == 0 && !(driver && strcmp(driver, "offscreen") == 0);
    w->last_swap = q_window_time();
    return w;
}

void q_window_close(q_window *w)
{
    if (!w)
        return;
    if (w->context)
        SDL_GL_DeleteContext(w->context);
    if (w->window)
        SDL_DestroyWindow(w->window);
    free(w);
    SDL_Quit();
}

q_gl_proc q_window_gl_proc(const char *name)
{
    void *sym = SDL_GL_GetProcAddress(name);
    q_gl_proc proc;
    /* Object pointer to function pointer: POSIX guarantees the representation. */
    memcpy(&proc, &sym, sizeof proc);
    return proc;
}

const char *q_window_driver(const q_window *w)
{
    (void)w;
    const char *name = SDL_GetCurrentVideoDriver();
    return name ? name : "none";
}

static void key_name(SDL_Keycode key, SDL_Scancode scancode, char *out, size_t out_size)
{
    const char *name = SDL_GetKeyName(key);
    if (!name || !name[0])
        name = SDL_GetScancodeName(scancode);
    if (!name || !name[0])
        name = "unknown";
    size_t i = 0;
    for (; name[i] && i + 1 < out_size; i++)
        out[i] = (char)tolower((unsigned char)name[i]);
    out[i] = '\0';
}

/* SDL numbers buttons left, middle, right; LÖVE (and so Quarry) left, right, middle. */
static int button_number(Uint8 button)
{
    switch (button) {
    case SDL_BUTTON_LEFT: return 1;
    case SDL_BUTTON_RIGHT: return 2;
    case SDL_BUTTON_MIDDLE: return 3;
    default: return button;
    }
}

bool q_window_poll(q_window *w, q_event *ev)
{
    SDL_Event e;
    while (SDL_PollEvent(&e)) {
        memset(ev, 0, sizeof *ev);
        switch (e.type) {
        case SDL_QUIT:
            ev->kind = Q_EVENT_QUIT;
            return true;
        case SDL_KEYDOWN:
        case SDL_KEYUP:
            if (e.key.repeat)
                continue;
            ev->kind = e.type == SDL_KEYDOWN ? Q_EVENT_KEY_DOWN : Q_EVENT_KEY_UP;
            key_name(e.key.keysym.sym, e.key.keysym.scancode, ev->key, sizeof ev->key);
            return true;
        case SDL_MOUSEBUTTONDOWN:
        case SDL_MOUSEBUTTONUP:
            ev->kind = e.type == SDL_MOUSEBUTTONDOWN ? Q_EVENT_MOUSE_DOWN : Q_EVENT_MOUSE_UP;
            ev->x = w->mouse_x = e.button.x;
            ev->y = w->mouse_y = e.button.y;
            ev->button = button_number(e.button.button);
            return true;
        case SDL_MOUSEMOTION:
            ev->kind = Q_EVENT_MOUSE_MOVE;
            ev->x = w->mouse_x = e.motion.x;
            ev->y = w->mouse_y = e.motion.y;
            ev->dx = e.motion.xrel;
            ev->dy = e.motion.yrel;
            return true;
        case SDL_MOUSEWHEEL: {
            double sign = e.wheel.direction == SDL_MOUSEWHEEL_FLIPPED ? -1.0 : 1.0;
            ev->kind = Q_EVENT_WHEEL;
            ev->dx = sign * e.wheel.preciseX;
            ev->dy = sign * e.wheel.preciseY;
            return true;
        }
        default:
            continue;
        }
    }
    return false;
}

void q_window_drawable_size(const q_window *w, int *width, int *height)
{
    SDL_GL_GetDrawableSize(w->window, width, height);
}

void q_window_size(const q_window *w, int *width, int *height)
{
    SDL_GetWindowSize(w->window, width, height);
}

bool q_window_capture_mouse(q_window *w, bool capture)
{
    (void)w;
    return SDL_SetRelativeMouseMode(capture ? SDL_TRUE : SDL_FALSE) == 0;
}

void q_window_swap(q_window *w)
{
    SDL_GL_SwapWindow(w->window);
    double now = q_window_time();
    /* A frame under 2 ms means vsync is not really on (no display runs at
     * 500 Hz), so pace to 60 Hz rather than spin. */
    if (!w->vsync || now - w->last_swap < 0.002) {
        double wait = 1.0 / 60.0 - (now - w->last_swap);
        if (wait > 0.0) {
            SDL_Delay((Uint32)(wait * 1000.0 + 0.5));
            now = q_window_time();
        }
    }
    w->last_swap = now;
}

void q_window_set_title(q_window *w, const char *title)
{
    SDL_SetWindowTitle(w->window, title);
}

double q_window_time(void)
{
    return (double)SDL_GetPerformanceCounter() / (double)SDL_GetPerformanceFrequency();
}

void q_window_mouse_position(const q_window *w, double *x, double *y)
{
    *x = w->mouse_x;
    *y = w->mouse_y;
}

bool q_window_key_down(const q_window *w, int keycode)
{
    (void)w;
    int count = 0;
    const Uint8 *state = SDL_GetKeyboardState(&count);
    SDL_Scancode sc = SDL_GetScancodeFromKey((SDL_Keycode)keycode);
    return sc > SDL_SCANCODE_UNKNOWN && (int)sc < count && state[sc];
}

int q_key_lookup(const char *name)
{
    char lower[64];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof lower)
        return 0;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    SDL_Keycode key = SDL_GetKeyFromName(lower);
    return key == SDLK_UNKNOWN ? 0 : (int)key;
}
