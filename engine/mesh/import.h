/* Triangle meshes from files, through assimp's C API.
 *
 * Formats, chosen by extension (case-insensitive): Wavefront OBJ (.obj),
 * OFF (.off), STL ascii or binary (.stl), PLY (.ply) and glTF 2 (.gltf with
 * its buffers, or .glb). Other extensions are refused before assimp sees the
 * file. Every mesh of the scene is taken, with its node's transform applied
 * (instanced meshes once per instance), triangulated; points and lines are
 * dropped. Vertices within the merge distance of an earlier vertex become
 * that vertex (greedy, in file order), which welds the seams that formats
 * with per-face attributes split, and triangles left with a repeated vertex
 * are dropped. The default merge distance is the hull's quantization
 * distance (q_quantization_distance: 1e-6 of the bounding-box diagonal), so
 * a loaded mesh and its hull agree on what "the same point" is.
 *
 * Refused with a message (the mesh is NULL): missing or unreadable files,
 * files over max_file_bytes (default 256 MiB), empty files, unsupported
 * extensions, anything assimp cannot read, OBJ faces with fewer than three
 * vertices, non-finite coordinates or coordinates beyond 1e30, more than
 * max_vertices vertices or triangles before welding (default 2^24), and
 * files without triangles. assimp's logger is silenced.
 */
#ifndef Q_MESH_IMPORT_H
#define Q_MESH_IMPORT_H

#include <stddef.h>

#include "mesh/mesh.h"

#define Q_IMPORT_MAX_FILE_BYTES ((size_t)256 << 20)
#define Q_IMPORT_MAX_VERTICES ((size_t)1 << 24)

typedef struct q_import_def {
    double merge;          /* weld distance in file units; 0 = the default above */
    size_t max_file_bytes; /* 0 = Q_IMPORT_MAX_FILE_BYTES */
    size_t max_vertices;   /* vertices and triangles; 0 = Q_IMPORT_MAX_VERTICES */
} q_import_def;

q_import_def q_default_import_def(void);

/* Loads path into a new mesh (positions only, indices 0-based, wound as in
 * the file). def may be NULL. On failure returns NULL, sets *status
 * (Q_ERR_IO, Q_ERR_FORMAT, Q_ERR_TOO_LARGE, Q_ERR_ARGUMENT for a negative
 * merge, Q_ERR_MEMORY) and writes a message naming the file to err. */
q_mesh *q_mesh_import(const char *path, const q_import_def *def, q_status *status, char *err, size_t errlen);

#endif
