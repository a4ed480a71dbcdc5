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
