-- Convex decomposition viewer: loads a mesh, decomposes it with HACD
-- (Mesh:decompose, seed 001's settings) and shows the hulls in colours; the
-- merge trace can be stepped through, the visual debugging seed 001 used to
-- find what went wrong in the original HACD.
--
--   build/quarry examples/decompose.lua [mesh file] [concavity] [--trace]
--   SDL_VIDEODRIVER=offscreen build/quarry --headless --frames 5 examples/decompose.lua
--
-- Without a file it takes assimp-testmodels' OFF/Wuson.off when installed,
-- else a generated torus. --trace starts playing the trace from the first
-- merge.
--
-- Keys:
--   Tab            switch between the final hulls and the trace
--   Right / Left   one merge forward / back      Up / Down  100 merges
--   End / Home     last / first merge            Space      play the trace
--   W / S          zoom in / out                 A / D      turn the view
--   F12            screenshot (decompose-N.png)  Esc        quit
-- In the trace, each cluster's triangles are drawn in its colour with the
-- cluster borders bright; the cluster made by the current merge is drawn
-- with its predicted hull in white.

local quarry = require "quarry"
local g = quarry.graphics

local DEFAULT = "/usr/share/assimp/models/OFF/Wuson.off"

local function torus(R, r, nu, nv)
  local v, idx = {}, {}
  for i = 0, nu - 1 do
    local u = 2 * math.pi * i / nu
    for j = 0, nv - 1 do
      local w = 2 * math.pi * j / nv
      v[#v + 1] = {(R + r * math.cos(w)) * math.cos(u), r * math.sin(w), (R + r * math.cos(w)) * math.sin(u)}
    end
  end
  for i = 0, nu - 1 do
    for j = 0, nv - 1 do
      local a, b = i * nv + j, ((i + 1) % nu) * nv + j
      local c, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
      for _, k in ipairs{a, d, c, a, c, b} do idx[#idx + 1] = k + 1 end
    end
  end
  return quarry.mesh.new{vertices = v, indices = idx}
end

-- A colour per id, spread around the hue circle by the golden ratio.
local function colour(id)
  local h = (id * 0.6180339887) % 1
  local function ch(o)
    local x = math.abs((h * 6 + o) % 6 - 3) - 1
    return 0.25 + 0.7 * math.max(0, math.min(1, x))
  end
  return {ch(0), ch(4), ch(2)}
end

local function file_exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- Union-find over triangles replaying the first k merges of the trace.
local function replay(k)
  parent = {}
  for t = 1, ntri do parent[t] = t end
  for i = 1, k do
    local s = info.trace[i]
    parent[find(s.b)] = find(s.a)
  end
  step = k
end

function find(x)
  local p = parent
  while p[x] ~= x do
    p[x] = p[p[x]]
    x = p[x]
  end
  return x
end

-- Edges of the predicted hull of the cluster holding triangle t.
local function cluster_hull(t)
  local root, pts, seen = find(t), {}, {}
  for u = 1, ntri do
    if find(u) == root then
      for k = 3 * u - 2, 3 * u do
        local i = idx[k]
        if not seen[i] then seen[i] = true; pts[#pts + 1] = verts[i] end
      end
    end
  end
  local ok, h = pcall(quarry.hull, pts)
  return ok and h or nil
end

local function set_step(k)
  k = math.max(0, math.min(#info.trace, k))
  if k < step then replay(k) end
  for i = step + 1, k do
    local s = info.trace[i]
    parent[find(s.b)] = find(s.a)
  end
  step = k
  current = k > 0 and cluster_hull(info.trace[k].a) or nil
end

function quarry.load(args)
  local path, concavity, start_trace = nil, 10, false
  for _, a in ipairs(args or {}) do
    if a == "--trace" then start_trace = true
    elseif tonumber(a) then concavity = tonumber(a)
    else path = a end
  end
  if path then
    mesh = assert(quarry.mesh.load(path))
    name = path:match("[^/]+$")
  elseif file_exists(DEFAULT) then
    mesh, name = assert(quarry.mesh.load(DEFAULT)), "Wuson.off"
  else
    mesh, name = torus(1, 0.3, 48, 24), "torus"
  end
  local err
  hulls, info = mesh:decompose{concavity = concavity, trace = true}
  if not hulls then error(info) end
  print(string.format("decompose: %s, %d triangles -> %d hulls, max concavity %.2f, %d merges, %.1f ms",
                      name, mesh:triangle_count(), info.hulls, info.max_concavity, info.merges, info.time_ms))

  verts, idx = mesh:vertices(), mesh:indices()
  ntri = #idx // 3
  -- each mesh edge once, with its triangles
  edges = {}
  local by_key = {}
  for t = 1, ntri do
    for k = 0, 2 do
      local a, b = idx[3 * t - 2 + k], idx[3 * t - 2 + (k + 1) % 3]
      if a > b then a, b = b, a end
      local key = a * 4294967296 + b
      local e = by_key[key]
      if e then e[4] = t else e = {a, b, t, t}; by_key[key] = e; edges[#edges + 1] = e end
    end
  end
  -- hull edges, once per hull
  hull_edges = {}
  for i, h in ipairs(hulls) do
    local hv, hi, seen = h:vertices(), h:indices(), {}
    for k = 1, #hi, 3 do
      for j = 0, 2 do
        local a, b = hi[k + j], hi[k + (j + 1) % 3]
        if a > b then a, b = b, a end
        if not seen[a * 65536 + b] then
          seen[a * 65536 + b] = true
          hull_edges[#hull_edges + 1] = {hv[a], hv[b], colour(i)}
        end
      end
    end
  end

  local lo, hi = mesh:bounds()
  centre = (lo + hi) * 0.5
  radius = (hi - lo):length() * 0.5
  distance, yaw, pitch = 2.2 * radius, math.rad(30), math.rad(20)
  mode, playing, shots, frames = "hulls", false, 0, 0
  replay(0)
  set_step(#info.trace)
  if start_trace then
    set_step(0)
    mode, playing = "trace", true
  end
  g.set_clear_color({0.08, 0.09, 0.11})
end

function quarry.update(dt)
  frames = frames + 1
  local key = quarry.keyboard.is_down
  if key("a") then yaw = yaw - dt end
  if key("d") then yaw = yaw + dt end
  if key("w") then distance = math.max(0.2 * radius, distance * (1 - dt)) end
  if key("s") then distance = math.min(20 * radius, distance * (1 + dt)) end
  if playing then
    local n = math.max(1, #info.trace // 300)
    set_step(step + n)
    if step >= #info.trace then playing = false end
  end
  local eye = centre + quarry.vec3(math.cos(pitch) * math.cos(yaw), math.sin(pitch), math.cos(pitch) * math.sin(yaw)) *
                       distance
  g.set_camera{position = eye, target = centre, fov = math.rad(50)}
end

function quarry.draw()
  if mode == "hulls" then
    for _, e in ipairs(hull_edges) do g.line(e[1], e[2], e[3]) end
    for _, e in ipairs(edges) do g.line(verts[e[1]], verts[e[2]], {0.35, 0.35, 0.38}) end
  else
    for _, e in ipairs(edges) do
      local ra, rb = find(e[3]), find(e[4])
      local c = colour(ra)
      if ra == rb then c = {c[1] * 0.45, c[2] * 0.45, c[3] * 0.45} end
      g.line(verts[e[1]], verts[e[2]], c)
    end
    if current then
      local hv, hi = current:vertices(), current:indices()
      for k = 1, #hi, 3 do
        for j = 0, 2 do g.line(hv[hi[k + j]], hv[hi[k + (j + 1) % 3]], {1, 1, 1}) end
      end
    end
  end
  local s = step > 0 and info.trace[step]
  g.text(string.format("%s: %d tris -> %d hulls | concavity %.2f | %.0f ms | %s",
                       name, ntri, info.hulls, info.max_concavity, info.time_ms,
                       mode == "hulls" and "final hulls" or
                       string.format("merge %d/%d: %d+%d err %.2f, %d clusters", step, #info.trace,
                                     s and s.a or 0, s and s.b or 0, s and s.error or 0, ntri - step)),
         10, 10)
  g.text("Tab hulls/trace | Left/Right step, Up/Down 100, Home/End, Space play | A/D turn, W/S zoom | F12 shot",
         10, 34, {color = {0.85, 0.9, 1, 0.8}, scale = 1.5})
end

function quarry.keypressed(k)
  if k == "tab" then
    mode = mode == "hulls" and "trace" or "hulls"
  elseif k == "right" then set_step(step + 1)
  elseif k == "left" then set_step(step - 1)
  elseif k == "up" then set_step(step + 100)
  elseif k == "down" then set_step(step - 100)
  elseif k == "end" then set_step(#info.trace)
  elseif k == "home" then set_step(0)
  elseif k == "space" then
    if step >= #info.trace then set_step(0) end
    playing = not playing
    mode = "trace"
  elseif k == "f12" then
    shots = shots + 1
    local file = string.format("decompose-%d.png", shots)
    local ok, err = g.screenshot(file)
    print(ok and ("saved " .. file) or err)
  end
end

function quarry.quit()
  print(string.format("decompose: %d frames, step %d of %d", frames, step, #info.trace))
end
