// Oracle for spec/voronoi_spec.lua: voro++ (library, voro++-dev) cells of the
// sites read from stdin ("id x y z" lines) in the box given as
// x0 x1 y0 y1 z0 z1 arguments; prints "id volume faces neighbour..." per
// cell with 17 significant digits (the CLI prints only 6).
#include <voro++/voro++.hh>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 7)
        return 2;
    double b[6];
    for (int i = 0; i < 6; i++)
        b[i] = atof(argv[i + 1]);
    std::vector<int> ids;
    std::vector<double> p;
    int id;
    double x, y, z;
    while (scanf("%d %lf %lf %lf", &id, &x, &y, &z) == 4) {
        ids.push_back(id);
        p.push_back(x), p.push_back(y), p.push_back(z);
    }
    int n = (int)ids.size(), g = 1;
    while (g * g * g * 2 < n)
        g++;
    voro::container con(b[0], b[1], b[2], b[3], b[4], b[5], g, g, g, false, false, false, 8);
    for (int i = 0; i < n; i++)
        con.put(ids[i], p[3 * i], p[3 * i + 1], p[3 * i + 2]);
    voro::c_loop_all loop(con);
    voro::voronoicell_neighbor c;
    if (loop.start())
        do {
            if (con.compute_cell(c, loop)) {
                std::vector<int> nb;
                c.neighbors(nb);
                printf("%d %.17g %d", loop.pid(), c.volume(), (int)nb.size());
                for (int v : nb)
                    printf(" %d", v);
                printf("\n");
            }
        } while (loop.inc());
    return 0;
}
