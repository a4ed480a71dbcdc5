-- Scenario runner: set a world up, drive it frame by frame with inputs,
-- check assertions at given frames, and return the final world:hash().
--
--   local scenario = require "scenario"
--   local hash, world = scenario.run{
--     world = {seed = 1},                       -- quarry.world.new definition
--     setup = function(world) ... end,           -- once, before frame 1
--     frames = 120,                              -- fixed steps to run
--     inputs = { [10] = function(world, frame) ... end },   -- run before stepping that frame
--     every = function(world, frame) ... end,    -- optional, before each frame's step
--     checks = { [60] = function(world, frame) ... end },   -- run after stepping that frame
--   }
--
-- Each frame steps the world by exactly one fixed step, so a scenario is a
-- pure function of its description: run it twice and the hashes match.
local quarry = require "quarry"

local scenario = {}

local KNOWN = {world = true, setup = true, frames = true, inputs = true, every = true, checks = true}

function scenario.run(desc)
  assert(type(desc) == "table", "scenario.run expects a table")
  for k in pairs(desc) do
    if not KNOWN[k] then error("scenario.run: unknown field '" .. tostring(k) .. "'", 2) end
  end
  local frames = desc.frames or 60
  assert(math.type(frames) == "integer" and frames >= 0, "scenario.run: frames must be an integer >= 0")
  local world = quarry.world.new(desc.world or {})
  local dt = world:settings().step
  if desc.setup then desc.setup(world) end
  local inputs, checks = desc.inputs or {}, desc.checks or {}
  for frame = 1, frames do
    if desc.every then desc.every(world, frame) end
    if inputs[frame] then inputs[frame](world, frame) end
    local n = world:step(dt)
    assert(n == 1, "scenario.run: a fixed step did not run exactly once")
    if checks[frame] then checks[frame](world, frame) end
  end
  return world:hash(), world
end

return scenario
