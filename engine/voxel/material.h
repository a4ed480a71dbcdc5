/* Materials: a process-wide table of up to 255 materials indexed by a byte.
 *
 * Id 0 is air. The built-ins of API.md take ids 1..13 in the order listed
 * there; q_material_define appends user materials. Voxels store the id, so
 * save files store names and definitions and remap ids on load.
 */
#ifndef Q_MATERIAL_H
#define Q_MATERIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define Q_MATERIAL_AIR 0
#define Q_MATERIAL_MAX 256
#define Q_MATERIAL_NAME_MAX 31

typedef struct q_material {
    char name[Q_MATERIAL_NAME_MAX + 1];
    float density;     /* kg/m^3 of fully occupied voxels */
    float friction;    /* Coulomb coefficient, >= 0 */
    float restitution; /* 0..1 */
    float color[3];    /* linear RGB, 0..1 */
    float strength;    /* contact impulse (N s) above which a brittle body shatters */
    bool brittle;
    bool liquid; /* water-like: not solid for collision, buoyant */
} q_material;

/* Defaults for a user material: density 1000, friction 0.6, restitution 0.1,
 * grey, strength 1000, neither brittle nor liquid. */
q_material q_default_material(void);

/* Number of ids in use (built-ins included); ids are 0..count-1. */
int q_material_count(void);
/* Material of an id, or NULL for an unused id. */
const q_material *q_material_get(int id);
/* Id of a name, or -1. */
int q_material_find(const char *name);
/* Adds a material, or updates a user material of the same name. Returns its
 * id, or -1 with a message in err (bad name or values, built-in name, table
 * full). Values must be finite: density > 0, friction >= 0, restitution and
 * colour in 0..1, strength > 0. */
int q_material_define(const q_material *def, char *err, size_t errlen);

#endif
