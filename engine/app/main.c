/* quarry: command line of the host program.
 *
 *   quarry [options] script.lua [args]
 *
 * Options stop at the script name (or at "--"); what follows belongs to the
 * script. Usage errors exit with status 2.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/host.h"

#define EXIT_USAGE 2

static void print_usage(FILE *out)
{
    fputs("Usage: quarry [options] script.lua [args...]\n"
          "Runs a Lua script with the Quarry engine. The script defines LOVE-style\n"
          "callbacks on the module table (local quarry = require \"quarry\"):\n"
          "  quarry.load(args) quarry.update(dt) quarry.draw() quarry.keypressed(key)\n"
          "  quarry.keyreleased(key) quarry.mousepressed(x, y, button)\n"
          "  quarry.mousereleased(x, y, button) quarry.mousemoved(x, y, dx, dy)\n"
          "  quarry.wheelmoved(dx, dy) quarry.quit()\n"
          "Saving the script while it runs reloads it; globals and worlds survive.\n"
          "\n"
          "Options:\n"
          "  --headless         no window, no OpenGL; dt is exactly 1/60 (but in a replay)\n"
          "  --frames N         quit after N frames (N >= 1)\n"
          "  --screenshot FILE  write the last frame to FILE: PNG, or binary PPM when\n"
          "                     FILE ends in .ppm (needs a window; SDL_VIDEODRIVER=offscreen\n"
          "                     works without a display)\n"
          "  --max-instructions N  stop any one callback (or the main chunk, or a\n"
          "                     reload) after N Lua instructions with an error; the loop\n"
          "                     goes on (default 1000000000; 0 = no limit)\n"
          "  --max-memory SIZE  cap the Lua heap at SIZE bytes (suffix K, M or G; at\n"
          "                     least 1M; default 1G; 0 = no limit); an allocation past\n"
          "                     it is a memory error in the script\n"
          "  --sandbox          for untrusted scripts: no io, debug, os (but os.clock and\n"
          "                     os.time), package.loadlib, C modules or binary chunks; files\n"
          "                     only in the script's directory\n"
          "  --record FILE      write the run to FILE (text): the input events given to the\n"
          "                     callbacks, each frame's dt, reloads, and what the script\n"
          "                     read from the host (keyboard.is_down, mouse.position,\n"
          "                     graphics.size, mouse.set_captured, os.clock, os.time(),\n"
          "                     timer.now) and the math.random seed\n"
          "  --replay FILE      run the script on a recording instead of the real input\n"
          "                     and clocks: the same script and arguments end with the\n"
          "                     same world:hash(); stops where the recording ends (or at\n"
          "                     --frames); headless or in a window. Exit status 1 when\n"
          "                     the run leaves the recording (the script changed)\n"
          "  --input FILE       deliver scripted input events, headless too: lines\n"
          "                     'FRAME EVENT', FRAME from 0, EVENT one of 'key down NAME',\n"
          "                     'key up NAME', 'mouse down X Y BUTTON', 'mouse up X Y\n"
          "                     BUTTON', 'mouse move X Y DX DY', 'wheel DX DY', 'quit';\n"
          "                     '#' starts a comment line\n"
          "  -h, --help         show this help and exit\n"
          "  --                 end of options\n"
          "\n"
          "Arguments after the script go to quarry.load(args) and the global arg\n"
          "(arg[0] is the script). Escape or closing the window calls quarry.quit().\n"
          "Exit status: 0 normal end, 1 the script or the window failed to start\n"
          "(or --record could not be written, or a replay left its recording),\n"
          "2 bad command line.\n",
          out);
}

static int usage_error(const char *fmt, const char *detail)
{
    fputs("quarry: ", stderr);
    fprintf(stderr, fmt, detail);
    fputs("\nTry 'quarry --help' for more information.\n", stderr);
    return EXIT_USAGE;
}

/* Strict positive integer: digits only, no sign, no overflow. */
static bool parse_frames(const char *s, long *out)
{
    if (!s[0])
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE || v < 1)
        return false;
    *out = v;
    return true;
}

/* Whole number >= 0 with an optional K, M or G (binary) suffix. */
static bool parse_size(const char *s, unsigned long long *out, bool suffix)
{
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return false;
    int shift = 0;
    if (suffix && *end) {
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return false;
        }
        end++;
    }
    if (*end || (shift && v > (ULLONG_MAX >> shift)))
        return false;
    *out = v << shift;
    return true;
}

/* For "--name VALUE" and "--name=VALUE": sets *value and advances *i, or
 * returns false when the value is missing. */
static bool option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return true;
    }
    if (*i + 1 >= argc)
        return false;
    *value = argv[++*i];
    return true;
}

static bool is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

int main(int argc, char **argv)
{
    q_host_options opt = {0};
    opt.exe = argc > 0 ? argv[0] : "quarry";
    opt.max_instructions = Q_HOST_DEFAULT_MAX_INSTRUCTIONS;
    opt.max_memory = Q_HOST_DEFAULT_MAX_MEMORY;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            break;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            print_usage(stdout);
            return 0;
        } else if (strcmp(arg, "--headless") == 0) {
            opt.headless = true;
        } else if (is_option(arg, "--frames")) {
            const char *value;
            if (!option_value(argc, argv, &i, "--frames", &value))
                return usage_error("%s needs a number of frames", "--frames");
            if (!parse_frames(value, &opt.frames))
                return usage_error("--frames needs a whole number >= 1, got '%s'", value);
        } else if (is_option(arg, "--screenshot")) {
            const char *value;
            if (!option_value(argc, argv, &i, "--screenshot", &value) || !value[0])
                return usage_error("%s needs a file name", "--screenshot");
            opt.screenshot = value;
        } else if (is_option(arg, "--max-instructions")) {
            const char *value;
            unsigned long long n;
            if (!option_value(argc, argv, &i, "--max-instructions", &value))
                return usage_error("%s needs a number of instructions", "--max-instructions");
            if (!parse_size(value, &n, false) || n > (unsigned long long)LLONG_MAX)
                return usage_error("--max-instructions needs a whole number >= 0, got '%s'", value);
            opt.max_instructions = (long long)n;
        } else if (is_option(arg, "--max-memory")) {
            const char *value;
            unsigned long long n;
            if (!option_value(argc, argv, &i, "--max-memory", &value))
                return usage_error("%s needs a size", "--max-memory");
            if (!parse_size(value, &n, true) || n > SIZE_MAX || (n > 0 && n < (1u << 20)))
                return usage_error("--max-memory needs 0 or a size of at least 1M (bytes, or "
                                   "with K, M or G), got '%s'", value);
            opt.max_memory = (size_t)n;
        } else if (strcmp(arg, "--sandbox") == 0) {
            opt.sandbox = true;
        } else if (is_option(arg, "--record") || is_option(arg, "--replay") || is_option(arg, "--input")) {
            const char **slot = is_option(arg, "--record") ? &opt.record
                              : is_option(arg, "--replay") ? &opt.replay : &opt.input;
            size_t len = strcspn(arg, "=");
            char name[16];
            snprintf(name, sizeof name, "%.*s", (int)len, arg);
            if (!option_value(argc, argv, &i, name, slot) || !(*slot)[0])
                return usage_error("%s needs a file name", name);
        } else {
            return usage_error("unknown option '%s' (valid: --headless, --frames N, "
                               "--screenshot FILE, --max-instructions N, --max-memory SIZE, "
                               "--sandbox, --record FILE, --replay FILE, --input FILE, --help)", arg);
        }
    }
    if (i >= argc)
        return usage_error("%s", "no script given");
    if (opt.screenshot && opt.headless)
        return usage_error("%s needs a window; it cannot be used with --headless", "--screenshot");
    if (opt.replay && opt.record)
        return usage_error("%s: --record and --replay cannot be used together", "--replay");
    if (opt.replay && opt.input)
        return usage_error("%s: a replay takes its input from the recording, not --input", "--replay");
    opt.script = argv[i];
    opt.script_argc = argc - i - 1;
    opt.script_argv = argv + i + 1;
    return q_host_run(&opt);
}
