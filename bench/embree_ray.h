/* One closest-hit ray through Embree 3 (rtcIntersect1), shared by the C++
 * benchmarks that trace Embree beside Quarry (kdtree.cpp, gridsort.cpp). */
#ifndef Q_BENCH_EMBREE_RAY_H
#define Q_BENCH_EMBREE_RAY_H

#include <embree3/rtcore.h>

/* Fills rh for the segment o + t d, t in [0, len], and traces it:
 * rh.hit.geomID is RTC_INVALID_GEOMETRY_ID on a miss, else rh.ray.tfar is
 * the hit's distance. */
inline void embree_closest(RTCScene scene, RTCIntersectContext &ctx, const float o[3], const float d[3], float len,
                           RTCRayHit &rh)
{
    rh.ray.org_x = o[0], rh.ray.org_y = o[1], rh.ray.org_z = o[2];
    rh.ray.dir_x = d[0], rh.ray.dir_y = d[1], rh.ray.dir_z = d[2];
    rh.ray.tnear = 0.0f;
    rh.ray.tfar = len;
    rh.ray.time = 0.0f;
    rh.ray.mask = 0xffffffffu;
    rh.ray.id = 0;
    rh.ray.flags = 0;
    rh.hit.geomID = RTC_INVALID_GEOMETRY_ID;
    rh.hit.instID[0] = RTC_INVALID_GEOMETRY_ID;
    rtcIntersect1(scene, &ctx, &rh);
}

#endif
