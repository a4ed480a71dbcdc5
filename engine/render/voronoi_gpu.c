/* Voronoi cells on the GPU: an OpenGL 4.3 compute shader running the box
 * cutting algorithm of engine/geom/voronoi.c (design note 003), one
 * workgroup per cell. The workgroup is a single invocation that keeps the
 * cell (vertices, face loops, face neighbours) in the workgroup's shared
 * memory (llvmpipe lost dynamically indexed writes to large private arrays),
 * takes neighbours from the CPU path's grid (q_voronoi_grid, built on the
 * CPU and uploaded): blocks in the order of the sorted offset table, one
 * group of equal least distance at a time with its sites cut nearest first,
 * then rings of blocks; it cuts by each bisector and stops once the next
 * block is at least twice the largest vertex distance away, as the CPU
 * path does (the note's brute force over all sites grew as n^2). The
 * shader works in cell space in single precision; the CPU reads the cells
 * back and computes volumes in double from the returned geometry.
 *
 * Installed as q_voronoi_gpu at program start (host only); it answers an
 * error unless a GL 4.3+ context is current with its functions loaded (the
 * renderer loads them when the host opens a window, offscreen included).
 */
#include "render/render_internal.h"

#include "core/alloc.h"
#include "geom/voronoi.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GV 96   /* vertices per cell */
#define GF 48   /* faces per cell */
#define GFV 384 /* face-vertex slots per cell */
#define GINTS (4 + GF + 1 + GF + GFV)

static const char *shader_src =
    "#version 430\n"
    "#define GV 96\n#define GF 48\n#define GFV 384\n"
    "#define GINTS (4 + GF + 1 + GF + GFV)\n"
    "layout(local_size_x = 1) in;\n"
    "layout(std430, binding = 0) readonly buffer Sites { vec4 sites[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Verts { vec4 overt[]; };\n"
    "layout(std430, binding = 2) writeonly buffer Ints { int oint[]; };\n"
    "layout(std430, binding = 3) readonly buffer Pts { vec4 pts[]; };\n"
    "layout(std430, binding = 4) readonly buffer Ids { int ids[]; };\n"
    "layout(std430, binding = 5) readonly buffer Start { int gstart[]; };\n"
    "layout(std430, binding = 6) readonly buffer Tab { ivec4 tab[]; };\n"
    "layout(std430, binding = 7) readonly buffer Blk { ivec4 sblk[]; };\n"
    "uniform vec3 bmin; uniform vec3 bmax; uniform int count;\n"
    "uniform vec3 gorigin; uniform float gh; uniform ivec3 gn; uniform int ntab; uniform ivec3 tabr;\n"
    "#define MAXC 64\n"
    "shared float CD[MAXC]; shared int CJ[MAXC];\n"
    "shared vec3 V[GV]; shared int nv; shared int FS[GF + 1]; shared int FV[GFV]; shared int FN[GF]; shared int nf;\n"
    "shared vec3 NV[GV]; shared int NFS[GF + 1]; shared int NFV[GFV]; shared int NFN[GF]; shared float D[GV];\n"
    "shared int RM[GV]; shared bool ON[GV];\n"
    "shared int SA[GV]; shared int SB[GV]; shared int SI[GV]; shared int ns; shared int CAP[GV]; shared float ANG[GV];\n"
    "int split(int a, int b, inout int nnv) {\n"
    "  int lo = min(a, b), hi = max(a, b);\n"
    "  for (int i = 0; i < ns; i++) if (SA[i] == lo && SB[i] == hi) return SI[i];\n"
    "  if (nnv >= GV) return -1;\n"
    "  float t = D[lo] / (D[lo] - D[hi]);\n"
    "  int id = nnv++; NV[id] = V[lo] + t * (V[hi] - V[lo]); ON[id] = true;\n"
    "  SA[ns] = lo; SB[ns] = hi; SI[ns] = id; ns++; return id;\n"
    "}\n"
    "int cut(vec3 p, float h, int nb) {\n"
    "  float eps = 1e-6 * h; bool out_ = false;\n"
    "  for (int i = 0; i < nv; i++) { float d = dot(V[i], p) - h; if (abs(d) <= eps) d = 0.0; D[i] = d; if (d > 0.0) out_ = true; }\n"
    "  if (!out_) return 0;\n"
    "  int nnv = 0;\n"
    "  for (int i = 0; i < nv; i++) { if (D[i] <= 0.0) { RM[i] = nnv; NV[nnv] = V[i]; ON[nnv] = D[i] == 0.0; nnv++; } else RM[i] = -1; }\n"
    "  ns = 0; int nnf = 0, nfv = 0;\n"
    "  for (int f = 0; f < nf; f++) {\n"
    "    int s = FS[f], n = FS[f + 1] - s, start = nfv;\n"
    "    for (int k = 0; k < n; k++) {\n"
    "      int a = FV[s + k], b = FV[s + (k + 1) % n];\n"
    "      if (nfv + 2 > GFV) return -1;\n"
    "      if (D[a] <= 0.0) NFV[nfv++] = RM[a];\n"
    "      if ((D[a] < 0.0 && D[b] > 0.0) || (D[a] > 0.0 && D[b] < 0.0)) { int id = split(a, b, nnv); if (id < 0) return -1; NFV[nfv++] = id; }\n"
    "    }\n"
    "    if (nfv - start >= 3) { if (nnf >= GF - 1) return -1; NFS[nnf] = start; NFN[nnf] = FN[f]; nnf++; } else nfv = start;\n"
    "  }\n"
    "  int ncap = 0;\n"
    "  for (int i = 0; i < nnv; i++) if (ON[i]) CAP[ncap++] = i;\n"
    "  if (ncap >= 3) {\n"
    "    vec3 nr = normalize(p);\n"
    "    vec3 u = abs(nr.x) < 0.6 ? vec3(0.0, nr.z, -nr.y) : vec3(-nr.z, 0.0, nr.x); u = normalize(u);\n"
    "    vec3 w = cross(nr, u); vec3 c = vec3(0.0);\n"
    "    for (int i = 0; i < ncap; i++) c += NV[CAP[i]];\n"
    "    c /= float(ncap);\n"
    "    for (int i = 0; i < ncap; i++) { vec3 r = NV[CAP[i]] - c; ANG[i] = atan(dot(r, w), dot(r, u)); }\n"
    "    for (int i = 1; i < ncap; i++) { float a = ANG[i]; int id = CAP[i]; int j = i - 1;\n"
    "      while (j >= 0 && ANG[j] > a) { ANG[j + 1] = ANG[j]; CAP[j + 1] = CAP[j]; j--; }\n"
    "      ANG[j + 1] = a; CAP[j + 1] = id; }\n"
    "    if (nfv + ncap > GFV || nnf + 1 > GF - 1) return -1;\n"
    "    NFS[nnf] = nfv; NFN[nnf] = nb; nnf++;\n"
    "    for (int i = 0; i < ncap; i++) NFV[nfv++] = CAP[i];\n"
    "  }\n"
    "  NFS[nnf] = nfv;\n"
    "  for (int i = 0; i < nnv; i++) RM[i] = -1;\n"
    "  for (int i = 0; i < nfv; i++) RM[NFV[i]] = 0;\n"
    "  int m = 0;\n"
    "  for (int i = 0; i < nnv; i++) if (RM[i] == 0) { RM[i] = m; V[m] = NV[i]; m++; }\n"
    "  nv = m;\n"
    "  for (int i = 0; i < nfv; i++) FV[i] = RM[NFV[i]];\n"
    "  for (int f = 0; f <= nnf; f++) FS[f] = NFS[f];\n"
    "  for (int f = 0; f < nnf; f++) FN[f] = NFN[f];\n"
    "  nf = nnf; return 1;\n"
    "}\n"
    "float maxr2() { float r = 0.0; for (int i = 0; i < nv; i++) r = max(r, dot(V[i], V[i])); return r; }\n"
    /* candidates of one group of blocks, nearest first (as the CPU) */
    "int flush(int nc, vec3 s, inout float r2) {\n"
    "  for (int a = 1; a < nc; a++) { float x = CD[a]; int xj = CJ[a]; int b = a - 1;\n"
    "    while (b >= 0 && CD[b] > x) { CD[b + 1] = CD[b]; CJ[b + 1] = CJ[b]; b--; }\n"
    "    CD[b + 1] = x; CJ[b + 1] = xj; }\n"
    "  for (int a = 0; a < nc; a++) {\n"
    "    if (CD[a] >= 4.0 * r2) break;\n"
    "    vec3 p = pts[CJ[a]].xyz - s;\n"
    "    int rc = cut(p, 0.5 * dot(p, p), ids[CJ[a]]);\n"
    "    if (rc < 0) return 1;\n"
    "    if (rc > 0) r2 = maxr2();\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "void main() {\n"
    "  int ci = int(gl_WorkGroupID.x);\n"
    "  vec3 s = sites[ci].xyz; vec3 lo = bmin - s, hi = bmax - s;\n"
    "  for (int i = 0; i < 8; i++) V[i] = vec3((i & 1) != 0 ? hi.x : lo.x, (i & 2) != 0 ? hi.y : lo.y, (i & 4) != 0 ? hi.z : lo.z);\n"
    "  nv = 8; nf = 6;\n"
    "  int fv0[24] = int[24](0,4,6,2, 1,3,7,5, 0,1,5,4, 2,6,7,3, 0,2,3,1, 4,5,7,6);\n"
    "  for (int i = 0; i < 24; i++) FV[i] = fv0[i];\n"
    "  for (int f = 0; f <= 6; f++) FS[f] = 4 * f;\n"
    "  for (int f = 0; f < 6; f++) FN[f] = -1 - f;\n"
    "  float r2 = maxr2(); int status = 0; float h2 = gh * gh;\n"
    "  ivec3 b = sblk[ci].xyz;\n"
    /* the table: groups of blocks at the same least distance */
    "  int t = 0;\n"
    "  while (t < ntab && status == 0) {\n"
    "    int lb = tab[t].w;\n"
    "    if (float(lb) * h2 >= 4.0 * r2) break;\n"
    "    int nc = 0;\n"
    "    for (; t < ntab && tab[t].w == lb && status == 0; t++) {\n"
    "      ivec3 q = b + tab[t].xyz;\n"
    "      if (any(lessThan(q, ivec3(0))) || any(greaterThanEqual(q, gn))) continue;\n"
    "      if (lb > 0) {\n"
    "        vec3 a = gorigin + vec3(q) * gh - s;\n"
    "        vec3 e = max(max(a, -(a + gh)), vec3(0.0));\n"
    "        if (dot(e, e) >= 4.0 * r2) continue;\n"
    "      }\n"
    "      int bk = (q.z * gn.y + q.y) * gn.x + q.x;\n"
    "      for (int j = gstart[bk]; j < gstart[bk + 1]; j++) {\n"
    "        vec3 d = pts[j].xyz - s; float dd = dot(d, d);\n"
    "        if (dd >= 4.0 * r2 || ids[j] == ci) continue;\n"
    "        if (nc == MAXC) { status = flush(nc, s, r2); nc = 0; if (status != 0) break; }\n"
    "        CD[nc] = dd; CJ[nc] = j; nc++;\n"
    "      }\n"
    "    }\n"
    "    if (status == 0) status = flush(nc, s, r2);\n"
    "  }\n"
    /* beyond the table: rings of blocks, ring r at least r - 1 widths away */
    "  int rmax = 0;\n"
    "  for (int k = 0; k < 3; k++) rmax = max(rmax, max(b[k], gn[k] - 1 - b[k]));\n"
    "  int r0 = min(tabr.x, min(tabr.y, tabr.z));\n"
    "  for (int r = r0 + 1; r <= rmax && status == 0; r++) {\n"
    "    if (float((r - 1) * (r - 1)) * h2 >= 4.0 * r2) break;\n"
    "    for (int dx = -r; dx <= r && status == 0; dx++)\n"
    "      for (int dy = -r; dy <= r && status == 0; dy++) {\n"
    "        bool edge = dx == -r || dx == r || dy == -r || dy == r;\n"
    "        int step = edge ? 1 : 2 * r;\n"
    "        for (int dz = -r; dz <= r && status == 0; dz += step) {\n"
    "          ivec3 q = b + ivec3(dx, dy, dz);\n"
    "          if (any(lessThan(q, ivec3(0))) || any(greaterThanEqual(q, gn))) continue;\n"
    "          if (abs(dx) <= tabr.x && abs(dy) <= tabr.y && abs(dz) <= tabr.z) continue;\n"
    "          int bk = (q.z * gn.y + q.y) * gn.x + q.x;\n"
    "          for (int j = gstart[bk]; j < gstart[bk + 1]; j++) {\n"
    "            vec3 p = pts[j].xyz - s; float dd = dot(p, p);\n"
    "            if (dd >= 4.0 * r2 || ids[j] == ci) continue;\n"
    "            int rc = cut(p, 0.5 * dd, ids[j]);\n"
    "            if (rc < 0) { status = 1; break; }\n"
    "            if (rc > 0) r2 = maxr2();\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "  }\n"
    "  int base = ci * GINTS;\n"
    "  oint[base] = status; oint[base + 1] = nv; oint[base + 2] = nf; oint[base + 3] = 0;\n"
    "  int nfv = FS[nf];\n"
    "  for (int f = 0; f < GF + 1; f++) if (f <= nf) oint[base + 4 + f] = FS[f];\n"
    "  for (int f = 0; f < GF; f++) if (f < nf) oint[base + 4 + GF + 1 + f] = FN[f];\n"
    "  for (int i = 0; i < GFV; i++) if (i < nfv) oint[base + 4 + 2 * GF + 1 + i] = FV[i];\n"
    "  for (int i = 0; i < GV; i++) if (i < nv) overt[ci * GV + i] = vec4(V[i], 0.0);\n"
    "}\n";

static GLuint g_program;

static GLuint build_program(char *err, size_t errlen)
{
    GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
    glShaderSource(sh, 1, &shader_src, NULL);
    glCompileShader(sh);
    GLint ok = 0;
    glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[512];
        glGetShaderInfoLog(sh, sizeof log, NULL, log);
        snprintf(err, errlen, "compute shader: %s", log);
        glDeleteShader(sh);
        return 0;
    }
    GLuint prog = glCreateProgram();
    glAttachShader(prog, sh);
    glLinkProgram(prog);
    glDeleteShader(sh);
    glGetProgramiv(prog, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[512];
        glGetProgramInfoLog(prog, sizeof log, NULL, log);
        snprintf(err, errlen, "compute program: %s", log);
        glDeleteProgram(prog);
        return 0;
    }
    return prog;
}

static q_voronoi *voronoi_gpu(const double *sites, size_t count, const double min[3], const double max[3],
                              char *err, size_t errlen)
{
    if (!glad_glDispatchCompute || !GLAD_GL_VERSION_4_3) {
        snprintf(err, errlen, "no OpenGL 4.3 context with compute shaders");
        return NULL;
    }
    for (int k = 0; k < 3; k++)
        if (!isfinite(min[k]) || !isfinite(max[k]) || !(min[k] < max[k])) {
            snprintf(err, errlen, "empty or non-finite box");
            return NULL;
        }
    for (size_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(sites[3 * i + k]) || sites[3 * i + k] < min[k] || sites[3 * i + k] > max[k]) {
                snprintf(err, errlen, "site %zu is outside the box or not finite", i + 1);
                return NULL;
            }
    if (count > 65535) {
        snprintf(err, errlen, "the GPU path takes at most 65535 sites");
        return NULL;
    }
    q_voronoi *v = q_calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (count == 0)
        return v;
    if (!g_program && !(g_program = build_program(err, errlen))) {
        q_free(v, sizeof *v);
        return NULL;
    }
    size_t nf4 = count * 4;
    float *sf = q_alloc(nf4 * sizeof(float));
    float *vf = q_alloc(count * GV * 4 * sizeof(float));
    int *ints = q_alloc(count * GINTS * sizeof(int));
    v->cells = q_calloc(count, sizeof(q_voronoi_cell));
    /* the CPU path's neighbour grid (built in double), uploaded as is */
    q_voronoi_grid g;
    bool have_grid = q_voronoi_grid_build(&g, sites, count, min, max);
    float *pf = q_alloc(nf4 * sizeof(float));
    int *blk = q_alloc(nf4 * sizeof(int));
    int *tab = have_grid ? q_alloc((size_t)g.ntab * 4 * sizeof(int)) : NULL;
    bool ok = sf && vf && ints && v->cells && have_grid && pf && blk && tab;
    if (ok) {
        v->cell_count = count;
        for (size_t i = 0; i < count; i++) {
            for (int k = 0; k < 3; k++) {
                sf[4 * i + k] = (float)sites[3 * i + k];
                pf[4 * i + k] = (float)g.pts[3 * i + k];
            }
            sf[4 * i + 3] = pf[4 * i + 3] = 0;
        }
        /* each site's block, as the CPU binned it */
        for (size_t b = 0; b < g.blocks; b++)
            for (int j = g.start[b]; j < g.start[b + 1]; j++) {
                int *o = blk + 4 * (size_t)g.ids[j];
                o[0] = (int)(b % (size_t)g.n[0]);
                o[1] = (int)(b / (size_t)g.n[0] % (size_t)g.n[1]);
                o[2] = (int)(b / ((size_t)g.n[0] * g.n[1]));
                o[3] = 0;
            }
        for (int t = 0; t < g.ntab; t++) {
            for (int k = 0; k < 3; k++)
                tab[4 * t + k] = g.tab[t].d[k];
            tab[4 * t + 3] = g.tab[t].lb;
        }
        GLuint buf[8];
        glGenBuffers(8, buf);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[0]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(nf4 * sizeof(float)), sf, GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[1]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(count * GV * 4 * sizeof(float)), NULL, GL_DYNAMIC_READ);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[2]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(count * GINTS * sizeof(int)), NULL, GL_DYNAMIC_READ);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[3]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(nf4 * sizeof(float)), pf, GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[4]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(count * sizeof(int)), g.ids, GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[5]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)((g.blocks + 1) * sizeof(int)), g.start, GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[6]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)((size_t)g.ntab * 4 * sizeof(int)), tab, GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[7]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(nf4 * sizeof(int)), blk, GL_STATIC_DRAW);
        for (GLuint b = 0; b < 8; b++)
            glBindBufferBase(GL_SHADER_STORAGE_BUFFER, b, buf[b]);
        glUseProgram(g_program);
        glUniform3f(glGetUniformLocation(g_program, "bmin"), (float)min[0], (float)min[1], (float)min[2]);
        glUniform3f(glGetUniformLocation(g_program, "bmax"), (float)max[0], (float)max[1], (float)max[2]);
        glUniform1i(glGetUniformLocation(g_program, "count"), (GLint)count);
        glUniform3f(glGetUniformLocation(g_program, "gorigin"), (float)g.origin[0], (float)g.origin[1],
                    (float)g.origin[2]);
        glUniform1f(glGetUniformLocation(g_program, "gh"), (float)g.h);
        glUniform3i(glGetUniformLocation(g_program, "gn"), g.n[0], g.n[1], g.n[2]);
        glUniform1i(glGetUniformLocation(g_program, "ntab"), g.ntab);
        glUniform3i(glGetUniformLocation(g_program, "tabr"), g.tab_r[0], g.tab_r[1], g.tab_r[2]);
        glDispatchCompute((GLuint)count, 1, 1);
        glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[1]);
        glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(count * GV * 4 * sizeof(float)), vf);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[2]);
        glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(count * GINTS * sizeof(int)), ints);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, 0);
        glUseProgram(0);
        glDeleteBuffers(8, buf);
    }
    q_free(pf, nf4 * sizeof(float));
    q_free(blk, nf4 * sizeof(int));
    q_free(tab, have_grid ? (size_t)g.ntab * 4 * sizeof(int) : 0);
    if (have_grid)
        q_voronoi_grid_free(&g);
    for (size_t i = 0; ok && i < count; i++) {
        const int *h = ints + i * GINTS;
        int nv = h[1], nf = h[2];
        if (h[0] != 0 || nv < 4 || nv > GV || nf < 4 || nf >= GF) {
            snprintf(err, errlen, "cell %zu is too complex for the GPU path", i + 1);
            ok = false;
            break;
        }
        q_voronoi_cell *c = &v->cells[i];
        const int *fs = h + 4, *fn = h + 4 + GF + 1, *fvv = h + 4 + 2 * GF + 1;
        int nfv = fs[nf];
        /* what came back from the GPU is checked before it is used */
        bool sane = fs[0] == 0 && nfv <= GFV;
        for (int f = 0; sane && f < nf; f++)
            sane = fs[f + 1] >= fs[f] + 3 && fn[f] >= -6 && fn[f] < (int)count;
        for (int k = 0; sane && k < nfv; k++)
            sane = fvv[k] >= 0 && fvv[k] < nv;
        if (!sane) {
            snprintf(err, errlen, "cell %zu came back from the GPU inconsistent", i + 1);
            ok = false;
            break;
        }
        memcpy(c->site, sites + 3 * i, sizeof c->site);
        c->vertices = q_alloc((size_t)nv * 3 * sizeof(double));
        c->face_start = q_alloc((size_t)(nf + 1) * sizeof(int));
        c->face_vertices = q_alloc((size_t)nfv * sizeof(int));
        c->face_neighbor = q_alloc((size_t)nf * sizeof(int));
        if (!c->vertices || !c->face_start || !c->face_vertices || !c->face_neighbor) {
            /* partially built cells are freed by q_voronoi_free from their counts */
            snprintf(err, errlen, "out of memory");
            c->vertex_count = nv;
            c->face_count = nf;
            ok = false;
            break;
        }
        c->vertex_count = nv;
        c->face_count = nf;
        for (int k = 0; k < nv; k++)
            for (int a = 0; a < 3; a++)
                c->vertices[3 * k + a] = (double)vf[(i * GV + k) * 4 + a] + sites[3 * i + a];
        memcpy(c->face_start, fs, (size_t)(nf + 1) * sizeof(int));
        memcpy(c->face_neighbor, fn, (size_t)nf * sizeof(int));
        memcpy(c->face_vertices, fvv, (size_t)nfv * sizeof(int));
        double vol = 0;
        for (int f = 0; f < nf; f++) {
            const double *a = c->vertices + 3 * fvv[fs[f]];
            for (int k = fs[f] + 1; k + 1 < fs[f + 1]; k++) {
                const double *b = c->vertices + 3 * fvv[k], *d = c->vertices + 3 * fvv[k + 1];
                double ab[3] = {b[0] - c->site[0], b[1] - c->site[1], b[2] - c->site[2]};
                double ad[3] = {d[0] - c->site[0], d[1] - c->site[1], d[2] - c->site[2]};
                double aa[3] = {a[0] - c->site[0], a[1] - c->site[1], a[2] - c->site[2]};
                vol += aa[0] * (ab[1] * ad[2] - ab[2] * ad[1]) + aa[1] * (ab[2] * ad[0] - ab[0] * ad[2]) +
                       aa[2] * (ab[0] * ad[1] - ab[1] * ad[0]);
            }
        }
        c->volume = vol / 6;
    }
    if (!ok && !(sf && vf && ints && v->cells && have_grid && pf && blk && tab))
        snprintf(err, errlen, "out of memory");
    q_free(sf, nf4 * sizeof(float));
    q_free(vf, count * GV * 4 * sizeof(float));
    q_free(ints, count * GINTS * sizeof(int));
    if (!ok) {
        if (!v->cells)
            q_free(v, sizeof *v);
        else
            q_voronoi_free(v);
        return NULL;
    }
    return v;
}

__attribute__((constructor)) static void install_voronoi_gpu(void)
{
    q_voronoi_gpu = voronoi_gpu;
}
