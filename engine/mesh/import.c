/* Mesh import through assimp (see import.h). */
#include "mesh/import.h"

#include "core/alloc.h"
#include "core/hashmap.h"
#include "geom/quickhull.h"

#include <assimp/cimport.h>
#include <assimp/config.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define NONE UINT32_MAX
#define MAX_COORDINATE 1e30
#define MAX_NODE_DEPTH 256

q_import_def q_default_import_def(void)
{
    return (q_import_def){.merge = 0, .max_file_bytes = 0, .max_vertices = 0};
}

static q_status fail(char *err, size_t errlen, q_status st, const char *fmt, const char *path, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, path, what);
    return st;
}

static bool supported_extension(const char *path, const char **ext)
{
    static const char *const known[] = {".obj", ".off", ".stl", ".ply", ".gltf", ".glb"};
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    *ext = dot ? dot : "";
    for (size_t i = 0; dot && i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(dot, known[i]) == 0)
            return true;
    return false;
}

/* assimp skips OBJ faces with fewer than three vertices; a file that has one
 * is malformed, so it is refused here (reads at most max bytes). Returns the
 * 1-based line of the first such face, 0 if none, -1 when unreadable. */
static long obj_short_face(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    long no = 0, bad = 0;
    bool continued = false; /* inside an over-long line */
    while (!bad && fgets(line, sizeof line, f)) {
        bool whole = strchr(line, '\n') != NULL || feof(f);
        if (!continued) {
            no++;
            const char *p = line;
            while (*p == ' ' || *p == '\t')
                p++;
            if (p[0] == 'f' && (p[1] == ' ' || p[1] == '\t' || p[1] == '\n' || p[1] == '\r' || p[1] == 0) && whole) {
                int refs = 0;
                for (p++; *p && *p != '#';) {
                    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                        p++;
                    if (!*p || *p == '#')
                        break;
                    refs++;
                    while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
                        p++;
                }
                if (refs < 3)
                    bad = no;
            }
        }
        continued = !whole;
    }
    fclose(f);
    return bad;
}

/* What assimp must not be handed. When the loader an extension selects
 * rejects a file, assimp tries every loader that recognises the content,
 * and a loader that believes a header's counts can reserve gigabytes (an OFF
 * header claiming 3e11 faces, read through a .gltf name, takes 17 GB). So:
 * .glb starts with "glTF" and its header and chunks fit in the file, .gltf
 * with '{', .ply with "ply", and an OFF or PLY header may not declare more
 * elements than the file has bytes. Returns NULL when fine, else the
 * reason. */
/* ---- glTF accessor bounds (assimp 5.2.5 reads past a buffer view whose
 * accessor runs beyond it: a heap overflow found by fuzz/mesh_import, kept
 * in spec/regress/mesh_import). A small JSON walk reads the byte ranges of
 * buffers, buffer views and accessors; a file whose JSON it cannot follow is
 * left to assimp. */

typedef struct json {
    const char *p, *end;
    int depth;
    bool bad;
} json;

static void js_ws(json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
        j->p++;
}

static bool js_eat(json *j, char c)
{
    js_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* A string; *s and *n give its raw bytes (escapes kept). */
static bool js_string(json *j, const char **s, size_t *n)
{
    if (!js_eat(j, '"'))
        return j->bad = true, false;
    const char *start = j->p;
    while (j->p < j->end && *j->p != '"')
        j->p += *j->p == '\\' ? 2 : 1;
    if (j->p >= j->end)
        return j->bad = true, false;
    *s = start;
    *n = (size_t)(j->p - start);
    j->p++;
    return true;
}

static void js_skip(json *j);

/* Calls f(j, key, key_len, ctx) for each member of an object. */
static void js_object(json *j, void (*f)(json *, const char *, size_t, void *), void *ctx)
{
    if (!js_eat(j, '{') || ++j->depth > 64) {
        j->bad = true;
        return;
    }
    if (!js_eat(j, '}')) {
        do {
            const char *k;
            size_t n;
            if (!js_string(j, &k, &n) || !js_eat(j, ':')) {
                j->bad = true;
                return;
            }
            if (f)
                f(j, k, n, ctx);
            else
                js_skip(j);
            if (j->bad)
                return;
        } while (js_eat(j, ','));
        if (!js_eat(j, '}'))
            j->bad = true;
    }
    j->depth--;
}

/* Calls each(j, ctx) for each element of an array. */
static void js_array(json *j, void (*each)(json *, void *), void *ctx)
{
    if (!js_eat(j, '[') || ++j->depth > 64) {
        j->bad = true;
        return;
    }
    if (!js_eat(j, ']')) {
        do
            each(j, ctx);
        while (!j->bad && js_eat(j, ','));
        if (!js_eat(j, ']'))
            j->bad = true;
    }
    j->depth--;
}

static void skip_element(json *j, void *ctx)
{
    (void)ctx;
    js_skip(j);
}

static void js_skip(json *j)
{
    js_ws(j);
    if (j->p >= j->end) {
        j->bad = true;
    } else if (*j->p == '{') {
        js_object(j, NULL, NULL);
    } else if (*j->p == '[') {
        js_array(j, skip_element, NULL);
    } else if (*j->p == '"') {
        const char *s;
        size_t n;
        js_string(j, &s, &n);
    } else {
        const char *start = j->p;
        while (j->p < j->end && !strchr(",]} \t\r\n", *j->p))
            j->p++;
        if (j->p == start)
            j->bad = true;
    }
}

static double js_number(json *j)
{
    js_ws(j);
    char buf[40];
    size_t n = 0;
    while (j->p < j->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", *j->p))
        buf[n++] = *j->p++;
    buf[n] = 0;
    char *e;
    double v = strtod(buf, &e);
    if (n == 0 || *e)
        j->bad = true;
    return v;
}

static bool js_key(const char *k, size_t n, const char *name)
{
    return n == strlen(name) && memcmp(k, name, n) == 0;
}

#define GLTF_MAX_ITEMS 4096
typedef struct gltf_item {
    double a, offset, length, stride, count, comp, type; /* a: buffer or bufferView */
} gltf_item;
typedef struct gltf_list {
    gltf_item *items;
    size_t n;
} gltf_list;
typedef struct gltf_info {
    gltf_list buffers, views, accessors;
    bool indexed_line_loop; /* a primitive of mode 2 with indices */
} gltf_info;

static void gltf_field(json *j, const char *k, size_t n, void *ctx)
{
    gltf_item *it = ctx;
    if (js_key(k, n, "buffer") || js_key(k, n, "bufferView"))
        it->a = js_number(j);
    else if (js_key(k, n, "byteOffset"))
        it->offset = js_number(j);
    else if (js_key(k, n, "byteLength"))
        it->length = js_number(j);
    else if (js_key(k, n, "byteStride"))
        it->stride = js_number(j);
    else if (js_key(k, n, "count"))
        it->count = js_number(j);
    else if (js_key(k, n, "componentType"))
        it->comp = js_number(j);
    else if (js_key(k, n, "type")) {
        const char *s;
        size_t len;
        static const char *const types[] = {"SCALAR", "VEC2", "VEC3", "VEC4", "MAT2", "MAT3", "MAT4"};
        static const int comps[] = {1, 2, 3, 4, 4, 9, 16};
        if (js_string(j, &s, &len))
            for (int i = 0; i < 7; i++)
                if (js_key(s, len, types[i]))
                    it->type = comps[i];
    } else {
        js_skip(j);
    }
}

static void gltf_list_item(json *j, void *ctx)
{
    gltf_list *list = ctx;
    if (list->n >= GLTF_MAX_ITEMS) {
        js_skip(j);
        return;
    }
    gltf_item *it = &list->items[list->n++];
    *it = (gltf_item){.a = -1};
    js_object(j, gltf_field, it);
}

/* Mesh primitives: assimp 5.2.5 dereferences NULL on a LINE_LOOP (mode 2)
 * primitive with indices, a valid glTF (found by fuzz/mesh_import, kept in
 * spec/regress/mesh_import). Only triangles are imported, so such a file is
 * refused before assimp sees it. */
typedef struct gltf_prim {
    double mode;
    bool indexed;
} gltf_prim;

static void gltf_prim_field(json *j, const char *k, size_t n, void *ctx)
{
    gltf_prim *pr = ctx;
    if (js_key(k, n, "mode"))
        pr->mode = js_number(j);
    else {
        pr->indexed |= js_key(k, n, "indices");
        js_skip(j);
    }
}

static void gltf_primitive(json *j, void *ctx)
{
    gltf_prim pr = {4, false}; /* mode 4, triangles, unless it says otherwise */
    js_object(j, gltf_prim_field, &pr);
    ((gltf_info *)ctx)->indexed_line_loop |= pr.mode == 2 && pr.indexed;
}

static void gltf_mesh_field(json *j, const char *k, size_t n, void *ctx)
{
    if (js_key(k, n, "primitives"))
        js_array(j, gltf_primitive, ctx);
    else
        js_skip(j);
}

static void gltf_mesh(json *j, void *ctx) { js_object(j, gltf_mesh_field, ctx); }

static void gltf_top(json *j, const char *k, size_t n, void *ctx)
{
    gltf_info *g = ctx;
    if (js_key(k, n, "buffers"))
        js_array(j, gltf_list_item, &g->buffers);
    else if (js_key(k, n, "bufferViews"))
        js_array(j, gltf_list_item, &g->views);
    else if (js_key(k, n, "accessors"))
        js_array(j, gltf_list_item, &g->accessors);
    else if (js_key(k, n, "meshes"))
        js_array(j, gltf_mesh, g);
    else
        js_skip(j);
}

/* Whether [offset, offset + length) fits in size, all finite and >= 0. */
static bool range_ok(double offset, double length, double size)
{
    return offset >= 0 && length >= 0 && offset <= 1e15 && length <= 1e15 && offset + length <= size;
}

/* NULL when the JSON's accessors and views stay inside their views and
 * buffers (or when the JSON cannot be followed); otherwise the reason. */
static const char *gltf_bad_ranges(const char *text, size_t size)
{
    gltf_item *items = malloc(3 * GLTF_MAX_ITEMS * sizeof *items);
    if (!items)
        return NULL;
    gltf_info g = {{items, 0}, {items + GLTF_MAX_ITEMS, 0}, {items + 2 * GLTF_MAX_ITEMS, 0}, false};
    json j = {text, text + size, 0, false};
    js_object(&j, gltf_top, &g);
    const char *why = NULL;
    for (size_t i = 0; !j.bad && !why && i < g.views.n; i++) {
        const gltf_item *v = &g.views.items[i];
        /* The index is cast only once it is known to be in range (a
         * negative, huge or NaN double has no size_t value). */
        if (!(v->a >= 0 && v->a < (double)g.buffers.n) || v->a != (double)(size_t)v->a)
            why = "a glTF buffer view names a missing buffer";
        else if (!range_ok(v->offset > 0 ? v->offset : 0, v->length, g.buffers.items[(size_t)v->a].length))
            why = "a glTF buffer view runs past its buffer";
    }
    for (size_t i = 0; !j.bad && !why && i < g.accessors.n; i++) {
        const gltf_item *a = &g.accessors.items[i];
        if (a->a < 0)
            continue; /* no buffer view: zeros (or sparse) */
        if (!(a->a < (double)g.views.n) || a->a != (double)(size_t)a->a) { /* cast once in range, as above */
            why = "a glTF accessor names a missing buffer view";
            break;
        }
        size_t vi = (size_t)a->a;
        const gltf_item *v = &g.views.items[vi];
        double comp = a->comp == 5120 || a->comp == 5121 ? 1 : a->comp == 5122 || a->comp == 5123 ? 2 : 4;
        double elem = comp * (a->type > 0 ? a->type : 1);
        double stride = v->stride > 0 ? v->stride : elem;
        double count = a->count > 0 ? a->count : 0;
        if (count > 0 && !range_ok(a->offset > 0 ? a->offset : 0, (count - 1) * stride + elem, v->length))
            why = "a glTF accessor runs past its buffer view";
    }
    if (!j.bad && !why && g.indexed_line_loop)
        why = "a glTF line-loop primitive with indices (assimp 5.2.5 crashes on it; only triangles are imported)";
    free(items);
    return why;
}

/* The JSON of a .gltf, or of a .glb's first chunk, checked as above. */
static const char *gltf_check_file(const char *path, bool binary, uint64_t size)
{
    if (size > ((uint64_t)64 << 20))
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot read the file";
    char *data = malloc((size_t)size + 1);
    size_t n = data ? fread(data, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!data)
        return NULL;
    const char *text = data, *why = NULL;
    size_t len = n;
    if (binary) {
        /* header (magic, version, length), then chunk 0: length, "JSON" */
        uint32_t chunk = 0;
        if (n >= 20 && memcmp(data + 16, "JSON", 4) == 0) {
            memcpy(&chunk, data + 12, 4);
            text = data + 20;
            len = chunk <= n - 20 ? chunk : n - 20;
        } else {
            len = 0;
        }
    }
    if (len > 0)
        why = gltf_bad_ranges(text, len);
    free(data);
    return why;
}

/* ---- PLY faces (assimp 5.2.5 aborts on an ai_assert in its triangulation
 * when a face lists fewer than 3 vertices, e.g. a truncated binary file read
 * as zeros: found by fuzz/mesh_import, kept in spec/regress/mesh_import). The
 * body is walked by the header's layout; a face list shorter than 3 or a body
 * that ends early is refused. Files over 64 MiB are left to assimp. */

typedef struct ply_prop {
    int list_size; /* bytes of the list count, 0 for a scalar */
    int size;      /* bytes of the value or of each list item */
} ply_prop;

typedef struct ply_elem {
    bool face;
    unsigned long long count;
    int nprops;
    ply_prop props[32];
} ply_elem;

static int ply_type_size(const char *t)
{
    if (!strcmp(t, "char") || !strcmp(t, "uchar") || !strcmp(t, "int8") || !strcmp(t, "uint8"))
        return 1;
    if (!strcmp(t, "short") || !strcmp(t, "ushort") || !strcmp(t, "int16") || !strcmp(t, "uint16"))
        return 2;
    if (!strcmp(t, "double") || !strcmp(t, "float64"))
        return 8;
    return 4;
}

static const char *ply_bad_faces(const char *path, uint64_t size)
{
    if (size > ((uint64_t)64 << 20))
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot read the file";
    unsigned char *data = malloc((size_t)size + 1);
    size_t n = data ? fread(data, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!data)
        return NULL;
    data[n] = 0;
    const char *why = NULL;
    ply_elem elems[16];
    int ne = 0, format = 0; /* 0 ascii, 1 little, 2 big endian */
    const char *text = (const char *)data;
    const char *body = strstr(text, "end_header");
    if (!body || (size_t)(body - text) > n) {
        free(data);
        return NULL; /* bad_header has had its say */
    }
    for (const char *line = text; line < body; line = strchr(line, '\n') + 1) {
        char one[128], w1[32], w2[32], w3[32], w4[32];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(line, "\r\n"), line);
        if (sscanf(one, "format %31s", w1) == 1) {
            format = !strcmp(w1, "binary_little_endian") ? 1 : !strcmp(w1, "binary_big_endian") ? 2 : 0;
        } else if (sscanf(one, "element %31s %31s", w1, w2) == 2) {
            if (ne == 16) {
                free(data);
                return NULL;
            }
            elems[ne] = (ply_elem){.face = !strcmp(w1, "face"), .count = strtoull(w2, NULL, 10)};
            ne++;
        } else if (ne > 0 && sscanf(one, "property %31s %31s %31s %31s", w1, w2, w3, w4) >= 2) {
            ply_elem *e = &elems[ne - 1];
            if (e->nprops == 32) {
                free(data);
                return NULL;
            }
            bool list = !strcmp(w1, "list");
            e->props[e->nprops++] = (ply_prop){list ? ply_type_size(w2) : 0, ply_type_size(list ? w3 : w1)};
        }
        if (!strchr(line, '\n'))
            break;
    }
    const char *nl = strchr(body, '\n');
    size_t pos = nl ? (size_t)(nl + 1 - text) : n;
    for (int e = 0; e < ne && !why; e++) {
        for (unsigned long long i = 0; i < elems[e].count && !why; i++) {
            for (int k = 0; k < elems[e].nprops && !why; k++) {
                const ply_prop *pr = &elems[e].props[k];
                unsigned long long items = 1;
                if (format == 0) {
                    char *end;
                    while (pos < n && strchr(" \t\r\n", data[pos]))
                        pos++;
                    if (pos >= n) {
                        why = "the PLY body ends before its elements do";
                        break;
                    }
                    double v = strtod(text + pos, &end);
                    if (end == text + pos) {
                        why = "the PLY body holds something that is not a number";
                        break;
                    }
                    pos = (size_t)(end - text);
                    if (!pr->list_size)
                        continue;
                    items = v >= 0 && v < 1e12 ? (unsigned long long)v : 0;
                    if (elems[e].face && items < 3)
                        why = "a PLY face with fewer than 3 vertices";
                    for (unsigned long long t = 0; t < items && !why; t++) {
                        while (pos < n && strchr(" \t\r\n", data[pos]))
                            pos++;
                        strtod(text + pos, &end);
                        if (pos >= n || end == text + pos)
                            why = "the PLY body ends before its elements do";
                        pos = (size_t)(end - text);
                    }
                } else {
                    if (pr->list_size) {
                        if (n - pos < (size_t)pr->list_size) {
                            why = "the PLY body ends before its elements do";
                            break;
                        }
                        items = 0;
                        for (int b = 0; b < pr->list_size; b++) {
                            int at = format == 1 ? pr->list_size - 1 - b : b;
                            items = items << 8 | data[pos + at];
                        }
                        pos += (size_t)pr->list_size;
                        if (elems[e].face && items < 3) {
                            why = "a PLY face with fewer than 3 vertices";
                            break;
                        }
                    }
                    if (items > (n - pos) / (size_t)pr->size) {
                        why = "the PLY body ends before its elements do";
                        break;
                    }
                    pos += (size_t)(items * (unsigned long long)pr->size);
                }
            }
        }
    }
    free(data);
    return why;
}

static bool ply_type(const char *t)
{
    static const char *const types[] = {"char", "uchar", "short", "ushort", "int", "uint", "float", "double",
                                        "int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i]) == 0)
            return true;
    return false;
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* A .glb's header and chunks must fit in the file: assimp 5.2.5 allocates
 * what a glTF 1 binary header's content length says (a 76-byte file
 * claiming 2 GiB ran the fuzzer out of memory: spec/regress/mesh_import).
 * glTF 2: magic, version, length, then chunks of (length, type, data);
 * glTF 1: magic, version, length, content length, content format. */
#define GLB_MAX_CHUNKS 1024
static const char *glb_bad_layout(const char *path, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot read the file";
    unsigned char h[20] = {0};
    size_t n = fread(h, 1, sizeof h, f);
    uint32_t version = le32(h + 4), length = le32(h + 8);
    const char *why = NULL;
    if (n < 12 || memcmp(h, "glTF", 4) != 0)
        why = "not a binary glTF file (no 'glTF' magic)";
    else if (length > size)
        why = "the .glb header declares more bytes than the file holds";
    else if (version == 1) {
        if (n < 20 || length < 20 || le32(h + 12) > length - 20)
            why = "the .glb (glTF 1) content runs past the declared length";
    } else if (version == 2) {
        uint32_t at = 12, chunks = 0;
        if (length < 12)
            why = "the .glb header declares fewer bytes than the header itself";
        while (!why && at < length) {
            unsigned char c[8];
            if (++chunks > GLB_MAX_CHUNKS)
                why = "the .glb has too many chunks";
            else if (length - at < 8 || fseek(f, (long)at, SEEK_SET) != 0 || fread(c, 1, 8, f) != 8)
                why = "a .glb chunk header is cut short";
            else if (le32(c) > length - at - 8)
                why = "a .glb chunk runs past the declared length";
            else
                at += 8 + le32(c);
        }
    } else {
        why = "unsupported .glb version (1 and 2 are read)";
    }
    fclose(f);
    return why;
}

static const char *bad_header(const char *path, const char *ext, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot read the file";
    char buf[4097];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = buf;
    if (n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
        p += 3;
    if (strcasecmp(ext, ".glb") == 0)
        return glb_bad_layout(path, size);
    if (strcasecmp(ext, ".gltf") == 0) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        return *p == '{' ? NULL : "not a glTF file (no JSON object)";
    }
    if (strcasecmp(ext, ".ply") == 0) {
        if (strncmp(p, "ply", 3) != 0 || (p[3] != '\n' && p[3] != '\r'))
            return "not a PLY file (no 'ply' magic)";
        /* assimp's PLY reader can loop forever on a header without its end
         * and abort on a vertex without x, y, z or a property type it does
         * not know (found by fuzz/mesh_import; spec/regress/mesh_import), so
         * the header must be well formed and end within the first 4 KiB. */
        static const char *const words[] = {"format", "comment", "obj_info", "element", "property"};
        bool ended = false, format = false, in_vertex = false, vertex_seen = false;
        int xyz = 0;
        for (const char *line = strchr(p, '\n'); line && !ended; line = strchr(line, '\n')) {
            line++;
            size_t len = strcspn(line, " \t\r\n");
            if (len == 0 && (*line == '\r' || *line == '\n'))
                continue;
            if (len == 10 && strncmp(line, "end_header", 10) == 0) {
                ended = true;
                break;
            }
            bool known = false;
            for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                if (len == strlen(words[i]) && strncmp(line, words[i], len) == 0)
                    known = true;
            if (!strchr(line, '\n'))
                break; /* the header goes on past what was read */
            if (!known)
                continue; /* assimp skips other lines (Blender wrote some) */
            format = format || strncmp(line, "format", 6) == 0;
            char one[128], w1[16], w2[16], w3[16], w4[16];
            snprintf(one, sizeof one, "%.*s", (int)strcspn(line, "\r\n"), line);
            if (strncmp(line, "element", 7) == 0) {
                in_vertex = sscanf(one, "element %15s", w1) == 1 && strcmp(w1, "vertex") == 0;
                vertex_seen = vertex_seen || in_vertex;
            } else if (strncmp(line, "property", 8) == 0) {
                /* assimp aborts on a vertex without x, y, z or a type it does not know */
                int nw = sscanf(one, "property %15s %15s %15s %15s", w1, w2, w3, w4);
                bool list = nw >= 1 && strcmp(w1, "list") == 0;
                if (list ? nw != 4 || !ply_type(w2) || !ply_type(w3) : nw != 2 || !ply_type(w1))
                    return "malformed PLY header (a property with an unknown type)";
                if (in_vertex && !list && w2[0] >= 'x' && w2[0] <= 'z' && w2[1] == 0)
                    xyz |= 1 << (w2[0] - 'x');
            }
        }
        if (!ended || !format)
            return "malformed PLY header (no format line or no end_header in the first 4 KiB)";
        if (!vertex_seen || xyz != 7)
            return "malformed PLY header (no vertex element with x, y and z)";
        for (const char *q = strstr(p, "element"); q; q = strstr(q + 7, "element")) {
            unsigned long long count = 0;
            char name[64];
            if (sscanf(q, "element %63s %llu", name, &count) == 2 && count > size)
                return "the header declares more elements than the file can hold";
        }
        return NULL;
    }
    if (strcasecmp(ext, ".off") == 0) {
        /* [header word] vertex-count face-count [edge-count], '#' comments */
        unsigned long long counts[2];
        int got = 0;
        while (*p && got < 2) {
            if (*p == '#') {
                while (*p && *p != '\n')
                    p++;
                continue;
            }
            if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
                p++;
                continue;
            }
            if (*p >= '0' && *p <= '9') {
                char *end;
                counts[got++] = strtoull(p, &end, 10);
                p = end;
            } else {
                while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
                    p++;
            }
        }
        if (got == 2 && (counts[0] > size || counts[1] > size))
            return "the header declares more vertices or faces than the file can hold";
    }
    return NULL;
}

static void mat_mul(const struct aiMatrix4x4 *a, const struct aiMatrix4x4 *b, struct aiMatrix4x4 *r)
{
    const float *A = &a->a1, *B = &b->a1;
    float R[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float sum = 0;
            for (int k = 0; k < 4; k++)
                sum += A[4 * i + k] * B[4 * k + j];
            R[4 * i + j] = sum;
        }
    memcpy(&r->a1, R, sizeof R);
}

typedef struct node_frame {
    const struct aiNode *node;
    struct aiMatrix4x4 m; /* node to scene */
    int depth;
} node_frame;

typedef struct gather {
    const struct aiScene *scene;
    size_t nv, nt; /* counted or written so far */
    size_t max;    /* cap on vertices and triangles */
    double *pos;   /* NULL while counting */
    uint32_t *tri;
    const char *why; /* message for a refusal */
    q_status status;
} gather;

/* One pass over the node tree: counts (g->pos NULL) or writes vertices and
 * triangles. False on a refusal (g->why, g->status). */
static bool walk(gather *g, node_frame *stack)
{
    const struct aiScene *sc = g->scene;
    size_t sp = 0;
    struct aiMatrix4x4 id = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    stack[sp].node = sc->mRootNode;
    mat_mul(&id, &sc->mRootNode->mTransformation, &stack[sp].m);
    stack[sp++].depth = 0;
    while (sp) {
        node_frame fr = stack[--sp];
        const struct aiNode *nd = fr.node;
        for (unsigned i = 0; i < nd->mNumMeshes; i++) {
            if (nd->mMeshes[i] >= sc->mNumMeshes)
                continue;
            const struct aiMesh *me = sc->mMeshes[nd->mMeshes[i]];
            if (!(me->mPrimitiveTypes & aiPrimitiveType_TRIANGLE) || !me->mVertices)
                continue;
            size_t tris = 0;
            for (unsigned f = 0; f < me->mNumFaces; f++)
                tris += me->mFaces[f].mNumIndices == 3;
            if (tris == 0)
                continue;
            if (g->nv + me->mNumVertices > g->max || g->nt + tris > g->max) {
                g->why = "too many vertices or triangles";
                g->status = Q_ERR_TOO_LARGE;
                return false;
            }
            if (g->pos) {
                const float *M = &fr.m.a1;
                for (unsigned v = 0; v < me->mNumVertices; v++) {
                    const struct aiVector3D *p = &me->mVertices[v];
                    double in[3] = {p->x, p->y, p->z};
                    for (int a = 0; a < 3; a++) {
                        double x = (double)M[4 * a] * in[0] + (double)M[4 * a + 1] * in[1] +
                                   (double)M[4 * a + 2] * in[2] + (double)M[4 * a + 3];
                        if (!isfinite(in[a]) || !isfinite(x) || fabs(x) > MAX_COORDINATE) {
                            g->why = "a vertex coordinate is not finite (or beyond 1e30)";
                            g->status = Q_ERR_FORMAT;
                            return false;
                        }
                        g->pos[3 * (g->nv + v) + a] = x;
                    }
                }
                for (unsigned f = 0; f < me->mNumFaces; f++) {
                    const struct aiFace *fc = &me->mFaces[f];
                    if (fc->mNumIndices != 3)
                        continue;
                    for (int k = 0; k < 3; k++) {
                        if (fc->mIndices[k] >= me->mNumVertices) {
                            g->why = "a face index is out of range";
                            g->status = Q_ERR_FORMAT;
                            return false;
                        }
                        g->tri[3 * g->nt + k] = (uint32_t)(g->nv + fc->mIndices[k]);
                    }
                    g->nt++;
                }
            } else {
                g->nt += tris;
            }
            g->nv += me->mNumVertices;
        }
        for (unsigned c = 0; c < nd->mNumChildren; c++) {
            if (fr.depth + 1 >= MAX_NODE_DEPTH) {
                g->why = "the node hierarchy is too deep";
                g->status = Q_ERR_FORMAT;
                return false;
            }
            /* The stack holds at most one frame per child of each node on
             * the current path; depth is capped, children are not. */
            stack[sp].node = nd->mChildren[c];
            mat_mul(&fr.m, &nd->mChildren[c]->mTransformation, &stack[sp].m);
            stack[sp++].depth = fr.depth + 1;
        }
    }
    return true;
}

/* Size of the traversal stack: every node can be pushed once per visit of
 * its parent; the scene's node count bounds a tree. */
static size_t count_nodes(const struct aiNode *nd, int depth)
{
    if (depth >= MAX_NODE_DEPTH)
        return 1;
    size_t n = 1;
    for (unsigned c = 0; c < nd->mNumChildren; c++)
        n += count_nodes(nd->mChildren[c], depth + 1);
    return n;
}

static uint64_t cell_key(const int64_t k[3])
{
    uint64_t h = (uint64_t)k[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)k[1] * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)k[2] * 0x165667B19E3779F9ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

/* Greedy weld: vertex i maps to the first earlier kept vertex within s, or
 * is kept. remap gets the new index of every vertex; kept vertices are
 * compacted to the front of pos. Cells of size 2s: a ball of radius s meets
 * the 8 nearest. Returns the kept count, 0 when out of memory. */
static size_t weld(double *pos, size_t n, double s, uint32_t *remap)
{
    uint32_t *chain = q_alloc(n * sizeof(uint32_t));
    q_hashmap cells = {0};
    if (!chain)
        return 0;
    double lo[3] = {pos[0], pos[1], pos[2]};
    for (size_t i = 1; i < n; i++)
        for (int a = 0; a < 3; a++)
            lo[a] = fmin(lo[a], pos[3 * i + a]);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        double p[3] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
        int64_t base[3];
        int dir[3];
        for (int a = 0; a < 3; a++) {
            double q = (p[a] - lo[a]) / (2 * s), f = floor(q);
            base[a] = (int64_t)f;
            dir[a] = q - f < 0.5 ? -1 : 1;
        }
        uint32_t found = NONE;
        for (int corner = 0; corner < 8 && found == NONE; corner++) {
            int64_t k[3];
            for (int a = 0; a < 3; a++)
                k[a] = base[a] + ((corner >> a) & 1 ? dir[a] : 0);
            for (uint32_t r = q_hashmap_get(&cells, cell_key(k)); r != NONE && found == NONE; r = chain[r]) {
                double dx = pos[3 * r] - p[0], dy = pos[3 * r + 1] - p[1], dz = pos[3 * r + 2] - p[2];
                if (dx * dx + dy * dy + dz * dz <= s * s)
                    found = r;
            }
        }
        if (found != NONE) {
            remap[i] = found;
            continue;
        }
        memcpy(pos + 3 * m, p, sizeof p);
        remap[i] = (uint32_t)m;
        uint64_t key = cell_key(base);
        chain[m] = q_hashmap_get(&cells, key);
        if (!q_hashmap_set(&cells, key, (uint32_t)m)) {
            m = 0;
            break;
        }
        m++;
    }
    q_hashmap_free(&cells);
    q_free(chain, n * sizeof(uint32_t));
    return m;
}

q_mesh *q_mesh_import(const char *path, const q_import_def *def, q_status *status, char *err, size_t errlen)
{
    q_import_def d = def ? *def : q_default_import_def();
    size_t max_bytes = d.max_file_bytes ? d.max_file_bytes : Q_IMPORT_MAX_FILE_BYTES;
    size_t max_vertices = d.max_vertices ? d.max_vertices : Q_IMPORT_MAX_VERTICES;
    if (max_vertices > Q_IMPORT_MAX_VERTICES)
        max_vertices = Q_IMPORT_MAX_VERTICES;
    q_status st = Q_OK;
    const char *ext;
    const struct aiScene *scene = NULL;
    struct aiPropertyStore *props = NULL;
    node_frame *stack = NULL;
    size_t stack_n = 0, nv = 0, nt = 0;
    double *pos = NULL;
    uint32_t *tri = NULL, *remap = NULL;
    q_mesh *m = NULL;
    struct stat sb;

    if (!(d.merge >= 0) || !isfinite(d.merge)) {
        st = fail(err, errlen, Q_ERR_ARGUMENT, "%s: merge distance must be finite and >= 0%s", path, "");
        goto done;
    }
    if (!supported_extension(path, &ext)) {
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: unsupported format '%s' (supported: .obj .off .stl .ply .gltf .glb)",
                  path, ext);
        goto done;
    }
    if (stat(path, &sb) != 0) {
        st = fail(err, errlen, Q_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = fail(err, errlen, Q_ERR_IO, "cannot open '%s': %s", path, "not a regular file");
        goto done;
    }
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        st = fail(err, errlen, Q_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        goto done;
    }
    fclose(probe);
    if (sb.st_size == 0) {
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, "empty file");
        goto done;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        char what[96];
        snprintf(what, sizeof what, "file is %lld bytes, over the limit of %zu", (long long)sb.st_size, max_bytes);
        st = fail(err, errlen, Q_ERR_TOO_LARGE, "%s: %s", path, what);
        goto done;
    }
    const char *why = bad_header(path, ext, (uint64_t)sb.st_size);
    if (!why && (strcasecmp(ext, ".gltf") == 0 || strcasecmp(ext, ".glb") == 0))
        why = gltf_check_file(path, strcasecmp(ext, ".glb") == 0, (uint64_t)sb.st_size);
    if (!why && strcasecmp(ext, ".ply") == 0)
        why = ply_bad_faces(path, (uint64_t)sb.st_size);
    if (why) {
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, why);
        goto done;
    }
    if (strcasecmp(ext, ".obj") == 0) {
        long line = obj_short_face(path);
        if (line != 0) {
            char what[96];
            snprintf(what, sizeof what,
                     line < 0 ? "cannot read the file" : "line %ld: a face with fewer than 3 vertices", line);
            st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, what);
            goto done;
        }
    }

    /* assimp's default logger is a null logger unless someone attached a
     * stream; make sure nothing goes to stderr. No aiProcess_JoinIdentical-
     * Vertices: it takes a NaN vertex for its neighbour (NaN compares
     * unequal to everything, so its sort puts it anywhere) and the file's
     * NaN would vanish instead of being refused; the weld below does the
     * joining. Points and lines are removed by the type sort. */
    aiDetachAllLogStreams();
    props = aiCreatePropertyStore();
    aiSetImportPropertyInteger(props, AI_CONFIG_PP_SBP_REMOVE, aiPrimitiveType_POINT | aiPrimitiveType_LINE);
    scene = aiImportFileExWithProperties(
        path, aiProcess_Triangulate | aiProcess_SortByPType | aiProcess_ValidateDataStructure, NULL, props);
    if (!scene || !scene->mRootNode) {
        const char *msg = aiGetErrorString();
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, msg && *msg ? msg : "assimp could not read it");
        goto done;
    }

    stack_n = count_nodes(scene->mRootNode, 0) + 1;
    stack = q_alloc(stack_n * sizeof *stack);
    if (!stack) {
        st = fail(err, errlen, Q_ERR_MEMORY, "%s: %s", path, "out of memory");
        goto done;
    }
    gather g = {.scene = scene, .max = max_vertices};
    if (!walk(&g, stack)) {
        st = fail(err, errlen, g.status, "%s: %s", path, g.why);
        goto done;
    }
    if (g.nt == 0) {
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, "no triangles");
        goto done;
    }
    nv = g.nv;
    nt = g.nt;
    pos = q_alloc(3 * nv * sizeof(double));
    tri = q_alloc(3 * nt * sizeof(uint32_t));
    remap = q_alloc(nv * sizeof(uint32_t));
    if (!pos || !tri || !remap) {
        st = fail(err, errlen, Q_ERR_MEMORY, "%s: %s", path, "out of memory");
        goto done;
    }
    g = (gather){.scene = scene, .max = max_vertices, .pos = pos, .tri = tri};
    if (!walk(&g, stack)) {
        st = fail(err, errlen, g.status, "%s: %s", path, g.why);
        goto done;
    }

    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < nv; i++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], pos[3 * i + a]);
            hi[a] = fmax(hi[a], pos[3 * i + a]);
        }
    double s = d.merge > 0 ? d.merge : q_quantization_distance(lo, hi);
    size_t kept = weld(pos, nv, s, remap);
    if (kept == 0) {
        st = fail(err, errlen, Q_ERR_MEMORY, "%s: %s", path, "out of memory");
        goto done;
    }
    size_t good = 0;
    for (size_t t = 0; t < nt; t++) {
        uint32_t a = remap[tri[3 * t]], b = remap[tri[3 * t + 1]], c = remap[tri[3 * t + 2]];
        if (a == b || b == c || c == a)
            continue;
        tri[3 * good] = a;
        tri[3 * good + 1] = b;
        tri[3 * good + 2] = c;
        good++;
    }
    if (good == 0) {
        st = fail(err, errlen, Q_ERR_FORMAT, "%s: %s", path, "no triangles with three distinct vertices");
        goto done;
    }
    m = q_mesh_create(kept, 3 * good, false, false);
    if (!m) {
        st = fail(err, errlen, Q_ERR_MEMORY, "%s: %s", path, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < 3 * kept; i++)
        m->positions[i] = (float)pos[i];
    memcpy(m->indices, tri, 3 * good * sizeof(uint32_t));

done:
    if (scene)
        aiReleaseImport(scene);
    if (props)
        aiReleasePropertyStore(props);
    q_free(stack, stack_n * sizeof *stack);
    q_free(pos, 3 * nv * sizeof(double));
    q_free(tri, 3 * nt * sizeof(uint32_t));
    q_free(remap, nv * sizeof(uint32_t));
    if (status)
        *status = st;
    return m;
}
