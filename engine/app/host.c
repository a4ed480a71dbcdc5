/* The host: Lua state, callbacks, frame loop and hot reload (see host.h).
 *
 * Callbacks are looked up on the module table by name every time they are
 * called, so a reloaded script's new functions take over at once. Every call
 * goes through lua_pcall with a traceback handler; an error is printed (once
 * while it keeps repeating) and shown in the window title, and the loop goes on.
 *
 * Script limits: a count hook charges every callback (the main chunk and each
 * reload too) for the Lua instructions it runs and raises an error past
 * opt.max_instructions; the Lua state's allocator refuses to grow the heap
 * past opt.max_memory, which Lua turns into a memory error. Either way only
 * that call stops and the loop goes on. --sandbox strips the libraries that
 * reach outside the script's directory (see apply_sandbox).
 *
 * Record and replay (record.h has the file format): --record writes every
 * input event as it is dispatched, each reload, each frame's dt and every
 * answer the script gets from outside the engine (key state, mouse position,
 * window size, mouse capture, os.clock, os.time(), quarry.timer.now), with
 * the math.random seed. --replay reads them back in the same order instead
 * of asking the window and the clocks, so the same script and arguments run
 * the same way and end with the same world:hash(). When the script asks
 * something the recording does not hold at that point, the run has left the
 * recording: that is reported once, the live answer is used and the exit
 * status is 1. --input adds scripted events at given frames, headless too.
 */
#include "app/host.h"

#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/record.h"
#include "app/window.h"
#include "common.h"
#include "quarry.h"

#define HEADLESS_DT (1.0 / 60.0)
#define MAX_DT 0.25               /* seconds; longer frames (stalls, debugger) are clamped */
#define RELOAD_INTERVAL 0.25      /* seconds between mtime checks in a window */
#define FPS_FRAMES 60
#define WINDOW_WIDTH 1280         /* screen coordinates; also the size assumed headless */
#define WINDOW_HEIGHT 720
#define HOOK_STEP 1000            /* instructions between count-hook calls */
#define MAX_KEYS_HELD 32          /* headless key state; more keys at once are not kept */

static const char *const callback_names[] = {
    "load", "update", "draw", "keypressed", "keyreleased", "mousepressed",
    "mousereleased", "mousemoved", "wheelmoved", "quit",
};
#define CALLBACK_COUNT (sizeof callback_names / sizeof callback_names[0])

/* What identifies one version of the script file. mtime alone can repeat
 * within a coarse filesystem tick, so size, inode and ctime count too. */
typedef struct file_sig {
    bool exists;
    struct timespec mtime, ctime;
    off_t size;
    ino_t inode;
} file_sig;

struct q_host {
    q_host_options opt;
    lua_State *L;
    q_window *window;            /* NULL headless */
    q_renderer *renderer;        /* NULL headless */
    bool mouse_captured;
    int module_ref;              /* registry reference to the module table */
    int arg_ref;                 /* registry reference to the `arg` table */

    file_sig script_sig;
    double next_reload_check;    /* window time */

    long frame;                  /* frames completed */
    double dts[FPS_FRAMES];      /* ring of the last frames' dt */
    int dt_count, dt_next;
    bool quit_requested;

    float clear_color[4];
    q_camera camera;
    q_debug_flags debug;

    FILE *shot_file;             /* pending quarry.graphics.screenshot */
    char *shot_path;

    long long instructions;      /* charged to the running call (script limits) */
    double script_ms;            /* spent in callbacks (q_host_script_ms) */
    double script_since;         /* when the running callback began (ms), 0 between callbacks */
    int hook_step;               /* the count hook's current period */
    size_t mem_used;             /* bytes of Lua heap */
    bool mem_refused;            /* the allocator refused an allocation (cap reached) */
    char *sandbox_dir;           /* --sandbox: realpath of the script's directory */
    char *sandbox_lib;           /* --sandbox: realpath of <repo>/scripts, or NULL */

    q_recorder *rec;             /* --record */
    q_replayer *replay;          /* --replay */
    bool replay_over;            /* replay stopped (end of the recording or --frames):
                                    answers are live from here on, without a complaint */
    bool replay_left;            /* the run left the recording (reported once) */
    q_input_event *input;        /* --input, in frame order */
    size_t input_count, input_next;
    long long seed;              /* math.randomseed of a recorded or replayed run */
    /* Keys held and mouse position as the delivered events left them: all
     * events without a window, --input's in a window (where they add to
     * the real keyboard, and the latest mouse event wins). */
    int keys_held[MAX_KEYS_HELD];
    int keys_held_count;
    double mouse_x, mouse_y;
    bool mouse_from_input;       /* in a window: the latest mouse event came from --input */

    char *last_error;            /* last reported message, for de-duplication */
    long error_repeats;
    char title[256];
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

/* ---- errors ---- */

static void flush_repeats(q_host *h)
{
    if (h->error_repeats > 0)
        fprintf(stderr, "quarry: (the error above repeated %ld more time%s)\n",
                h->error_repeats, h->error_repeats == 1 ? "" : "s");
    h->error_repeats = 0;
}

static void show_title(q_host *h, const char *error)
{
    if (!h->window)
        return;
    const char *base = strrchr(h->opt.script, '/');
    base = base ? base + 1 : h->opt.script;
    if (error) {
        size_t line = strcspn(error, "\n");
        snprintf(h->title, sizeof h->title, "Quarry - %s - ERROR: %.*s", base,
                 (int)(line < 160 ? line : 160), error);
    } else {
        snprintf(h->title, sizeof h->title, "Quarry - %s", base);
    }
    q_window_set_title(h->window, h->title);
}

/* Prints a non-fatal error unless it is the same as the previous one. */
static void report_error(q_host *h, const char *context, const char *message)
{
    if (h->last_error && strcmp(h->last_error, message) == 0) {
        h->error_repeats++;
        return;
    }
    flush_repeats(h);
    fprintf(stderr, "quarry: %s: %s\n", context, message);
    free(h->last_error);
    h->last_error = dup_string(message);
    show_title(h, message);
}

static void clear_error(q_host *h)
{
    flush_repeats(h);
    free(h->last_error);
    h->last_error = NULL;
    show_title(h, NULL);
}

/* Message handler: appends a traceback to string errors. */
static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* ---- script limits ---- */

static q_host *host_of_state(lua_State *L)
{
    return *(q_host **)lua_getextraspace(L);
}

/* Count hook: charges the running call; past the budget it fires on every
 * instruction (so a script catching the error with pcall is stopped at its
 * next instruction outside the pcall) and raises. */
static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    q_host *h = host_of_state(L);
    int period = lua_gethookcount(L); /* per thread: coroutines keep their own */
    h->instructions += period;
    if (period != h->hook_step)       /* a coroutine left at 1 by an earlier call */
        lua_sethook(L, count_hook, LUA_MASKCOUNT, h->hook_step);
    if (h->opt.max_instructions > 0 && h->instructions > h->opt.max_instructions) {
        if (h->hook_step != 1) {
            h->hook_step = 1;
            lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
            if (L != h->L)
                lua_sethook(h->L, count_hook, LUA_MASKCOUNT, 1);
        }
        luaL_error(L, "instruction limit exceeded: more than %I Lua instructions in one call "
                   "(--max-instructions)", (lua_Integer)h->opt.max_instructions);
    }
}

/* A fresh budget for the call about to start. */
static void begin_budget(q_host *h)
{
    h->instructions = 0;
    h->mem_refused = false;
    if (h->opt.max_instructions > 0) {
        h->hook_step = HOOK_STEP;
        lua_sethook(h->L, count_hook, LUA_MASKCOUNT, HOOK_STEP);
    }
}

/* The Lua state's allocator: realloc/free with a cap on the heap. Shrinking
 * and freeing never fail (Lua relies on that). */
static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    q_host *h = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        h->mem_used -= old;
        return NULL;
    }
    if (nsize > old && h->opt.max_memory > 0 && h->mem_used - old + nsize > h->opt.max_memory) {
        h->mem_refused = true;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p)
        h->mem_used = h->mem_used - old + nsize;
    return p;
}

/* Monotonic milliseconds, for q_host_script_ms. */
static double script_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6 + 1.0; /* never 0 (the "none" mark) */
}

/* Calls the function below the top `nargs` values with a traceback handler;
 * pops them. Returns LUA_OK or leaves nothing and reports the error. */
static int protected_call(q_host *h, int nargs, const char *context)
{
    lua_State *L = h->L;
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    begin_budget(h);
    h->script_since = script_now();
    int status = lua_pcall(L, nargs, 0, base);
    h->script_ms += script_now() - h->script_since;
    h->script_since = 0;
    if (status != LUA_OK) {
        char mem[160];
        const char *msg = lua_tostring(L, -1);
        if (h->mem_refused && (status == LUA_ERRMEM || status == LUA_ERRERR)) {
            snprintf(mem, sizeof mem, "memory limit exceeded: the Lua heap may not grow past "
                     "%zu bytes (--max-memory)", h->opt.max_memory);
            msg = mem;
        }
        report_error(h, context, msg ? msg : "(no message)");
        lua_pop(L, 1);
    }
    lua_remove(L, base);
    return status;
}

/* Pushes quarry[name] and returns true when it is a function; otherwise
 * pushes nothing. */
static bool push_callback(q_host *h, const char *name)
{
    lua_State *L = h->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->module_ref);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    if (lua_isfunction(L, -1))
        return true;
    lua_pop(L, 1);
    return false;
}

static void call_callback(q_host *h, const char *name, int nargs)
{
    char context[64];
    snprintf(context, sizeof context, "error in quarry.%s", name);
    protected_call(h, nargs, context);
}

/* ---- record and replay ---- */

/* Describes a recording item for a message. */
static void describe_item(const q_replay_item *it, char *out, size_t size)
{
    switch (it->kind) {
    case Q_REPLAY_EVENT: snprintf(out, size, "an input event"); break;
    case Q_REPLAY_RELOAD: snprintf(out, size, "a reload"); break;
    case Q_REPLAY_FRAME: snprintf(out, size, "the start of frame %ld", it->frame); break;
    case Q_REPLAY_ANSWER: snprintf(out, size, "the answer to '%s'", it->question); break;
    case Q_REPLAY_END: snprintf(out, size, "the end of the run"); break;
    case Q_REPLAY_EOF: snprintf(out, size, "the end of the file"); break;
    case Q_REPLAY_BAD: snprintf(out, size, "a bad line (%s)", it->text); break;
    }
}

/* Reports, once, that the run no longer follows the recording. */
static void replay_left(q_host *h, const q_replay_item *it, const char *what)
{
    if (h->replay_left)
        return;
    h->replay_left = true;
    char has[200];
    describe_item(it, has, sizeof has);
    fprintf(stderr, "quarry: --replay %s:%ld: the run left the recording: %s, but the recording "
            "has %s there; live answers are used from here on\n", h->opt.replay, it->line, what, has);
}

/* Passes an answer the script gets from outside the engine through the
 * recording: written down when recording, replaced by the recorded one when
 * replaying. question names what was asked ("key 32", "mouse"). */
static void host_answer(q_host *h, const char *question, double *values, int count)
{
    if (h->rec)
        q_recorder_answer(h->rec, question, values, count);
    if (!h->replay || h->replay_over)
        return;
    const q_replay_item *it = q_replayer_peek(h->replay);
    if (it->kind == Q_REPLAY_ANSWER && it->count == count && strcmp(it->question, question) == 0) {
        memcpy(values, it->values, (size_t)count * sizeof *values);
        q_replayer_skip(h->replay);
        return;
    }
    char what[120];
    snprintf(what, sizeof what, "the script asked for '%s'", question);
    replay_left(h, it, what);
}

/* A wrapper for a clock function the script may call (upvalue 1 is the
 * original, upvalue 2 the question's name): its answer goes through
 * host_answer. Called with arguments, it is passed through (os.time{...} is
 * a conversion, not a clock). */
static int recorded_clock(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, 1);
    if (n > 0)
        return 1;
    bool integer = lua_isinteger(L, -1);
    double v = lua_tonumber(L, -1);
    host_answer(host_of_state(L), lua_tostring(L, lua_upvalueindex(2)), &v, 1);
    lua_pop(L, 1);
    if (integer && v == floor(v) && fabs(v) < 9007199254740992.0)
        lua_pushinteger(L, (lua_Integer)v);
    else
        lua_pushnumber(L, v);
    return 1;
}

/* Replaces t[field] (t at the top) by its recorded wrapper, when a function. */
static void wrap_clock(lua_State *L, const char *field, const char *question)
{
    if (lua_getfield(L, -1, field) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return;
    }
    lua_pushstring(L, question);
    lua_pushcclosure(L, recorded_clock, 2);
    lua_setfield(L, -2, field);
}

/* ---- script loading and hot reload ---- */

static file_sig stat_script(const char *path)
{
    file_sig sig = {0};
    struct stat st;
    if (stat(path, &st) == 0) {
        sig.exists = true;
        sig.mtime = st.st_mtim;
        sig.ctime = st.st_ctim;
        sig.size = st.st_size;
        sig.inode = st.st_ino;
    }
    return sig;
}

static bool same_sig(const file_sig *a, const file_sig *b)
{
    return a->exists == b->exists && a->size == b->size && a->inode == b->inode &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Pushes the script's arguments as varargs for the main chunk; returns how many. */
static int push_script_args(q_host *h)
{
    if (!lua_checkstack(h->L, h->opt.script_argc + 1)) {
        fprintf(stderr, "quarry: too many script arguments to pass to the main chunk\n");
        return 0;
    }
    for (int i = 0; i < h->opt.script_argc; i++)
        lua_pushstring(h->L, h->opt.script_argv[i]);
    return h->opt.script_argc;
}

static void reload_script(q_host *h)
{
    lua_State *L = h->L;
    int top = lua_gettop(L);
    char context[PATH_MAX + 64];

    if (luaL_loadfile(L, h->opt.script) != LUA_OK) {
        snprintf(context, sizeof context, "reload of %s failed, the old code keeps running",
                 h->opt.script);
        report_error(h, context, lua_tostring(L, -1));
        lua_settop(L, top);
        return;
    }
    /* Snapshot the callbacks so that a chunk failing halfway leaves none of
     * its half-installed functions behind. */
    lua_createtable(L, 0, (int)CALLBACK_COUNT);
    int snapshot = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->module_ref);
    int module = lua_gettop(L);
    for (size_t i = 0; i < CALLBACK_COUNT; i++) {
        lua_getfield(L, module, callback_names[i]);
        lua_setfield(L, snapshot, callback_names[i]);
    }
    lua_pushvalue(L, top + 1);
    int nargs = push_script_args(h);
    snprintf(context, sizeof context, "reload of %s failed, the old code keeps running",
             h->opt.script);
    if (protected_call(h, nargs, context) != LUA_OK) {
        for (size_t i = 0; i < CALLBACK_COUNT; i++) {
            lua_getfield(L, snapshot, callback_names[i]);
            lua_setfield(L, module, callback_names[i]);
        }
    } else {
        clear_error(h);
        printf("reloaded %s\n", h->opt.script);
        fflush(stdout);
    }
    lua_settop(L, top);
}

static void check_reload(q_host *h)
{
    if (h->window) {
        double now = q_window_time();
        if (now < h->next_reload_check)
            return;
        h->next_reload_check = now + RELOAD_INTERVAL;
    }
    file_sig sig = stat_script(h->opt.script);
    /* A file that is briefly missing (an editor replacing it) is not a change. */
    if (!sig.exists || same_sig(&sig, &h->script_sig))
        return;
    h->script_sig = sig;
    if (h->rec)
        q_recorder_reload(h->rec);
    reload_script(h);
}

/* ---- Lua state setup ---- */

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The repository root holding the executable: build/quarry -> ..,
 * build/sanitize/quarry -> ../.. . Recognised by its scripts/ and engine/. */
static bool find_repo_root(const char *exe, char *out, size_t out_size)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n > 0)
        dir[n] = '\0';
    else if (!exe || !realpath(exe, dir))
        return false;
    for (int level = 0; level < 4; level++) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return false;
        *slash = '\0';
        char scripts[PATH_MAX + 16], engine[PATH_MAX + 16];
        snprintf(scripts, sizeof scripts, "%s/scripts", dir);
        snprintf(engine, sizeof engine, "%s/engine", dir);
        if (is_dir(scripts) && is_dir(engine)) {
            snprintf(out, out_size, "%s", dir);
            return true;
        }
    }
    return false;
}

/* package.path = <script dir>/?.lua; <repo>/scripts/?.lua; ...; the default. */
static void set_package_path(q_host *h)
{
    lua_State *L = h->L;
    luaL_Buffer b;
    lua_getglobal(L, "package");
    luaL_buffinit(L, &b);

    const char *slash = strrchr(h->opt.script, '/');
    if (slash) {
        size_t len = (size_t)(slash - h->opt.script);
        luaL_addlstring(&b, h->opt.script, len ? len : 1);
        luaL_addstring(&b, "/?.lua;");
    }
    char root[PATH_MAX];
    if (find_repo_root(h->opt.exe, root, sizeof root)) {
        luaL_addstring(&b, root);
        luaL_addstring(&b, "/scripts/?.lua;");
        luaL_addstring(&b, root);
        luaL_addstring(&b, "/scripts/?/init.lua;");
    }
    lua_getfield(L, -2, "path");
    luaL_addvalue(&b);
    luaL_pushresult(&b);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
}

/* ---- --sandbox ---- */

/* Whether path lies inside dir (both real paths). */
static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return dir[0] && strncmp(path, dir, n) == 0 &&
           (path[n] == '/' || path[n] == '\0' || (n == 1 && dir[0] == '/'));
}

/* Whether a script in the sandbox may open path: its real path (or, for a
 * file not made yet, its directory's) must lie in the script's directory,
 * or in <repo>/scripts when lib is set. A dangling symlink is refused, since
 * writing through it would create its target wherever it points. */
static bool sandbox_allows(const q_host *h, const char *path, bool lib)
{
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        struct stat st;
        if (lstat(path, &st) == 0)
            return false;
        char dir[PATH_MAX];
        const char *slash = strrchr(path, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        const char *base = slash ? slash + 1 : path;
        if (strcmp(base, "..") == 0 || strcmp(base, ".") == 0 || !realpath(dir, real))
            return false;
    }
    return path_under(real, h->sandbox_dir) || (lib && h->sandbox_lib && path_under(real, h->sandbox_lib));
}

static const char *sandbox_check_path(lua_State *L, int arg, const char *fname)
{
    const char *path = luaL_checkstring(L, arg);
    if (!sandbox_allows(host_of_state(L), path, false))
        luaL_error(L, "%s: '%s' is outside the script's directory (--sandbox)", fname, path);
    return path;
}

/* loadfile(path [, mode [, env]]): text chunks from the script's directory. */
static int sandbox_loadfile(lua_State *L)
{
    if (lua_isnoneornil(L, 1))
        return luaL_error(L, "loadfile: reading standard input is not allowed (--sandbox)");
    const char *path = sandbox_check_path(L, 1, "loadfile");
    bool has_env = !lua_isnone(L, 3);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (has_env) {
        lua_pushvalue(L, 3);
        if (!lua_setupvalue(L, -2, 1))
            lua_pop(L, 1);
    }
    return 1;
}

static int sandbox_dofile(lua_State *L)
{
    if (lua_isnoneornil(L, 1))
        return luaL_error(L, "dofile: reading standard input is not allowed (--sandbox)");
    const char *path = sandbox_check_path(L, 1, "dofile");
    lua_settop(L, 1);
    if (luaL_loadfilex(L, path, "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 1;
}

/* load(chunk [, name [, mode [, env]]]) with mode forced to "t". */
static int sandbox_load(lua_State *L)
{
    if (lua_gettop(L) < 3)
        lua_settop(L, 3);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* package.searchers[2]: Lua files on the fixed sandbox path, text only. */
static int sandbox_searcher(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(2)); /* package.searchpath */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1)); /* the path */
    lua_call(L, 2, 2);
    if (lua_isnil(L, -2))
        return 1; /* the message of the files tried */
    lua_pop(L, 1);
    const char *file = lua_tostring(L, -1);
    if (!sandbox_allows(host_of_state(L), file, true))
        return luaL_error(L, "module '%s': '%s' is outside the sandbox", name, file);
    if (luaL_loadfilex(L, file, "t") != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file,
                          lua_tostring(L, -1));
    lua_pushvalue(L, -2);
    return 2;
}

/* A function wrapped so that its argument `upvalue 2` must be a path inside
 * the script's directory. */
static int sandbox_path_wrapper(lua_State *L)
{
    int arg = (int)lua_tointeger(L, lua_upvalueindex(2));
    if (lua_type(L, arg) == LUA_TSTRING)
        sandbox_check_path(L, arg, lua_tostring(L, lua_upvalueindex(3)));
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* Replaces t[field] (a function; t at the top) by its path-checking wrapper. */
static void wrap_path_function(lua_State *L, const char *field, int arg, const char *label)
{
    if (lua_getfield(L, -1, field) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return;
    }
    lua_pushinteger(L, arg);
    lua_pushstring(L, label);
    lua_pushcclosure(L, sandbox_path_wrapper, 3);
    lua_setfield(L, -2, field);
}

/* Pushes the method table of a class (metatable.methods or .__index). */
static bool push_methods(lua_State *L, const char *class_name)
{
    luaL_getmetatable(L, class_name);
    if (lua_istable(L, -1)) {
        if (lua_getfield(L, -1, "methods") != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_getfield(L, -1, "__index");
        }
        if (lua_istable(L, -1)) {
            lua_remove(L, -2);
            return true;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return false;
}

static void set_nil(lua_State *L, int table, const char *field)
{
    lua_pushnil(L);
    lua_setfield(L, table, field);
}

/* Runs in setup_state with the module table at the top. */
static void apply_sandbox(lua_State *L, q_host *h)
{
    char real[PATH_MAX], dir[PATH_MAX];
    const char *slash = strrchr(h->opt.script, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == h->opt.script ? 1 : (int)(slash - h->opt.script),
                 h->opt.script);
    if (!realpath(dir, real))
        luaL_error(L, "--sandbox: cannot resolve the script's directory %s: %s", dir, strerror(errno));
    h->sandbox_dir = dup_string(real);
    char root[PATH_MAX], lib[PATH_MAX + 16];
    if (find_repo_root(h->opt.exe, root, sizeof root)) {
        snprintf(lib, sizeof lib, "%s/scripts", root);
        if (realpath(lib, real))
            h->sandbox_lib = dup_string(real);
    }
    if (!h->sandbox_dir)
        luaL_error(L, "out of memory");

    int module = lua_gettop(L);
    lua_pushglobaltable(L);
    int G = lua_gettop(L);
    lua_getglobal(L, "package");
    int package = lua_gettop(L);
    lua_getfield(L, package, "loaded");
    int loaded = lua_gettop(L);

    set_nil(L, G, "io");
    set_nil(L, G, "debug");
    set_nil(L, loaded, "io");
    set_nil(L, loaded, "debug");

    lua_getglobal(L, "os");
    lua_createtable(L, 0, 2);
    lua_getfield(L, -2, "clock");
    lua_setfield(L, -2, "clock");
    lua_getfield(L, -2, "time");
    lua_setfield(L, -2, "time");
    lua_pushvalue(L, -1);
    lua_setfield(L, G, "os");
    lua_setfield(L, loaded, "os");
    lua_pop(L, 1);

    lua_pushcfunction(L, sandbox_dofile);
    lua_setfield(L, G, "dofile");
    lua_pushcfunction(L, sandbox_loadfile);
    lua_setfield(L, G, "loadfile");
    lua_getfield(L, G, "load");
    lua_pushcclosure(L, sandbox_load, 1);
    lua_setfield(L, G, "load");

    /* package: no C loaders; Lua modules from a fixed path, text only. */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, h->sandbox_dir);
    luaL_addstring(&b, "/?.lua;");
    luaL_addstring(&b, h->sandbox_dir);
    luaL_addstring(&b, "/?/init.lua");
    if (h->sandbox_lib) {
        luaL_addstring(&b, ";");
        luaL_addstring(&b, h->sandbox_lib);
        luaL_addstring(&b, "/?.lua;");
        luaL_addstring(&b, h->sandbox_lib);
        luaL_addstring(&b, "/?/init.lua");
    }
    luaL_pushresult(&b);
    lua_pushvalue(L, -1);
    lua_setfield(L, package, "path");
    lua_pushliteral(L, "");
    lua_setfield(L, package, "cpath");
    set_nil(L, package, "loadlib");
    lua_createtable(L, 2, 0);
    lua_getfield(L, package, "searchers");
    lua_rawgeti(L, -1, 1); /* the preload searcher */
    lua_rawseti(L, -3, 1);
    lua_pop(L, 1);
    lua_pushvalue(L, -2);  /* path */
    lua_getfield(L, package, "searchpath");
    lua_pushcclosure(L, sandbox_searcher, 2);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, package, "searchers");
    lua_pop(L, 1); /* path */

    /* quarry's functions taking file names. */
    if (lua_getfield(L, module, "world") == LUA_TTABLE)
        wrap_path_function(L, "load", 1, "quarry.world.load");
    lua_pop(L, 1);
    if (lua_getfield(L, module, "mesh") == LUA_TTABLE)
        wrap_path_function(L, "load", 1, "quarry.mesh.load");
    lua_pop(L, 1);
    if (lua_getfield(L, module, "graphics") == LUA_TTABLE)
        wrap_path_function(L, "screenshot", 1, "quarry.graphics.screenshot");
    lua_pop(L, 1);
    if (push_methods(L, QL_WORLD)) {
        wrap_path_function(L, "save", 2, "World:save");
        lua_pop(L, 1);
    }
    if (push_methods(L, QL_MESH)) {
        wrap_path_function(L, "save", 2, "Mesh:save");
        lua_pop(L, 1);
    }
    lua_settop(L, module);
}

/* Runs in protected mode: everything that may raise before the script runs. */
static int setup_state(lua_State *L)
{
    q_host *h = lua_touserdata(L, 1);
    luaL_openlibs(L);
    set_package_path(h);

    /* Headless runs are deterministic, math.random included; recorded runs
     * keep their seed in the recording. */
    if (h->opt.headless || h->rec || h->replay) {
        lua_getglobal(L, "math");
        lua_getfield(L, -1, "randomseed");
        lua_pushinteger(L, (lua_Integer)h->seed);
        lua_call(L, 1, 0);
        lua_pop(L, 1);
    }

    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_quarry);
    lua_setfield(L, -2, "quarry");
    lua_pop(L, 1);

    lua_getglobal(L, "require");
    lua_pushstring(L, "quarry");
    lua_call(L, 1, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "require 'quarry' returned a %s, not a table", luaL_typename(L, -1));
    q_lua_open_host_modules(L, h);
    if (h->opt.sandbox)
        apply_sandbox(L, h);
    if (h->rec || h->replay) {
        /* the clocks a script can read go through the recording */
        lua_getglobal(L, "os");
        if (lua_istable(L, -1)) {
            wrap_clock(L, "clock", "clock");
            wrap_clock(L, "time", "time");
        }
        lua_pop(L, 1);
        if (lua_getfield(L, -1, "timer") == LUA_TTABLE)
            wrap_clock(L, "now", "now");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, -1);
    h->module_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);

    /* arg[0] = script, arg[1..n] = its arguments, as the standalone lua does. */
    lua_createtable(L, h->opt.script_argc, 1);
    lua_pushstring(L, h->opt.script);
    lua_rawseti(L, -2, 0);
    for (int i = 0; i < h->opt.script_argc; i++) {
        lua_pushstring(L, h->opt.script_argv[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushvalue(L, -1);
    lua_setglobal(L, "arg");
    h->arg_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- frames ---- */

/* Headless key and mouse state, from an event about to be delivered. */
static void track_input(q_host *h, const q_event *ev)
{
    if (ev->kind == Q_EVENT_KEY_DOWN || ev->kind == Q_EVENT_KEY_UP) {
        int code = q_key_lookup(ev->key);
        int i = 0;
        while (i < h->keys_held_count && h->keys_held[i] != code)
            i++;
        if (ev->kind == Q_EVENT_KEY_DOWN && i == h->keys_held_count && code != 0 &&
            h->keys_held_count < MAX_KEYS_HELD)
            h->keys_held[h->keys_held_count++] = code;
        else if (ev->kind == Q_EVENT_KEY_UP && i < h->keys_held_count)
            h->keys_held[i] = h->keys_held[--h->keys_held_count];
    } else if (ev->kind == Q_EVENT_MOUSE_DOWN || ev->kind == Q_EVENT_MOUSE_UP ||
               ev->kind == Q_EVENT_MOUSE_MOVE) {
        h->mouse_x = ev->x;
        h->mouse_y = ev->y;
    }
}

static void dispatch_event(q_host *h, const q_event *ev)
{
    lua_State *L = h->L;
    if (h->rec)
        q_recorder_event(h->rec, ev);
    if (!h->window)
        track_input(h, ev);
    else if (ev->kind == Q_EVENT_MOUSE_DOWN || ev->kind == Q_EVENT_MOUSE_UP || ev->kind == Q_EVENT_MOUSE_MOVE)
        h->mouse_from_input = false;
    switch (ev->kind) {
    case Q_EVENT_QUIT:
        h->quit_requested = true;
        break;
    case Q_EVENT_KEY_DOWN:
    case Q_EVENT_KEY_UP: {
        const char *name = ev->kind == Q_EVENT_KEY_DOWN ? "keypressed" : "keyreleased";
        if (push_callback(h, name)) {
            lua_pushstring(L, ev->key);
            call_callback(h, name, 1);
        }
        if (ev->kind == Q_EVENT_KEY_DOWN && strcmp(ev->key, "escape") == 0)
            h->quit_requested = true;
        break;
    }
    case Q_EVENT_MOUSE_DOWN:
    case Q_EVENT_MOUSE_UP: {
        const char *name = ev->kind == Q_EVENT_MOUSE_DOWN ? "mousepressed" : "mousereleased";
        if (push_callback(h, name)) {
            lua_pushnumber(L, ev->x);
            lua_pushnumber(L, ev->y);
            lua_pushinteger(L, ev->button);
            call_callback(h, name, 3);
        }
        break;
    }
    case Q_EVENT_MOUSE_MOVE:
        if (push_callback(h, "mousemoved")) {
            lua_pushnumber(L, ev->x);
            lua_pushnumber(L, ev->y);
            lua_pushnumber(L, ev->dx);
            lua_pushnumber(L, ev->dy);
            call_callback(h, "mousemoved", 4);
        }
        break;
    case Q_EVENT_WHEEL:
        if (push_callback(h, "wheelmoved")) {
            lua_pushnumber(L, ev->dx);
            lua_pushnumber(L, ev->dy);
            call_callback(h, "wheelmoved", 2);
        }
        break;
    }
}

/* The fps ring (q_host_fps). */
static void note_dt(q_host *h, double dt)
{
    h->dts[h->dt_next] = dt;
    h->dt_next = (h->dt_next + 1) % FPS_FRAMES;
    if (h->dt_count < FPS_FRAMES)
        h->dt_count++;
}

static bool write_image(q_host *h, FILE *f, const char *path)
{
    int w = 0, ht = 0;
    char err[256];
    q_window_drawable_size(h->window, &w, &ht);
    if (!q_render_write_screenshot(f, q_image_format_for_path(path), w, ht, err, sizeof err)) {
        fprintf(stderr, "quarry: screenshot %s: %s\n", path, err);
        return false;
    }
    return true;
}

static void write_pending_screenshot(q_host *h)
{
    if (!h->shot_file)
        return;
    bool ok = write_image(h, h->shot_file, h->shot_path);
    if (fclose(h->shot_file) != 0 && ok) {
        fprintf(stderr, "quarry: screenshot %s: %s\n", h->shot_path, strerror(errno));
        ok = false;
    }
    if (!ok)
        remove(h->shot_path);
    h->shot_file = NULL;
    free(h->shot_path);
    h->shot_path = NULL;
}

/* Writes --screenshot; false (already reported) on failure. */
static bool write_final_screenshot(q_host *h)
{
    const char *path = h->opt.screenshot;
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "quarry: cannot write screenshot %s: %s\n", path, strerror(errno));
        return false;
    }
    bool ok = write_image(h, f, path);
    if (fclose(f) != 0)
        ok = false;
    if (!ok)
        remove(path);
    return ok;
}

/* Clears and calls draw(); the caller presents or reads back. */
static void draw_frame(q_host *h)
{
    if (h->window) {
        int w = 0, ht = 0, ww = 0, wh = 0;
        q_window_drawable_size(h->window, &w, &ht);
        q_window_size(h->window, &ww, &wh);
        q_render_begin_frame(h->renderer, w, ht, ww, wh, h->clear_color);
    }
    if (push_callback(h, "draw"))
        call_callback(h, "draw", 0);
    if (h->window)
        q_render_end_frame(h->renderer, &h->camera);
}

static void deliver_input(q_host *h)
{
    while (h->input_next < h->input_count && h->input[h->input_next].frame <= h->frame) {
        const q_event *ev = &h->input[h->input_next++].event;
        dispatch_event(h, ev);
        if (h->window) {
            /* after dispatch, which took the mouse for the real one */
            track_input(h, ev);
            h->mouse_from_input = h->mouse_from_input || ev->kind == Q_EVENT_MOUSE_DOWN ||
                                  ev->kind == Q_EVENT_MOUSE_UP || ev->kind == Q_EVENT_MOUSE_MOVE;
        }
    }
}

/* The start of a replayed frame: the recorded events and reloads in their
 * order, up to the frame's line. Returns false when the replay is over (its
 * end line, which follows a quit it delivered); otherwise sets *dt to the
 * recorded one. */
static bool replay_frame_start(q_host *h, double *dt)
{
    if (h->window) {
        /* the window's own input is not the script's; closing it, or
         * Escape, still stops the replay */
        q_event ev;
        while (q_window_poll(h->window, &ev))
            if (ev.kind == Q_EVENT_QUIT || (ev.kind == Q_EVENT_KEY_DOWN && strcmp(ev.key, "escape") == 0))
                h->quit_requested = true;
        if (h->quit_requested) {
            h->replay_over = true;
            return false;
        }
    }
    for (;;) {
        const q_replay_item *it = q_replayer_peek(h->replay);
        switch (it->kind) {
        case Q_REPLAY_EVENT: {
            q_event ev = it->event;
            q_replayer_skip(h->replay);
            dispatch_event(h, &ev);
            break;
        }
        case Q_REPLAY_RELOAD:
            q_replayer_skip(h->replay);
            reload_script(h);
            break;
        case Q_REPLAY_FRAME:
            if (it->frame != h->frame) {
                char what[80];
                snprintf(what, sizeof what, "frame %ld began", h->frame);
                replay_left(h, it, what);
            }
            *dt = it->dt;
            q_replayer_skip(h->replay);
            return !h->quit_requested;
        case Q_REPLAY_ANSWER:
            /* asked for while recording, not now */
            replay_left(h, it, "the script went on without asking");
            q_replayer_skip(h->replay);
            break;
        case Q_REPLAY_END:
            if (it->frame != h->frame) {
                char what[80];
                snprintf(what, sizeof what, "frame %ld began", h->frame);
                replay_left(h, it, what);
            }
            q_replayer_skip(h->replay);
            return false;
        case Q_REPLAY_EOF:
            fprintf(stderr, "quarry: --replay %s ends after frame %ld without an 'end' line "
                    "(the recorded run was cut short)\n", h->opt.replay, h->frame);
            h->replay_over = true;
            return false;
        case Q_REPLAY_BAD:
            fprintf(stderr, "quarry: --replay %s:%ld: %s\n", h->opt.replay, it->line, it->text);
            h->replay_left = true;
            h->replay_over = true;
            return false;
        }
    }
}

/* The start of a live frame: window events, --input events, a reload;
 * returns false when they asked to quit, otherwise sets *dt. */
static bool live_frame_start(q_host *h, double *dt, double *prev)
{
    if (h->window) {
        q_event ev;
        while (q_window_poll(h->window, &ev))
            dispatch_event(h, &ev);
    }
    deliver_input(h);
    if (h->quit_requested)
        return false;
    check_reload(h);

    *dt = HEADLESS_DT;
    if (h->window) {
        double now = q_window_time();
        if (h->frame > 0)
            *dt = now - *prev;
        *prev = now;
        if (*dt > MAX_DT)
            *dt = MAX_DT;
        if (*dt < 0.0)
            *dt = 0.0;
    }
    if (h->rec)
        q_recorder_frame(h->rec, h->frame, *dt);
    return true;
}

/* Reads --input and checks its key names; false with a message. */
static bool open_input(q_host *h, char *err, size_t err_size)
{
    if (!q_input_load(h->opt.input, &h->input, &h->input_count, err, err_size))
        return false;
    for (size_t i = 0; i < h->input_count; i++) {
        const q_event *ev = &h->input[i].event;
        if ((ev->kind == Q_EVENT_KEY_DOWN || ev->kind == Q_EVENT_KEY_UP) && q_key_lookup(ev->key) == 0) {
            snprintf(err, err_size, "%s: unknown key '%s' at frame %ld (names as keypressed gets them: "
                     "'a', 'space', 'left shift', 'f1', ...)", h->opt.input, ev->key, h->input[i].frame);
            free(h->input);
            h->input = NULL;
            return false;
        }
    }
    return true;
}

/* Returns false when --screenshot could not be written. */
static bool run_frames(q_host *h)
{
    bool final_shot_done = false;
    double prev = h->window ? q_window_time() : 0.0;

    while (!h->quit_requested && !interrupted) {
        double dt;
        if (h->replay ? !replay_frame_start(h, &dt) : !live_frame_start(h, &dt, &prev))
            break;
        if (h->quit_requested)
            break;
        note_dt(h, dt);
        if (push_callback(h, "update")) {
            lua_pushnumber(h->L, dt);
            call_callback(h, "update", 1);
        }

        draw_frame(h);
        bool last = h->opt.frames > 0 && h->frame + 1 >= h->opt.frames;
        if (h->window) {
            write_pending_screenshot(h);
            if (last && h->opt.screenshot) {
                if (!write_final_screenshot(h))
                    return false;
                final_shot_done = true;
            }
            q_window_swap(h->window);
        }
        h->frame++;
        if (last)
            break;
    }
    if (h->rec)
        q_recorder_end(h->rec, h->frame);
    if (h->replay && !h->replay_over) {
        /* what quit() asks comes next in the recording, unless the run
         * stopped before the recording's end */
        const q_replay_item *it = q_replayer_peek(h->replay);
        h->replay_over = it->kind == Q_REPLAY_FRAME || it->kind == Q_REPLAY_EVENT ||
                         it->kind == Q_REPLAY_RELOAD;
    }

    /* Ended by escape, the window or a signal: draw one more frame for a
     * screenshot still owed, since the last one is already presented. */
    if (h->window && (h->shot_file || (h->opt.screenshot && !final_shot_done))) {
        draw_frame(h);
        write_pending_screenshot(h);
        if (h->opt.screenshot && !final_shot_done && !write_final_screenshot(h))
            return false;
    }
    return true;
}

static void destroy_host(q_host *h)
{
    flush_repeats(h);
    if (h->shot_file) {
        fclose(h->shot_file);
        remove(h->shot_path);
        fprintf(stderr, "quarry: screenshot %s was requested too late to be drawn\n", h->shot_path);
    }
    free(h->shot_path);
    if (h->L) {
        /* Finalizers run at close; they are not charged to any call. */
        lua_sethook(h->L, NULL, 0, 0);
        h->opt.max_memory = 0;
        lua_close(h->L);
    }
    free(h->sandbox_dir);
    free(h->sandbox_lib);
    free(h->input);
    q_replayer_close(h->replay);
    q_render_destroy(h->renderer);
    q_window_close(h->window);
    free(h->last_error);
}

int q_host_run(const q_host_options *options)
{
    q_host host = {0};
    q_host *h = &host;
    h->opt = *options;
    h->module_ref = h->arg_ref = LUA_NOREF;
    h->clear_color[3] = 1.0f;
    h->camera = q_default_camera();
    int status = 1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (h->opt.headless) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
    }

    char err[512];
    if (h->opt.input && !open_input(h, err, sizeof err)) {
        fprintf(stderr, "quarry: --input %s\n", err);
        goto done;
    }
    if (h->opt.replay) {
        h->replay = q_replayer_open(h->opt.replay, err, sizeof err);
        if (!h->replay) {
            fprintf(stderr, "quarry: --replay: %s\n", err);
            goto done;
        }
        h->seed = q_replayer_seed(h->replay);
    }
    if (h->opt.record) {
        /* a window run gets a fresh seed, as an unrecorded one would */
        if (!h->opt.headless)
            h->seed = (long long)time(NULL) ^ ((long long)getpid() << 16);
        h->rec = q_recorder_open(h->opt.record, h->seed, h->opt.script, err, sizeof err);
        if (!h->rec) {
            fprintf(stderr, "quarry: --record: %s\n", err);
            goto done;
        }
    }

    h->L = luaL_newstate();
    if (!h->L) {
        fprintf(stderr, "quarry: cannot create a Lua state (out of memory)\n");
        goto done;
    }
    lua_State *L = h->L;
    /* Same realloc/free underneath, so the switch is seamless; the count
     * starts from what the new state holds. */
    *(q_host **)lua_getextraspace(L) = h;
    h->mem_used = (size_t)lua_gc(L, LUA_GCCOUNT) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB);
    lua_setallocf(L, limited_alloc, h);
    lua_pushcfunction(L, setup_state);
    lua_pushlightuserdata(L, h);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        fprintf(stderr, "quarry: cannot set up Lua: %s\n", lua_tostring(L, -1));
        goto done;
    }

    h->script_sig = stat_script(h->opt.script);
    if (luaL_loadfile(L, h->opt.script) != LUA_OK) {
        fprintf(stderr, "quarry: %s\n", lua_tostring(L, -1));
        goto done;
    }

    if (!h->opt.headless) {
        h->window = q_window_open("Quarry", WINDOW_WIDTH, WINDOW_HEIGHT, err, sizeof err);
        if (!h->window) {
            fprintf(stderr, "quarry: %s\n"
                    "quarry: a window with OpenGL 4.5 core is needed; run with --headless "
                    "to go without one\n", err);
            goto done;
        }
        h->renderer = q_render_create(q_window_gl_proc, err, sizeof err);
        if (!h->renderer) {
            fprintf(stderr, "quarry: %s\nquarry: run with --headless to go without a window\n", err);
            goto done;
        }
        if (strcmp(q_window_driver(h->window), "offscreen") == 0 && !getenv("SDL_VIDEODRIVER"))
            fprintf(stderr, "quarry: no display found, drawing offscreen (nothing is shown); "
                    "--headless runs without a window\n");
        show_title(h, NULL);
    }

    /* The main chunk: defines the callbacks. Failing here is fatal. */
    lua_pushcfunction(L, traceback);
    lua_insert(L, -2);
    int nargs = push_script_args(h);
    begin_budget(h);
    int main_status = lua_pcall(L, nargs, 0, -nargs - 2);
    if (main_status != LUA_OK) {
        if (h->mem_refused && (main_status == LUA_ERRMEM || main_status == LUA_ERRERR))
            fprintf(stderr, "quarry: memory limit exceeded: the Lua heap may not grow past "
                    "%zu bytes (--max-memory)\n", h->opt.max_memory);
        else
            fprintf(stderr, "quarry: %s\n", lua_tostring(L, -1));
        goto done;
    }
    lua_pop(L, 1);

    if (push_callback(h, "load")) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, h->arg_ref);
        call_callback(h, "load", 1);
    }
    status = run_frames(h) ? 0 : 1;
    if (push_callback(h, "quit"))
        call_callback(h, "quit", 0);
    if (h->replay && !h->replay_over) {
        const q_replay_item *it = q_replayer_peek(h->replay);
        if (it->kind != Q_REPLAY_EOF)
            replay_left(h, it, "the run ended");
    }
    if (h->replay_left)
        status = 1;

done:
    if (h->rec && !q_recorder_close(h->rec, err, sizeof err)) {
        fprintf(stderr, "quarry: --record: %s\n", err);
        status = 1;
    }
    h->rec = NULL;
    destroy_host(h);
    return status;
}

/* ---- state for the bindings ---- */

bool q_host_headless(const q_host *h)
{
    return h->window == NULL;
}

q_renderer *q_host_renderer(q_host *h)
{
    return h->renderer;
}

void q_host_window_size(q_host *h, int *width, int *height)
{
    *width = WINDOW_WIDTH;
    *height = WINDOW_HEIGHT;
    if (h->window)
        q_window_size(h->window, width, height);
    double v[2] = {*width, *height};
    host_answer(h, "size", v, 2);
    *width = (int)v[0];
    *height = (int)v[1];
}

long q_host_frame(const q_host *h)
{
    return h->frame;
}

bool q_host_capture_mouse(q_host *h, bool capture)
{
    double done = 1.0;
    if (h->window && !(h->replay && !h->replay_over) && !q_window_capture_mouse(h->window, capture))
        done = 0.0;
    host_answer(h, capture ? "capture 1" : "capture 0", &done, 1);
    if (done == 0.0)
        return false;
    h->mouse_captured = capture;
    return true;
}

bool q_host_mouse_captured(const q_host *h)
{
    return h->mouse_captured;
}

float *q_host_clear_color(q_host *h)
{
    return h->clear_color;
}

void q_host_clear(q_host *h, const float rgba[4])
{
    if (h->window)
        q_render_clear(rgba);
}

q_camera *q_host_camera(q_host *h)
{
    return &h->camera;
}

q_debug_flags *q_host_debug_flags(q_host *h)
{
    return &h->debug;
}

bool q_host_request_screenshot(q_host *h, const char *path, char *err, size_t err_size)
{
    if (!h->window) {
        snprintf(err, err_size, "no window to take a screenshot of (running --headless)");
        return false;
    }
    if (h->shot_file) {
        snprintf(err, err_size, "a screenshot (%s) is already pending for this frame", h->shot_path);
        return false;
    }
    char *copy = dup_string(path);
    if (!copy) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, err_size, "cannot open %s: %s", path, strerror(errno));
        free(copy);
        return false;
    }
    h->shot_file = f;
    h->shot_path = copy;
    return true;
}

int q_host_key_lookup(const char *name)
{
    return q_key_lookup(name);
}

bool q_host_key_down(q_host *h, int keycode)
{
    bool held = h->window && keycode != 0 && q_window_key_down(h->window, keycode);
    for (int i = 0; i < h->keys_held_count; i++)
        held = held || h->keys_held[i] == keycode;
    double down = held;
    char question[32];
    snprintf(question, sizeof question, "key %d", keycode);
    host_answer(h, question, &down, 1);
    return down != 0.0;
}

void q_host_mouse_position(q_host *h, double *x, double *y)
{
    *x = h->mouse_x;
    *y = h->mouse_y;
    if (h->window && !h->mouse_from_input)
        q_window_mouse_position(h->window, x, y);
    double v[2] = {*x, *y};
    host_answer(h, "mouse", v, 2);
    *x = v[0];
    *y = v[1];
}

double q_host_script_ms(const q_host *h)
{
    return h->script_ms + (h->script_since > 0 ? script_now() - h->script_since : 0.0);
}

int q_host_fps(const q_host *h)
{
    double sum = 0.0;
    for (int i = 0; i < h->dt_count; i++)
        sum += h->dts[i];
    if (h->dt_count == 0 || sum <= 0.0)
        return 0;
    return (int)lround((double)h->dt_count / sum);
}
