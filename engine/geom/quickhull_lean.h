/* The lean 3D hull build behind q_hull_def.lean (quickhull_lean.c): private
 * to quickhull.c. */
#ifndef Q_QUICKHULL_LEAN_H
#define Q_QUICKHULL_LEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "geom/quickhull.h"

/* Hull of n <= Q_HULL_LEAN_MAX centred points c with quantization distance
 * s, from the tetrahedron tetra (four point indices more than s off each
 * other's line and plane, as q_hull picks them). On success writes vertices,
 * indices and info as q_hull does for a solid and returns true; returns
 * false when the build or its final check fails (then vertices and indices
 * hold garbage and the caller runs the full build). No heap memory. */
bool q_hull_lean(const double *c, size_t n, double s, const uint32_t tetra[4], uint32_t *vertices,
                 uint32_t *indices, q_hull_info *info);

#endif
