-- docs/img/fracture.png: examples/shatter.lua a moment after the metal ball
-- (thrown at frame 20) has gone through the glass tower, seen from closer
-- than the example's own camera. `make screenshots` runs it with --frames
-- and --screenshot in an offscreen window.
local quarry = require "quarry"
local shots = require "screenshots.common"
shots.example("shatter")
shots.fixed_step()

local load = quarry.load
function quarry.load(args)
  load(args)
  quarry.graphics.set_camera{position = {16.8, 10.9, 15.6}, target = {20.8, 9.0, 20.3}, fov = math.rad(55)}
end
