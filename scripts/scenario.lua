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
--     save_at = 50,                              -- optional: after frame 50 (and its check),
--                                                -- world:save, quarry.world.load, go on with
--                                                -- the loaded world (0 = before frame 1)
--     save_path = "/tmp/x.qw",                   -- optional: where (default: a temp file,
--                                                -- removed again); kept when given
--     on_load = function(world, frame) ... end,  -- optional: after the load, to register
--                                                -- world:on handlers again on the new world
--   }
--
-- Each frame steps the world by exactly one fixed step, so a scenario is a
-- pure function of its description: run it twice and the hashes match. With
-- save_at the world that inputs, checks and `every` receive after the load is
-- the loaded one; bodies and handlers captured from the old world are gone
-- (it is destroyed), so find bodies again through world:bodies() or on_load.
local quarry = require "quarry"

local scenario = {}

local KNOWN = {world = true, setup = true, frames = true, inputs = true, every = true, checks = true,
               save_at = true, save_path = true, on_load = true}

-- Saves the world and loads it back; returns the loaded world.
local function save_and_load(world, desc, frame)
  local path = desc.save_path
  if not path then
    path = os.tmpname()
    os.remove(path)
    path = path .. ".qw"
  end
  local ok, err = world:save(path)
  if not ok then error("scenario.run: world:save at frame " .. frame .. " failed: " .. tostring(err), 0) end
  local loaded, lerr = quarry.world.load(path)
  if not desc.save_path then os.remove(path) end
  if not loaded then error("scenario.run: quarry.world.load at frame " .. frame .. " failed: " .. tostring(lerr), 0) end
  world:destroy()
  if desc.on_load then desc.on_load(loaded, frame) end
  return loaded
end

function scenario.run(desc)
  assert(type(desc) == "table", "scenario.run expects a table")
  for k in pairs(desc) do
    if not KNOWN[k] then error("scenario.run: unknown field '" .. tostring(k) .. "'", 2) end
  end
  local frames = desc.frames or 60
  assert(math.type(frames) == "integer" and frames >= 0, "scenario.run: frames must be an integer >= 0")
  local save_at = desc.save_at
  assert(save_at == nil or (math.type(save_at) == "integer" and save_at >= 0 and save_at <= frames),
         "scenario.run: save_at must be an integer frame in 0..frames")
  assert(desc.save_path == nil or type(desc.save_path) == "string", "scenario.run: save_path must be a string")
  assert(desc.on_load == nil or type(desc.on_load) == "function", "scenario.run: on_load must be a function")
  local world = quarry.world.new(desc.world or {})
  local dt = world:settings().step
  if desc.setup then desc.setup(world) end
  if save_at == 0 then world = save_and_load(world, desc, 0) end
  local inputs, checks = desc.inputs or {}, desc.checks or {}
  for frame = 1, frames do
    if desc.every then desc.every(world, frame) end
    if inputs[frame] then inputs[frame](world, frame) end
    local n = world:step(dt)
    assert(n == 1, "scenario.run: a fixed step did not run exactly once")
    if checks[frame] then checks[frame](world, frame) end
    if save_at == frame then world = save_and_load(world, desc, frame) end
  end
  return world:hash(), world
end

return scenario
