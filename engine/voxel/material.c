/* Material table: see material.h. */
#include "voxel/material.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Densities in kg/m^3 and friction/restitution pairs chosen to feel right in
 * play; strength is the contact impulse that breaks a brittle body. */
static const q_material builtins[] = {
    {"air", 1.2f, 0.0f, 0.0f, {0.0f, 0.0f, 0.0f}, 0.0f, false, false},
    {"water", 1000.0f, 0.0f, 0.0f, {0.15f, 0.35f, 0.6f}, 0.0f, false, true},
    {"rock", 2600.0f, 0.8f, 0.1f, {0.45f, 0.44f, 0.42f}, 5000.0f, false, false},
    {"grass", 1500.0f, 0.7f, 0.05f, {0.25f, 0.5f, 0.18f}, 500.0f, false, false},
    {"dirt", 1500.0f, 0.7f, 0.05f, {0.42f, 0.3f, 0.2f}, 500.0f, false, false},
    {"sand", 1600.0f, 0.6f, 0.02f, {0.85f, 0.78f, 0.55f}, 300.0f, false, false},
    {"snow", 400.0f, 0.3f, 0.02f, {0.95f, 0.96f, 0.98f}, 100.0f, false, false},
    {"ice", 917.0f, 0.05f, 0.1f, {0.7f, 0.85f, 0.95f}, 400.0f, true, false},
    {"glass", 2500.0f, 0.5f, 0.3f, {0.8f, 0.9f, 0.92f}, 200.0f, true, false},
    {"wood", 700.0f, 0.6f, 0.3f, {0.55f, 0.38f, 0.2f}, 1500.0f, false, false},
    {"metal", 7800.0f, 0.4f, 0.2f, {0.6f, 0.62f, 0.65f}, 20000.0f, false, false},
    {"concrete", 2400.0f, 0.8f, 0.1f, {0.62f, 0.62f, 0.6f}, 3000.0f, true, false},
    {"brick", 1900.0f, 0.75f, 0.1f, {0.6f, 0.27f, 0.2f}, 2000.0f, true, false},
};
#define BUILTIN_COUNT ((int)(sizeof builtins / sizeof builtins[0]))

static q_material table[Q_MATERIAL_MAX];
static int count;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void init_table(void)
{
    memcpy(table, builtins, sizeof builtins);
    count = BUILTIN_COUNT;
}

q_material q_default_material(void)
{
    return (q_material){"", 1000.0f, 0.6f, 0.1f, {0.5f, 0.5f, 0.5f}, 1000.0f, false, false};
}

int q_material_count(void)
{
    pthread_once(&once, init_table);
    return count;
}

const q_material *q_material_get(int id)
{
    pthread_once(&once, init_table);
    return id >= 0 && id < count ? &table[id] : NULL;
}

int q_material_find(const char *name)
{
    pthread_once(&once, init_table);
    for (int i = 0; i < count; i++)
        if (strcmp(table[i].name, name) == 0)
            return i;
    return -1;
}

static bool in01(float v) { return v >= 0.0f && v <= 1.0f; }

int q_material_define(const q_material *def, char *err, size_t errlen)
{
    pthread_once(&once, init_table);
    size_t len = strnlen(def->name, sizeof def->name);
    if (len == 0 || len > Q_MATERIAL_NAME_MAX) {
        snprintf(err, errlen, "name must be 1 to %d characters", Q_MATERIAL_NAME_MAX);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char c = def->name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-')) {
            snprintf(err, errlen, "name '%s' may hold only letters, digits, '_' and '-'", def->name);
            return -1;
        }
    }
    if (!(isfinite(def->density) && def->density > 0)) {
        snprintf(err, errlen, "density must be > 0, got %g", (double)def->density);
        return -1;
    }
    if (!(isfinite(def->friction) && def->friction >= 0)) {
        snprintf(err, errlen, "friction must be >= 0, got %g", (double)def->friction);
        return -1;
    }
    if (!in01(def->restitution)) {
        snprintf(err, errlen, "restitution must be in 0..1, got %g", (double)def->restitution);
        return -1;
    }
    if (!(in01(def->color[0]) && in01(def->color[1]) && in01(def->color[2]))) {
        snprintf(err, errlen, "color components must be in 0..1");
        return -1;
    }
    if (!(isfinite(def->strength) && def->strength > 0)) {
        snprintf(err, errlen, "strength must be > 0, got %g", (double)def->strength);
        return -1;
    }
    pthread_mutex_lock(&lock);
    int id = -1;
    for (int i = 0; i < count; i++)
        if (strcmp(table[i].name, def->name) == 0)
            id = i;
    if (id >= 0 && id < BUILTIN_COUNT) {
        pthread_mutex_unlock(&lock);
        snprintf(err, errlen, "'%s' is a built-in material and cannot be redefined", def->name);
        return -1;
    }
    if (id < 0) {
        if (count == Q_MATERIAL_MAX) {
            pthread_mutex_unlock(&lock);
            snprintf(err, errlen, "too many materials (at most %d)", Q_MATERIAL_MAX - 1);
            return -1;
        }
        id = count++;
    }
    table[id] = *def;
    table[id].name[len] = '\0';
    pthread_mutex_unlock(&lock);
    return id;
}
