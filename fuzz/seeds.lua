-- Writes real world saves made by the engine into a seed corpus directory
-- for the world-loader fuzzer: lua5.4 fuzz/seeds.lua OUTDIR (with quarry.so
-- on package.cpath). Small worlds, so that mutations reach every record.
local quarry = require "quarry"
local out = assert(arg[1], "usage: seeds.lua OUTDIR")

local function save(name, w)
  assert(w:save(out .. "/" .. name .. ".qw"))
  w:destroy()
end

save("empty", quarry.world.new{})
do
  local w = quarry.world.new{seed = 7, voxel_size = 0.5}
  w.terrain:fill_ball({0, 0, 0}, 3, "rock")
  w:step(1 / 30)
  save("ball", w)
end
do
  local w = quarry.world.new{}
  w.terrain:fill_block({4, 2, 4}, {6, 3, 5}, "brick")
  w.terrain:carve_ball({4, 2, 4}, 2)
  w.terrain:fill_ball({-20, 0, 3}, 2.5, "water")
  w.terrain:paint_ball({4, 2, 4}, 3, "grass")
  save("edits", w)
end
do
  local w = quarry.world.new{}
  w.terrain:generate{kind = "hills", size = {24, 16, 24}, seed = 3}
  save("hills", w)
end
do
  local ok = pcall(quarry.material.define, {name = "fuzzium", density = 3000, color = {1, 0, 1}})
  local w = quarry.world.new{gravity = {0, -1, 0}, substeps = 2}
  w.terrain:fill_ball({1, 1, 1}, 2, ok and "fuzzium" or "metal")
  w.terrain:fill_ball({40, 1, 1}, 1.5, "ice")
  save("material", w)
end

-- Worlds with rigid bodies (file format version 2: engine/physics/bodies_io.c):
-- one world per shape kind, with bodies moving, resting in contact (the
-- contact cache is saved too), asleep, static and named.
local SHAPES = {
  sphere = {shape = "sphere", radius = 0.5},
  box = {shape = "box", size = {1, 0.5, 2}},
  capsule = {shape = "capsule", radius = 0.3, height = 1.4},
  hull = {shape = "hull", points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.7, 0.7, 0.7}}},
}
do
  -- a small L of terrain: concave, decomposed into a few hulls (the file
  -- stays under the fuzzer's -max_len)
  local w = quarry.world.new{}
  w.terrain:fill_region({0, 0, 0}, {2, 1, 1}, "rock")
  w.terrain:fill_region({0, 1, 0}, {1, 2, 1}, "rock")
  SHAPES.mesh = {shape = "mesh", mesh = w.terrain:mesh({-1, -1, -1}, {3, 3, 2})}
  w:destroy()
end
for _, kind in ipairs{"sphere", "box", "capsule", "hull", "mesh"} do
  local w = quarry.world.new{seed = 11}
  w.terrain:fill_block({0, -1, 0}, {12, 2, 12}, "rock")
  local function def(extra)
    local d = {}
    for k, v in pairs(SHAPES[kind]) do d[k] = v end
    for k, v in pairs(extra) do d[k] = v end
    return w:spawn(d)
  end
  def{position = {0, 0.8, 0}, material = "wood", name = kind .. "-resting"}
  def{position = {0.2, 2.5, 0.1}, material = "metal"}
  def{position = {3, 6, -2}, velocity = {1, -2, 0.5}, angular_velocity = {0, 3, 1},
      material = kind == "mesh" and "ice" or "glass",
      rotation = quarry.quat.from_euler(0.3, 0.2, 0.1)}
  def{position = {-3, 1, 3}, static = true, material = "concrete"}
  for _ = 1, 40 do w:step(1 / 60) end
  save("bodies-" .. kind, w)
end
do
  -- fragments of a shattered body and bodies detached from the terrain, in
  -- a world that detaches on its own
  local w = quarry.world.new{auto_detach = true}
  w.terrain:fill_block({0, -1, 0}, {16, 2, 16}, "rock")
  w.terrain:fill_block({4, 3, 0}, {2, 4, 2}, "brick")
  w.terrain:fill_ball({-4, 6, 2}, 1.5, "glass")
  local b = w:spawn{shape = "box", size = 1, position = {0, 5, 0}, material = "glass"}
  assert(b:shatter{pieces = 5, seed = 2})
  w.terrain:detach_islands()
  w:step(1 / 60)
  save("bodies-fragments", w)
end
do
  -- bodies asleep on the ground
  local w = quarry.world.new{}
  w.terrain:fill_block({0, -1, 0}, {8, 2, 8}, "rock")
  w:spawn{shape = "box", size = 1, position = {0, 0.5, 0}}
  w:spawn{shape = "sphere", radius = 0.4, position = {2, 0.4, 0}}
  for _ = 1, 240 do w:step(1 / 60) end
  save("bodies-asleep", w)
end
