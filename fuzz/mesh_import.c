/* libFuzzer target: the mesh importer (q_mesh_import, engine/mesh/import.c,
 * assimp underneath).
 *
 * The first byte of an input picks the format (its value mod 6: obj, off,
 * stl, ply, gltf, glb; see QUARRY_FUZZ_MESH_FORMATS below), the rest is the file, written to a temporary file with
 * that extension (the importer chooses the reader by extension). A mesh that
 * loads is checked for sane indices and finite coordinates.
 * Seeds: the OBJ/OFF/STL/PLY/glTF models of Debian's assimp-testmodels,
 * prefixed with their format byte (fuzz/run.sh).
 *
 * assimp itself is a system library without instrumentation: coverage guides
 * the fuzzer through import.c only, and memory errors inside assimp are seen
 * only when they reach instrumented code or the allocator.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const extensions[] = {"obj", "off", "stl", "ply", "gltf", "glb"};
#define FORMATS (sizeof extensions / sizeof extensions[0])

/* QUARRY_FUZZ_MESH_FORMATS (e.g. "obj off stl ply") limits the formats the
 * first byte maps to (a prefix of the list keeps seeds' bytes meaning the
 * same format): the CI run leaves out glTF (fuzz/run.sh). */
static size_t formats[FORMATS], format_count;

static void pick_formats(void)
{
    const char *env = getenv("QUARRY_FUZZ_MESH_FORMATS");
    for (size_t i = 0; i < FORMATS; i++) {
        if (env) {
            const char *p = env;
            size_t n = strlen(extensions[i]);
            bool found = false;
            while ((p = strstr(p, extensions[i])) != NULL) {
                if ((p == env || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
                    found = true;
                p += n;
            }
            if (!found)
                continue;
        }
        formats[format_count++] = i;
    }
    if (format_count == 0)
        formats[format_count++] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static char dir[32];
    if (!dir[0]) {
        pick_formats();
        snprintf(dir, sizeof dir, "%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    }
    char path[96];
    snprintf(path, sizeof path, "%s/quarry-fuzz-%d.%s", dir, (int)getpid(), extensions[formats[data[0] % format_count]]);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1)
        abort();
    fclose(f);

    q_import_def def = q_default_import_def();
    def.max_file_bytes = 1 << 20;
    def.max_vertices = 1 << 20;
    q_status st;
    char err[512];
    q_mesh *m = q_mesh_import(path, &def, &st, err, sizeof err);
    unlink(path);
    if (!m)
        return 0;
    if (m->index_count % 3 != 0)
        abort();
    for (size_t i = 0; i < m->vertex_count * 3; i++)
        if (!isfinite(m->positions[i]))
            abort();
    for (size_t i = 0; i < m->index_count; i++)
        if (m->indices[i] >= m->vertex_count)
            abort();
    q_mesh_destroy(m);
    return 0;
}
