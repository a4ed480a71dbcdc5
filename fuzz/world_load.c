/* libFuzzer target: the world file loader (q_world_load, engine/world/save.c).
 *
 * Each input is written to one memory file (memfd) and loaded through its
 * /proc/self/fd path, so the loader reads it exactly as it reads a save on
 * disk. A world that loads is hashed, stepped once, saved and loaded again
 * (the round trip must load), then destroyed.
 * Seeds: real saves made by the engine (fuzz/seeds.lua).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "world/world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfile(const char *name)
{
    int fd = memfd_create(name, 0);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int in_fd = -1;
    static char in_path[64];
    if (in_fd < 0) {
        in_fd = memfile("quarry-fuzz-in");
        snprintf(in_path, sizeof in_path, "/proc/self/fd/%d", in_fd);
    }
    if (ftruncate(in_fd, 0) != 0 || pwrite(in_fd, data, size, 0) != (ssize_t)size)
        abort();

    char err[512];
    q_world *w = q_world_load(in_path, err, sizeof err);
    if (!w)
        return 0;
    (void)q_world_hash(w);
    (void)q_world_step(w, q_world_get_def(w)->step);
    /* Saving renames a temporary file over the path, which a /proc fd link
     * cannot take; save to a real temporary file (tmpfs when there is one,
     * where fsync costs nothing). */
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s/quarry-fuzz-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        close(fd);
        if (q_world_save(w, tmp, err, sizeof err) == Q_OK) {
            q_world *again = q_world_load(tmp, err, sizeof err);
            if (!again) {
                fprintf(stderr, "a loaded world saved and failed to load again: %s\n", err);
                abort();
            }
            q_world_destroy(again);
        }
        unlink(tmp);
    }
    q_world_destroy(w);
    return 0;
}
