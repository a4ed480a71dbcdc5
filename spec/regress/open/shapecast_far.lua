-- OPEN (found by fuzz/api.lua seed 12, 2026-11-26): world:shapecast over a
-- long path. A 0.5 m sphere cast from {x, 4097, 0} to {0, -3, -1}, which
-- ends inside a rock ball of radius 4 at the origin, on 1 thread
-- (normal -O2 build, shared 2-core VM):
--   x = -1e3:   hit at 4212.89 in 0.01 s
--   x = -1e6:   hit at 1000005.12 in 4.2 s
--   x = -1e9:   nil (a miss: the cast ends inside the rock) after 75 s
--   x = -1e300: a hit whose distance is NaN, after 71 s (a hull: the same, 67 s)
-- The time grows with the path length (no limit, no error), a far cast
-- misses, and NaN reaches Lua. Expected: from/to beyond the 1e7 m
-- coordinate limit refused with an error naming the argument (as spawn and
-- b.position do), and a bounded time for any accepted cast.
--
--   lua5.4 spec/regress/open/shapecast_far.lua [x]   (default -1e300; about 70 s)
package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local w = quarry.world.new{threads = 0}
w.terrain:fill_ball({0, 0, 0}, 4, "rock")
local from = tonumber(arg[1]) or -1e300
local t0 = os.clock()
local ok, hit = pcall(w.shapecast, w, {shape = "sphere", radius = 0.5}, {from, 4097, 0}, {0, -3, -1})
print(string.format("shapecast from x = %g: %s, distance %s, %.2f s", from, tostring(ok),
                    ok and tostring(hit and hit.distance) or tostring(hit), os.clock() - t0))
if ok and hit and hit.distance ~= hit.distance then print("NaN distance") end
