-- Quarry sandbox: a generated hill world, stepped every frame.
--
--   build/quarry examples/sandbox.lua            (a window; Escape quits)
--   build/quarry --headless --frames 120 examples/sandbox.lua
--
-- Edit and save this file while it runs: the host reloads it in place. State
-- lives in globals created in quarry.load, which a reload does not call
-- again, so the world survives; the callbacks below are replaced.

local quarry = require "quarry"

local SKY = {0.53, 0.72, 0.92}

function quarry.load(args)
  world = quarry.world.new{}
  world.terrain:generate{kind = "hills", size = {128, 48, 128}, seed = 1}
  frames = 0

  local s = world:stats()
  local lo, hi = world.terrain:bounds()
  print(string.format("sandbox: hills 128x48x128, %d chunks, %.1f MiB, bounds %s..%s, hash %s",
                      s.chunks, s.memory / (1024 * 1024), tostring(lo), tostring(hi),
                      world:hash()))
end

function quarry.update(dt)
  world:step(dt)
  frames = frames + 1
end

function quarry.draw()
  quarry.graphics.clear(SKY)
end

function quarry.keypressed(key)
  if key == "f1" then
    local d = quarry.graphics.debug()
    quarry.graphics.debug{wireframe = not d.wireframe}
  end
end

function quarry.quit()
  print(string.format("sandbox: %d frames, %.2f s simulated, hash %s",
                      frames, world:time(), world:hash()))
end
