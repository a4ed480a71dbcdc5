-- OPEN (found by fuzz/api.lua, 2026-11-26): two faults from one big brittle body.
--
-- 1. Cascade: a 40 m glass box dropped on rock breaks, and its fragments
--    break again whenever their 0.5 s guard runs out while they still hit
--    hard (they stay far above the 0.05 voxel^3 floor): 1 -> 12 -> 155 ->
--    980 -> 3829 -> 8526 bodies within 3 simulated seconds; one
--    world:step(0.25) then takes 20 s of CPU. No limit on the body count
--    stops it.
-- 2. Crash (SIGSEGV) in the step that follows: a fragment hull has an edge
--    with only one face (edge_faces[2 * 4 + 1] = 4294967295, a hull of 19
--    vertices, 20 faces, 37 edges), and q_poly_poly's Gauss-map loop
--    (engine/physics/collide.c:1006 poly_face_plane) reads plane
--    4294967295: collide_pairs <- q_bodies_collide <- q_bodies_step.
--
--   lua5.4 spec/regress/open/brittle_cascade_crash.lua    (about 40 s; prints "no crash" once fixed)
package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local w = quarry.world.new{}
w.terrain:fill_block({0, -2, 0}, {400, 4, 400}, "rock")
w:spawn{shape = "box", size = 40, position = {0, 40, 0}, material = "glass", velocity = {0, -20, 0}}
for _ = 1, 16 do
  local t0 = os.clock()
  w:step(0.25)
  print(string.format("t = %.2f s: %d bodies (step %.2f s cpu)", w:time(), w:stats().bodies, os.clock() - t0))
  if w:stats().bodies > 20000 then break end
end
print("no crash")
