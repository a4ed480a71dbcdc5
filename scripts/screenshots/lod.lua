-- docs/img/lod.png: the clipmap LOD debug view (graphics.debug{lod = true}):
-- a hills world seen from above with the viewer at its centre; each chunk is
-- coloured by its level, LOD0 grass, then sand, rock, snow and brick (LOD4).
local quarry = require "quarry"
local g = quarry.graphics
local SIZE = 512

function quarry.load()
  world = quarry.world.new{}
  world.terrain:generate{kind = "hills", size = {SIZE, 64, SIZE}, seed = 3}
  world:set_viewer({SIZE / 2, 40, SIZE / 2}, {distances = {40, 80, 140, 220}})
  world:lod_mesh{wait = true} -- the renderer never waits for the clipmap's worker
  g.debug{lod = true}
  g.set_clear_color(0.53, 0.72, 0.92)
  g.set_camera{position = {SIZE / 2, 330, -60}, target = {SIZE / 2, 0, SIZE * 0.56}, fov = math.rad(60)}
end

function quarry.draw()
  assert(g.draw_world(world, {fog = false}))
  local s = world:stats()
  local t = s.lod_triangles
  g.text(string.format("LOD debug view: viewer at the centre | triangles LOD0 %d  LOD1 %d  LOD2 %d  LOD3 %d  " ..
                       "LOD4 %d  seams %d", t[1], t[2], t[3], t[4], t[5], s.seam_triangles), 10, 10, {scale = 1.5})
  g.text("LOD0 grass, LOD1 sand, LOD2 rock, LOD3 snow, LOD4 brick", 10, 32,
         {scale = 1.5, color = {0.9, 0.95, 1, 0.85}})
end
