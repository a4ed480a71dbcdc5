/* HACD convex decomposition (engine/geom/hacd.h, seed 001) side by side in one
 * run with Bullet's original HACD (libbullet-extras-dev, HACD/hacdHACD.h,
 * PEERS.md), on the same triangles, one thread.
 *
 * Parameters, both: seed 001's NClusters 1, ScaleFactor 1000, ConnectDist
 * 0.1, Concavity 10, CompacityWeight 0 (and Bullet's VolumeWeight 0); every
 * other Bullet setting is its default (printed), ours are q_default_hacd_params.
 *
 * Meshes: a torus (R 1, r 0.3, 48 x 24 quads, closed), assimp-testmodels'
 * OFF/Wuson.off (open) and OBJ/spider.obj (open, non-manifold), loaded with
 * q_mesh_import; both decompositions get exactly these positions and indices.
 *
 * Time: median of REPS runs of q_hacd and of HACD::Compute, the two
 * alternating so that both meet the same load on a shared machine (Bullet's
 * time includes nothing but Compute; ours includes its input checks).
 *
 * Quality, measured by one function (measure() below) on both outputs, in
 * units of the mesh scaled into a 1000 cube (the unit of Concavity 10):
 *  - hulls: how many;
 *  - concavity (ray): seed 001's error, computed here from scratch on fine
 *    samples: mesh surface samples on a grid of spacing MEASURE_SPACING, with
 *    the triangles' normals, wound consistently across manifold edges
 *    (breadth first) and turned around per connected component when its
 *    signed volume about its area centroid is negative; for every solid hull and every
 *    sample inside it (within 0.1) of a connected component (triangles
 *    sharing vertices) that the hull's own triangles belong to, the distance
 *    along the normal to the hull's boundary; the largest over all hulls.
 *    Components other than the hull's own are left out: parts that pass
 *    through each other (the spider's legs) would otherwise count one part's
 *    surface inside the other's solid as a concavity;
 *  - outer gap: points on the hulls' surface (grid spacing 2 * MEASURE_SPACING
 *    per hull triangle) that lie inside no other hull, i.e. on the outer
 *    surface of the union; the largest and the mean distance from such a
 *    point to the nearest mesh sample (PEERS.md's measure for open meshes:
 *    how far the collision surface stands off the mesh);
 *  - vertices outside: mesh vertices inside no hull (within 0.5);
 *  - volume ratio: sum of hull volumes / mesh volume, closed meshes only.
 */
extern "C" {
#include "bench.h"
#include "geom/hacd.h"
#include "mesh/import.h"
#include "mesh/mesh.h"
}

#include <HACD/hacdHACD.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

static const int REPS = 5;
static const double MEASURE_SPACING = 2.0;

struct hull_out {
    std::vector<double> p; /* x, y, z; input units */
    std::vector<int> t;    /* 3 per triangle */
    std::vector<int> tris; /* input triangles of the cluster */
};

struct quality {
    size_t hulls = 0;
    double conc_ray = 0, gap_max = 0, gap_mean = 0, volume_ratio = NAN;
    size_t outside = 0, used = 0;
};

static void sub(const double *a, const double *b, double *r)
{
    for (int i = 0; i < 3; i++)
        r[i] = a[i] - b[i];
}
static double dot(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static void cross(const double *a, const double *b, double *r)
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

/* Points on a grid of spacing h in triangle (a, b, c) (at least its
 * centroid), appended with the unit normal n to pts / nrm. */
static void sample_tri(const double *a, const double *b, const double *c, double h, std::vector<double> &pts,
                       std::vector<double> *nrm)
{
    double e1[3], e2[3], n[3];
    sub(b, a, e1);
    sub(c, a, e2);
    cross(e1, e2, n);
    double l = std::sqrt(dot(n, n));
    if (!(l > 0))
        return;
    for (double &x : n)
        x /= l;
    double L = std::sqrt(dot(e1, e1));
    double u[3] = {e1[0] / L, e1[1] / L, e1[2] / L}, w[3];
    cross(n, u, w);
    double px = dot(e2, u), py = dot(e2, w);
    size_t before = pts.size();
    /* rows across the triangle (a, b, c) in the (u, w) frame: a at 0, b at
     * (L, 0), c at (px, py) with py > 0 */
    for (double y = 0.5 * h; y < py; y += h) {
        double f = y / py;
        double x0 = std::min(px * f, L + (px - L) * f), x1 = std::max(px * f, L + (px - L) * f);
        for (double x = (std::floor(x0 / h - 0.5) + 1.5) * h; x < x1; x += h) {
            for (int i = 0; i < 3; i++)
                pts.push_back(a[i] + x * u[i] + y * w[i]);
            if (nrm)
                nrm->insert(nrm->end(), n, n + 3);
        }
    }
    if (pts.size() == before) {
        for (int i = 0; i < 3; i++)
            pts.push_back((a[i] + b[i] + c[i]) / 3);
        if (nrm)
            nrm->insert(nrm->end(), n, n + 3);
    }
}

/* Uniform grid over points for nearest-neighbour and box queries. */
struct grid {
    double lo[3], cell;
    int dims[3];
    std::vector<uint32_t> start, items;
    const std::vector<double> *pts;
    void build(const std::vector<double> &p, double c)
    {
        pts = &p;
        cell = c;
        for (int a = 0; a < 3; a++) {
            lo[a] = INFINITY;
            double hi = -INFINITY;
            for (size_t i = a; i < p.size(); i += 3) {
                lo[a] = std::min(lo[a], p[i]);
                hi = std::max(hi, p[i]);
            }
            dims[a] = (int)((hi - lo[a]) / c) + 1;
        }
        size_t n = (size_t)dims[0] * dims[1] * dims[2];
        start.assign(n + 1, 0);
        items.resize(p.size() / 3);
        for (size_t i = 0; i < p.size() / 3; i++)
            start[index(&p[3 * i]) + 1]++;
        for (size_t i = 0; i < n; i++)
            start[i + 1] += start[i];
        std::vector<uint32_t> cur(start.begin(), start.end() - 1);
        for (size_t i = 0; i < p.size() / 3; i++)
            items[cur[index(&p[3 * i])]++] = (uint32_t)i;
    }
    int coord(double x, int a) const
    {
        int i = (int)std::floor((x - lo[a]) / cell);
        return std::max(0, std::min(dims[a] - 1, i));
    }
    size_t index(const double *p) const
    {
        return ((size_t)coord(p[0], 0) * dims[1] + coord(p[1], 1)) * dims[2] + coord(p[2], 2);
    }
    double nearest(const double *q) const
    {
        int c[3] = {coord(q[0], 0), coord(q[1], 1), coord(q[2], 2)};
        double best = INFINITY;
        int maxr = std::max(dims[0], std::max(dims[1], dims[2]));
        for (int r = 0; r <= maxr; r++) {
            for (int x = c[0] - r; x <= c[0] + r; x++)
                for (int y = c[1] - r; y <= c[1] + r; y++)
                    for (int z = c[2] - r; z <= c[2] + r; z++) {
                        if (std::max(std::abs(x - c[0]), std::max(std::abs(y - c[1]), std::abs(z - c[2]))) != r)
                            continue;
                        if (x < 0 || y < 0 || z < 0 || x >= dims[0] || y >= dims[1] || z >= dims[2])
                            continue;
                        size_t k = ((size_t)x * dims[1] + y) * dims[2] + z;
                        for (uint32_t i = start[k]; i < start[k + 1]; i++) {
                            double d[3];
                            sub(q, &(*pts)[3 * items[i]], d);
                            best = std::min(best, dot(d, d));
                        }
                    }
            /* every point within r * cell of q has been seen */
            if (best < INFINITY && std::sqrt(best) <= r * cell)
                break;
        }
        return std::sqrt(best);
    }
};

struct hull_planes {
    std::vector<double> pl; /* nx ny nz d */
    double lo[3], hi[3], volume;
    std::vector<double> p;
    std::vector<int> t;
    bool solid;
};

static hull_planes planes_of(const std::vector<double> &p, const std::vector<int> &t)
{
    hull_planes h;
    h.p = p;
    h.t = t;
    h.volume = 0;
    for (int a = 0; a < 3; a++) {
        h.lo[a] = INFINITY;
        h.hi[a] = -INFINITY;
    }
    for (size_t i = 0; i < p.size(); i += 3)
        for (int a = 0; a < 3; a++) {
            h.lo[a] = std::min(h.lo[a], p[i + a]);
            h.hi[a] = std::max(h.hi[a], p[i + a]);
        }
    for (size_t k = 0; k + 2 < t.size(); k += 3) {
        const double *a = &p[3 * t[k]], *b = &p[3 * t[k + 1]], *c = &p[3 * t[k + 2]];
        double e1[3], e2[3], n[3], x[3];
        sub(b, a, e1);
        sub(c, a, e2);
        cross(e1, e2, n);
        cross(b, c, x);
        h.volume += dot(a, x) / 6;
        double l = std::sqrt(dot(n, n));
        if (!(l > 1e-12))
            continue;
        h.pl.insert(h.pl.end(), {n[0] / l, n[1] / l, n[2] / l, dot(n, a) / l});
    }
    double ext = std::max(h.hi[0] - h.lo[0], std::max(h.hi[1] - h.lo[1], h.hi[2] - h.lo[2]));
    h.solid = h.volume > 1e-9 * ext * ext * ext;
    return h;
}

/* Inside (within tol) a solid hull by its planes; a flat one by distance to
 * one of its triangles. */
static bool inside(const hull_planes &h, const double *q, double tol)
{
    for (int a = 0; a < 3; a++)
        if (q[a] < h.lo[a] - tol || q[a] > h.hi[a] + tol)
            return false;
    if (h.solid) {
        for (size_t j = 0; j < h.pl.size(); j += 4)
            if (dot(&h.pl[j], q) - h.pl[j + 3] > tol)
                return false;
        return true;
    }
    for (size_t k = 0; k + 2 < h.t.size(); k += 3) {
        const double *a = &h.p[3 * h.t[k]], *b = &h.p[3 * h.t[k + 1]], *c = &h.p[3 * h.t[k + 2]];
        double e1[3], e2[3], n[3];
        sub(b, a, e1);
        sub(c, a, e2);
        cross(e1, e2, n);
        double l = std::sqrt(dot(n, n));
        if (!(l > 0))
            continue;
        for (double &x : n)
            x /= l;
        double d[3];
        sub(q, a, d);
        double dist = dot(n, d);
        if (std::fabs(dist) > tol)
            continue;
        const double *v[3] = {a, b, c};
        bool in = true;
        for (int e = 0; e < 3 && in; e++) {
            double ed[3], en[3], qd[3];
            sub(v[(e + 1) % 3], v[e], ed);
            cross(n, ed, en);
            double el = std::sqrt(dot(en, en));
            sub(q, v[e], qd);
            if (el > 0 && dot(en, qd) < -tol * el)
                in = false;
        }
        if (in)
            return true;
    }
    return false;
}

/* The one quality measure for both decompositions (see the top comment).
 * mesh positions and hulls in input units; centre and k map to the 1000 cube. */
static uint32_t find(std::vector<uint32_t> &p, uint32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

static quality measure(const q_mesh *m, const std::vector<hull_out> &hulls, double mesh_volume)
{
    std::vector<uint32_t> uf(m->vertex_count);
    for (size_t i = 0; i < uf.size(); i++)
        uf[i] = (uint32_t)i;
    for (size_t t = 0; t < m->index_count; t += 3)
        for (int k = 1; k < 3; k++) {
            uint32_t a = find(uf, m->indices[t]), b = find(uf, m->indices[t + k]);
            if (a != b)
                uf[b] = a;
        }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < m->vertex_count; i++)
        for (int a = 0; a < 3; a++) {
            lo[a] = std::min(lo[a], (double)m->positions[3 * i + a]);
            hi[a] = std::max(hi[a], (double)m->positions[3 * i + a]);
        }
    double ks = 1000.0 / std::max(hi[0] - lo[0], std::max(hi[1] - lo[1], hi[2] - lo[2]));
    double centre[3];
    for (int a = 0; a < 3; a++)
        centre[a] = 0.5 * (lo[a] + hi[a]);
    auto scaled = [&](const double *p, double *o) {
        for (int a = 0; a < 3; a++)
            o[a] = (p[a] - centre[a]) * ks;
    };
    std::vector<double> mp(3 * m->vertex_count);
    for (size_t i = 0; i < m->vertex_count; i++) {
        double p[3] = {m->positions[3 * i], m->positions[3 * i + 1], m->positions[3 * i + 2]};
        scaled(p, &mp[3 * i]);
    }
    /* mesh samples and outward normals */
    std::vector<double> sp, sn;
    std::vector<uint32_t> scomp;
    /* consistent winding across manifold edges (breadth first), then per
     * component outward by the signed volume about its area centroid */
    size_t ntri = m->index_count / 3;
    std::vector<std::array<uint32_t, 4>> edges; /* lo, hi, triangle, runs hi -> lo */
    for (size_t t = 0; t < ntri; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t a = m->indices[3 * t + k], b = m->indices[3 * t + (k + 1) % 3];
            edges.push_back({std::min(a, b), std::max(a, b), (uint32_t)t, a > b});
        }
    std::sort(edges.begin(), edges.end());
    std::vector<std::vector<std::pair<uint32_t, int>>> adj(ntri);
    for (size_t i = 0; i < edges.size();) {
        size_t j = i + 1;
        while (j < edges.size() && edges[j][0] == edges[i][0] && edges[j][1] == edges[i][1])
            j++;
        if (j - i == 2 && edges[i][2] != edges[i + 1][2]) {
            int disagree = edges[i][3] == edges[i + 1][3];
            adj[edges[i][2]].push_back({edges[i + 1][2], disagree});
            adj[edges[i + 1][2]].push_back({edges[i][2], disagree});
        }
        i = j;
    }
    std::vector<int> orient(ntri, -1);
    for (size_t t0 = 0; t0 < ntri; t0++) {
        if (orient[t0] >= 0)
            continue;
        orient[t0] = 0;
        std::vector<uint32_t> queue{(uint32_t)t0};
        for (size_t h = 0; h < queue.size(); h++)
            for (auto &e : adj[queue[h]])
                if (orient[e.first] < 0) {
                    orient[e.first] = orient[queue[h]] ^ e.second;
                    queue.push_back(e.first);
                }
    }
    std::vector<double> cg(4 * m->vertex_count, 0.0), csv(m->vertex_count, 0.0);
    for (int pass = 0; pass < 2; pass++)
        for (size_t t = 0; t < m->index_count; t += 3) {
            const double *A = &mp[3 * m->indices[t]], *B = &mp[3 * m->indices[t + 1]], *C = &mp[3 * m->indices[t + 2]];
            double e1[3], e2[3], n[3];
            sub(B, A, e1);
            sub(C, A, e2);
            cross(e1, e2, n);
            if (orient[t / 3])
                for (double &x : n)
                    x = -x;
            double l = std::sqrt(dot(n, n));
            uint32_t ck = find(uf, m->indices[t]);
            double *G = &cg[4 * ck];
            if (pass == 0) {
                for (int a = 0; a < 3; a++)
                    G[a] += l * (A[a] + B[a] + C[a]) / 3;
                G[3] += l;
            } else {
                double c[3];
                for (int a = 0; a < 3; a++)
                    c[a] = (A[a] + B[a] + C[a]) / 3 - (G[3] > 0 ? G[a] / G[3] : 0);
                csv[ck] += dot(c, n);
                size_t first = sn.size();
                sample_tri(A, B, C, MEASURE_SPACING, sp, &sn);
                if (orient[t / 3])
                    for (size_t i = first; i < sn.size(); i++)
                        sn[i] = -sn[i];
                scomp.resize(sp.size() / 3, ck);
            }
        }
    for (size_t i = 0; i < scomp.size(); i++)
        if (csv[scomp[i]] < 0)
            for (int a = 0; a < 3; a++)
                sn[3 * i + a] = -sn[3 * i + a];
    grid sg;
    sg.build(sp, 8.0);

    quality q;
    q.hulls = hulls.size();
    std::vector<hull_planes> hp;
    double total_volume = 0;
    for (const hull_out &h : hulls) {
        std::vector<double> p(h.p.size());
        for (size_t i = 0; i < h.p.size(); i += 3)
            scaled(&h.p[i], &p[i]);
        hp.push_back(planes_of(p, h.t));
        total_volume += std::max(0.0, hp.back().volume) / (ks * ks * ks);
    }
    /* seed 001's ray error */
    for (size_t hi_ = 0; hi_ < hp.size(); hi_++) {
        const hull_planes &h = hp[hi_];
        if (!h.solid)
            continue;
        std::vector<uint32_t> comps;
        for (int t : hulls[hi_].tris)
            comps.push_back(find(uf, m->indices[3 * t]));
        std::sort(comps.begin(), comps.end());
        int i0[3], i1[3];
        for (int a = 0; a < 3; a++) {
            i0[a] = sg.coord(h.lo[a] - 0.1, a);
            i1[a] = sg.coord(h.hi[a] + 0.1, a);
        }
        for (int x = i0[0]; x <= i1[0]; x++)
            for (int y = i0[1]; y <= i1[1]; y++)
                for (int z = i0[2]; z <= i1[2]; z++) {
                    size_t c = ((size_t)x * sg.dims[1] + y) * sg.dims[2] + z;
                    for (uint32_t i = sg.start[c]; i < sg.start[c + 1]; i++) {
                        if (!std::binary_search(comps.begin(), comps.end(), scomp[sg.items[i]]))
                            continue;
                        const double *p = &sp[3 * sg.items[i]], *d = &sn[3 * sg.items[i]];
                        double tmin = INFINITY;
                        bool in = true;
                        for (size_t j = 0; j < h.pl.size() && in; j += 4) {
                            double dp = dot(&h.pl[j], p) - h.pl[j + 3];
                            if (dp > 0.1)
                                in = false;
                            double nd = dot(&h.pl[j], d);
                            if (nd > 1e-9)
                                tmin = std::min(tmin, std::max(0.0, -dp) / nd);
                        }
                        if (in && tmin < INFINITY)
                            q.conc_ray = std::max(q.conc_ray, tmin);
                    }
                }
    }
    /* outer gap */
    double gap_sum = 0;
    size_t gap_n = 0;
    for (size_t hi_ = 0; hi_ < hp.size(); hi_++) {
        const hull_planes &h = hp[hi_];
        std::vector<double> pts;
        for (size_t t = 0; t + 2 < h.t.size(); t += 3)
            sample_tri(&h.p[3 * h.t[t]], &h.p[3 * h.t[t + 1]], &h.p[3 * h.t[t + 2]], 2 * MEASURE_SPACING, pts, NULL);
        for (size_t i = 0; i < pts.size(); i += 3) {
            const double *p = &pts[i];
            bool covered = false;
            for (size_t o = 0; o < hp.size() && !covered; o++)
                if (o != hi_ && hp[o].solid && inside(hp[o], p, -0.1))
                    covered = true;
            if (covered)
                continue;
            double d = sg.nearest(p);
            q.gap_max = std::max(q.gap_max, d);
            gap_sum += d;
            gap_n++;
        }
    }
    q.gap_mean = gap_n ? gap_sum / gap_n : 0;
    /* vertices inside no hull */
    std::vector<bool> used(m->vertex_count, false);
    for (size_t i = 0; i < m->index_count; i++)
        used[m->indices[i]] = true;
    for (size_t v = 0; v < m->vertex_count; v++) {
        if (!used[v])
            continue;
        q.used++;
        bool in = false;
        for (size_t o = 0; o < hp.size() && !in; o++)
            in = inside(hp[o], &mp[3 * v], 0.5);
        q.outside += !in;
    }
    if (mesh_volume > 0)
        q.volume_ratio = total_volume / mesh_volume;
    return q;
}

static q_mesh *torus(double R, double r, int nu, int nv)
{
    q_mesh *m = q_mesh_create((size_t)nu * nv, (size_t)nu * nv * 6, false, false);
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            double u = 2 * M_PI * i / nu, w = 2 * M_PI * j / nv;
            float *p = m->positions + 3 * (i * nv + j);
            p[0] = (float)((R + r * std::cos(w)) * std::cos(u));
            p[1] = (float)(r * std::sin(w));
            p[2] = (float)((R + r * std::cos(w)) * std::sin(u));
        }
    uint32_t *t = m->indices;
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            uint32_t a = i * nv + j, b = ((i + 1) % nu) * nv + j, c = ((i + 1) % nu) * nv + (j + 1) % nv,
                     d = i * nv + (j + 1) % nv;
            uint32_t tri[6] = {a, d, c, a, c, b};
            std::memcpy(t, tri, sizeof tri);
            t += 6;
        }
    return m;
}

static std::vector<hull_out> run_ours(const q_mesh *m, std::vector<double> &times, int reps)
{
    std::vector<hull_out> out;
    for (int r = 0; r < reps; r++) {
        q_hacd_params p = q_default_hacd_params();
        p.concavity = 10;
        p.connect_dist = 0.1;
        p.scale = 1000;
        q_hacd_result res;
        char err[256];
        double t0 = bench_now();
        q_status st = q_hacd(m, &p, &res, err, sizeof err);
        times.push_back(bench_now() - t0);
        bench_check(st, "q_hacd", err);
        if (r == 0)
            for (size_t i = 0; i < res.hull_count; i++) {
                hull_out h;
                for (size_t t = 0; t < res.triangle_count; t++)
                    if (res.triangle_hull[t] == i)
                        h.tris.push_back((int)t);
                const q_mesh *hm = res.hulls[i].mesh;
                for (size_t v = 0; v < 3 * hm->vertex_count; v++)
                    h.p.push_back(hm->positions[v]);
                for (size_t v = 0; v < hm->index_count; v++)
                    h.t.push_back((int)hm->indices[v]);
                out.push_back(h);
            }
        q_hacd_free(&res);
    }
    return out;
}

static std::vector<hull_out> run_bullet(const q_mesh *m, std::vector<double> &times, bool print_defaults, int reps)
{
    std::vector<HACD::Vec3<HACD::Real>> pts(m->vertex_count);
    std::vector<HACD::Vec3<long>> tris(m->index_count / 3);
    for (size_t i = 0; i < m->vertex_count; i++)
        pts[i] = HACD::Vec3<HACD::Real>(m->positions[3 * i], m->positions[3 * i + 1], m->positions[3 * i + 2]);
    for (size_t i = 0; i < tris.size(); i++)
        tris[i] = HACD::Vec3<long>(m->indices[3 * i], m->indices[3 * i + 1], m->indices[3 * i + 2]);
    std::vector<hull_out> out;
    for (int r = 0; r < reps; r++) {
        HACD::HACD h;
        h.SetPoints(pts.data());
        h.SetNPoints(pts.size());
        h.SetTriangles(tris.data());
        h.SetNTriangles(tris.size());
        h.SetNClusters(1);
        h.SetScaleFactor(1000);
        h.SetConnectDist(0.1);
        h.SetConcavity(10);
        h.SetCompacityWeight(0);
        h.SetVolumeWeight(0);
        if (print_defaults && r == 0)
            bench_note("Bullet HACD defaults kept: NVerticesPerCH %zu, AddExtraDistPoints %d, AddFacesPoints %d, "
                       "AddNeighboursDistPoints %d",
                       h.GetNVerticesPerCH(), (int)h.GetAddExtraDistPoints(), (int)h.GetAddFacesPoints(),
                       (int)h.GetAddNeighboursDistPoints());
        double t0 = bench_now();
        h.Compute();
        times.push_back(bench_now() - t0);
        if (r == 0)
            for (size_t c = 0; c < h.GetNClusters(); c++) {
                std::vector<int> ctris;
                for (size_t t = 0; t < tris.size(); t++)
                    if (h.GetPartition()[t] == (long)c)
                        ctris.push_back((int)t);
                size_t np = h.GetNPointsCH(c), nt = h.GetNTrianglesCH(c);
                std::vector<HACD::Vec3<HACD::Real>> cp(np);
                std::vector<HACD::Vec3<long>> ct(nt);
                h.GetCH(c, cp.data(), ct.data());
                hull_out o;
                o.tris = ctris;
                for (auto &v : cp)
                    o.p.insert(o.p.end(), {v.X(), v.Y(), v.Z()});
                for (auto &v : ct)
                    o.t.insert(o.t.end(), {(int)v.X(), (int)v.Y(), (int)v.Z()});
                out.push_back(o);
            }
    }
    return out;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "out";
    const char *only = argc > 2 ? argv[2] : NULL; /* run only the meshes whose name contains this */
    bench_begin("hacd", dir);
    struct {
        const char *name, *path;
    } inputs[] = {{"torus 48x24", NULL},
                  {"Wuson.off", "/usr/share/assimp/models/OFF/Wuson.off"},
                  {"spider.obj", "/usr/share/assimp/models/OBJ/spider.obj"}};
    bool first = true;
    for (auto &in : inputs) {
        if (only && !std::strstr(in.name, only))
            continue;
        q_mesh *m;
        if (in.path) {
            q_status st;
            char err[256];
            m = q_mesh_import(in.path, NULL, &st, err, sizeof err);
            if (!m)
                bench_check(st, in.path, err);
        } else {
            m = torus(1, 0.3, 48, 24);
        }
        double mv = q_mesh_is_closed(m) ? std::fabs(q_mesh_volume(m)) : 0;
        char title[160];
        std::snprintf(title, sizeof title, "HACD, %s: %zu triangles, %s (ours vs Bullet HACD)", in.name,
                      m->index_count / 3, mv > 0 ? "closed" : "open");
        bench_section(title);
        std::vector<double> to, tb;
        std::vector<hull_out> ho, hb;
        for (int r = 0; r < REPS; r++) {
            std::vector<hull_out> o = run_ours(m, to, 1), b = run_bullet(m, tb, first && r == 0, 1);
            if (r == 0) {
                ho = o;
                hb = b;
            }
        }
        first = false;
        double mo = bench_median(to.data(), (int)to.size()), mb = bench_median(tb.data(), (int)tb.size());
        quality qo = measure(m, ho, mv), qb = measure(m, hb, mv);
        bench_row("time", mo, to.data(), (int)to.size(), "Bullet HACD", mb, tb.data(), (int)tb.size(), "s", 1e-3, "ms");
        bench_row("hulls", (double)qo.hulls, NULL, 0, "Bullet HACD", (double)qb.hulls, NULL, 0, "hulls", 1, "");
        bench_row("concavity (ray, seed 001), max", qo.conc_ray, NULL, 0, "Bullet HACD", qb.conc_ray, NULL, 0, "units",
                  1, "/1000");
        bench_row("outer gap, max", qo.gap_max, NULL, 0, "Bullet HACD", qb.gap_max, NULL, 0, "units", 1, "/1000");
        bench_row("outer gap, mean", qo.gap_mean, NULL, 0, "Bullet HACD", qb.gap_mean, NULL, 0, "units", 1, "/1000");
        bench_row("vertices inside no hull", (double)qo.outside, NULL, 0, "Bullet HACD", (double)qb.outside, NULL, 0,
                  "vertices", 1, "");
        if (mv > 0)
            bench_row("hull volume / mesh volume", qo.volume_ratio, NULL, 0, "Bullet HACD", qb.volume_ratio, NULL, 0,
                      "ratio", 1, "");
        bench_note("%s: %zu vertices used; time is the median of %d runs each", in.name, qo.used, REPS);
        q_mesh_destroy(m);
    }
    bench_end();
    return 0;
}
