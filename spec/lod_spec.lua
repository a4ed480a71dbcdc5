-- Clipmap LOD (issue 8): crack-free meshes for mixed levels, distance to
-- LOD0 per level, triangle falloff, edits on LOD borders. Every check is an
-- invariant computed here from the index lists or a brute-force distance.
local quarry = require "quarry"

-- Directed edge counts: a crack is an edge without its reverse. Returns the
-- number of unmatched directed edges and of edges not used exactly once each way.
local function edge_check(m)
  local ix = m:indices()
  local d = {}
  for t = 0, #ix // 3 - 1 do
    for k = 0, 2 do
      local a, b = ix[3 * t + k + 1], ix[3 * t + (k + 1) % 3 + 1]
      assert(a ~= b, "degenerate triangle")
      local key = a * 16777216 + b
      d[key] = (d[key] or 0) + 1
    end
  end
  local open, nonmanifold = 0, 0
  for key, n in pairs(d) do
    local a, b = key // 16777216, key % 16777216
    if (d[b * 16777216 + a] or 0) ~= n then open = open + 1 end
    if n ~= 1 then nonmanifold = nonmanifold + 1 end
  end
  return open, nonmanifold
end

local function plain(m)
  local v, ix = m:vertices(), m:indices()
  local p = {}
  for i = 1, #v do p[i] = {v[i].x, v[i].y, v[i].z} end
  return p, ix
end

local function sub(a, b) return {a[1] - b[1], a[2] - b[2], a[3] - b[3]} end
local function dot(a, b) return a[1] * b[1] + a[2] * b[2] + a[3] * b[3] end

-- Distance from p to triangle abc (Ericson, Real-Time Collision Detection 5.1.5).
local function point_triangle(p, a, b, c)
  local ab, ac, ap = sub(b, a), sub(c, a), sub(p, a)
  local d1, d2 = dot(ab, ap), dot(ac, ap)
  local q
  if d1 <= 0 and d2 <= 0 then q = a else
    local bp = sub(p, b)
    local d3, d4 = dot(ab, bp), dot(ac, bp)
    if d3 >= 0 and d4 <= d3 then q = b else
      local vc = d1 * d4 - d3 * d2
      if vc <= 0 and d1 >= 0 and d3 <= 0 then
        local v = d1 / (d1 - d3); q = {a[1] + v * ab[1], a[2] + v * ab[2], a[3] + v * ab[3]}
      else
        local cp = sub(p, c)
        local d5, d6 = dot(ab, cp), dot(ac, cp)
        if d6 >= 0 and d5 <= d6 then q = c else
          local vb = d5 * d2 - d1 * d6
          if vb <= 0 and d2 >= 0 and d6 <= 0 then
            local w = d2 / (d2 - d6); q = {a[1] + w * ac[1], a[2] + w * ac[2], a[3] + w * ac[3]}
          else
            local va = d3 * d6 - d5 * d4
            if va <= 0 and (d4 - d3) >= 0 and (d5 - d6) >= 0 then
              local w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
              q = {b[1] + w * (c[1] - b[1]), b[2] + w * (c[2] - b[2]), b[3] + w * (c[3] - b[3])}
            else
              local den = 1 / (va + vb + vc)
              local v, w = vb * den, vc * den
              q = {a[1] + ab[1] * v + ac[1] * w, a[2] + ab[2] * v + ac[2] * w, a[3] + ab[3] * v + ac[3] * w}
            end
          end
        end
      end
    end
  end
  local e = sub(p, q)
  return math.sqrt(dot(e, e))
end

-- Bucketed brute force: distance from each sample point to the nearest
-- triangle of m (buckets of B voxels by triangle bounds, rings searched
-- until the best distance is inside the searched radius).
local B = 4
local function surface(m)
  local p, ix = plain(m)
  local grid = {}
  for t = 0, #ix // 3 - 1 do
    local a, b, c = p[ix[3 * t + 1]], p[ix[3 * t + 2]], p[ix[3 * t + 3]]
    local lo, hi = {}, {}
    for k = 1, 3 do
      lo[k] = math.floor(math.min(a[k], b[k], c[k]) / B)
      hi[k] = math.floor(math.max(a[k], b[k], c[k]) / B)
    end
    for x = lo[1], hi[1] do for y = lo[2], hi[2] do for z = lo[3], hi[3] do
      local key = (x * 4096 + y) * 4096 + z
      grid[key] = grid[key] or {}
      table.insert(grid[key], {a, b, c})
    end end end
  end
  return function(q)
    local cx, cy, cz = math.floor(q[1] / B), math.floor(q[2] / B), math.floor(q[3] / B)
    local best = math.huge
    for r = 0, 64 do
      for x = cx - r, cx + r do for y = cy - r, cy + r do for z = cz - r, cz + r do
        if math.max(math.abs(x - cx), math.abs(y - cy), math.abs(z - cz)) == r then
          local list = grid[(x * 4096 + y) * 4096 + z]
          if list then
            for _, tri in ipairs(list) do
              local d = point_triangle(q, tri[1], tri[2], tri[3])
              if d < best then best = d end
            end
          end
        end
      end end end
      if best <= r * B then return best end
    end
    return best
  end
end

-- Symmetric sampled Hausdorff distance: vertices and triangle centroids of
-- each mesh against the other's surface.
local function hausdorff(m1, m2)
  local worst = 0
  for _, pair in ipairs{{m1, m2}, {m2, m1}} do
    local dist = surface(pair[2])
    local p, ix = plain(pair[1])
    for i = 1, #p do worst = math.max(worst, dist(p[i])) end
    for t = 0, #ix // 3 - 1, 3 do
      local a, b, c = p[ix[3 * t + 1]], p[ix[3 * t + 2]], p[ix[3 * t + 3]]
      worst = math.max(worst, dist{(a[1] + b[1] + c[1]) / 3, (a[2] + b[2] + c[2]) / 3, (a[3] + b[3] + c[3]) / 3})
    end
  end
  return worst
end

describe("clipmap LOD", function()
  it("uniform LOD meshes of a closed solid are closed and fall 4x per level", function()
    local w = quarry.world.new{}
    w.terrain:fill_ball({60, 40, 70}, 30, "rock")
    local prev
    for lod = 0, 4 do
      local m = w.terrain:mesh({0, 0, 0}, {128, 96, 128}, {lod = lod})
      local open, nonman = edge_check(m)
      assert.are.equal(0, open)
      assert.are.equal(0, nonman)
      assert.is_true(m:volume() > 0)
      if prev and lod <= 3 then
        local ratio = prev / m:triangle_count()
        assert.is_true(ratio > 3 and ratio < 5, "lod " .. lod .. " ratio " .. ratio)
      end
      prev = m:triangle_count()
    end
  end)

  it("active meshes plus seams are watertight for many random viewers", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_ball({64, 48, 64}, 44, "rock")
    T:fill_region({100, 20, 10}, {140, 60, 50}, "dirt")
    T:carve_ball({90, 60, 80}, 12)
    local rng = 12345
    local function rand(n) rng = (rng * 1103515245 + 12345) % 2147483648; return rng % n end
    local mixed = 0
    local worst_nonman = 0
    for i = 1, 25 do
      local v = {rand(200) - 30, rand(120) - 10, rand(200) - 30}
      w:set_viewer(v, {distances = {6 + rand(20), 40, 60, 80}})
      local m, info = w:lod_mesh{wait = true}
      local open, nonman = edge_check(m)
      assert.are.equal(0, open, "crack for viewer " .. table.concat(v, ","))
      -- vertex clustering may pinch where a node holds two sheets; rare
      worst_nonman = math.max(worst_nonman, nonman / (3 * m:triangle_count()))
      assert.is_true(m:volume() > 0)
      local levels = 0
      for _, n in ipairs(info.triangles_per_level) do if n > 0 then levels = levels + 1 end end
      if levels > 1 then mixed = mixed + 1 end
      assert.are.equal(info.chunk_triangles + info.seam_triangles, m:triangle_count())
    end
    assert.is_true(mixed >= 8, "only " .. mixed .. " viewers gave mixed levels")
    print(string.format("worst share of non-manifold edges: %.5f", worst_nonman))
    assert.is_true(worst_nonman < 0.02)
  end)

  it("LOD n stays within c * 2^n voxels of LOD 0 on hills", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {64, 40, 64}, seed = 3}
    local m0 = w.terrain:mesh({0, 0, 0}, {64, 40, 64})
    local c = 0
    local counts = {m0:triangle_count()}
    for lod = 1, 3 do
      local m = w.terrain:mesh({0, 0, 0}, {64, 40, 64}, {lod = lod})
      counts[#counts + 1] = m:triangle_count()
      local h = hausdorff(m, m0)
      c = math.max(c, h / 2 ^ lod)
      print(string.format("lod %d: %d triangles (LOD0 %d), Hausdorff %.3f voxels, c = %.3f", lod,
                          m:triangle_count(), m0:triangle_count(), h, h / 2 ^ lod))
    end
    assert.is_true(c <= 1.0, "c = " .. c)
    for lod = 1, 2 do
      local ratio = counts[lod] / counts[lod + 1]
      assert.is_true(ratio > 3 and ratio < 5.5, "hills ratio at lod " .. lod .. ": " .. ratio)
    end
  end)

  it("an edit on an LOD border remeshes both sides and stays crack-free", function()
    local w = quarry.world.new{}
    w.terrain:fill_region({0, 0, 0}, {128, 40, 64}, "rock")
    -- viewer over chunk x = 0: chunk x = 0 at LOD0, x = 1 at LOD1 (border at x = 32)
    w:set_viewer({10, 40, 20}, {distances = {20, 60, 200, 400}})
    local before, info0 = w:lod_mesh{wait = true}
    assert.are.equal(0, (edge_check(before)))
    assert.is_true(info0.triangles_per_level[1] > 0 and info0.triangles_per_level[2] > 0)
    w.terrain:carve_ball({32, 40, 20}, 6)
    local after, info1 = w:lod_mesh{wait = true}
    -- only the pieces the edit touched were remeshed, on both sides of x = 32
    assert.is_true(info1.remeshed_chunks >= 2 and info1.remeshed_chunks < info0.remeshed_chunks,
                   info1.remeshed_chunks .. " of " .. info0.remeshed_chunks)
    -- and the result equals a build from scratch
    local w2 = quarry.world.new{}
    w2.terrain:fill_region({0, 0, 0}, {128, 40, 64}, "rock")
    w2.terrain:carve_ball({32, 40, 20}, 6)
    w2:set_viewer({10, 40, 20}, {distances = {20, 60, 200, 400}})
    local fresh = w2:lod_mesh{wait = true}
    assert.are.equal(fresh:triangle_count(), after:triangle_count())
    assert.are.same(fresh:vertices(), after:vertices())
    -- a viewer move remeshes nothing at LOD0
    w:set_viewer({100, 40, 20})
    local _, info2 = w:lod_mesh{wait = true}
    assert.are.equal(0, info2.remeshed_chunks)
    local open, nonman = edge_check(after)
    assert.are.equal(0, open)
    assert.are.equal(0, nonman)
    -- the pit shows on both sides of the border: vertices below the top at x < 32 and x > 32
    local left, right = false, false
    for _, v in ipairs(after:vertices()) do
      if v.y < 39 then
        if v.x < 31 then left = true elseif v.x > 33 then right = true end
      end
    end
    assert.is_true(left and right)
    assert.is_true(after:volume() < before:volume() - 200)
    -- against the LOD0 mesh of the carved block, the pit is where it should be
    local lod0 = w.terrain:mesh({-1, -1, -1}, {129, 41, 65})
    assert.is_true(math.abs(after:volume() - lod0:volume()) < 0.01 * lod0:volume())
  end)

  -- Every vertex and index of a mesh as one string: equal strings are equal
  -- meshes, down to the float bits printed by %a.
  local function serial(m)
    local parts = {}
    for _, v in ipairs(m:vertices()) do
      parts[#parts + 1] = string.format("%a %a %a", v.x, v.y, v.z)
    end
    parts[#parts + 1] = table.concat(m:indices(), " ")
    return table.concat(parts, "\n")
  end

  local D = {40, 80, 120, 160}
  -- clipmap.h's rule, computed here: level = number of distances <= the
  -- distance from the viewer to the chunk's box
  local function level(v, cx, cy, cz)
    local d2 = 0
    for a, c in ipairs{cx, cy, cz} do
      local lo, hi = c * 32, c * 32 + 32
      local e = v[a] < lo and lo - v[a] or v[a] > hi and v[a] - hi or 0
      d2 = d2 + e * e
    end
    local d, L = math.sqrt(d2), 0
    while L < 4 and d >= D[L + 1] do L = L + 1 end
    return L
  end
  local LO, HI = {-1, -1, -1}, {193, 49, 193}
  local function hills(threads)
    local w = quarry.world.new{threads = threads}
    w.terrain:generate{kind = "hills", size = {192, 48, 192}, seed = 5}
    return w
  end
  local function fresh(v, edit, threads)
    local w = hills(threads)
    if edit then edit(w) end
    w:set_viewer(v, {distances = D})
    return (w:lod_mesh(LO, HI, {wait = true}))
  end

  it("a viewer move rebuilds only the blocks whose level changed and equals a fresh build", function()
    local w = hills()
    local v = {40, 30, 40}
    w:set_viewer(v, {distances = D})
    local _, first = w:lod_mesh(LO, HI, {wait = true})
    -- blocks cover the chunks [c0 - 1, c1] of the box: x, z -2..6, y -2..1
    assert.are.equal(9 * 4 * 9, first.blocks)
    assert.are.equal(first.blocks, first.rebuilt_blocks)
    for step, nv in ipairs{{48, 30, 40}, {80, 30, 40}, {80, 30, 72}, {81, 31, 72}, {150, 20, 160}, {40, 30, 40}} do
      w:set_viewer(nv)
      local m, info = w:lod_mesh(LO, HI, {wait = true})
      local changed = 0
      for cz = -2, 6 do for cy = -2, 1 do for cx = -2, 6 do
        if level(v, cx, cy, cz) ~= level(nv, cx, cy, cz) then changed = changed + 1 end
      end end end
      v = nv
      assert.are.equal(changed, info.rebuilt_blocks, "step " .. step)
      assert.are.equal(0, info.remeshed_chunks)
      assert.is_true(info.current)
      if step == 1 then -- 8 voxels over: thin shells of blocks
        assert.is_true(changed > 0 and changed < info.blocks / 4, changed .. " of " .. info.blocks)
      end
      -- a seam joins the blocks of its chunk + {0,1}^3
      assert.is_true(info.rebuilt_seams <= 8 * info.rebuilt_blocks)
      local open, nonman = edge_check(m)
      assert.are.equal(0, open, "crack after step " .. step)
      assert.is_true(nonman < 0.02 * 3 * m:triangle_count())
      -- from scratch, serially, in a world that never saw the other viewers
      local f = fresh(nv, nil, 0)
      assert.is_true(serial(f) == serial(m), "step " .. step .. " differs from a fresh build")
    end
  end)

  it("an edit rebuilds only the blocks around it and equals a fresh build", function()
    local w = hills()
    local v = {100, 30, 100}
    w:set_viewer(v, {distances = D})
    local before, i0 = w:lod_mesh(LO, HI, {wait = true})
    local function carve(x) x.terrain:carve_ball({64, 20, 96}, 5) end
    carve(w)
    local m, info = w:lod_mesh(LO, HI, {wait = true})
    assert.is_true(info.remeshed_chunks >= 1 and info.remeshed_chunks <= 8, info.remeshed_chunks)
    -- a block reads the pieces of its chunk + {0,1}^3
    assert.is_true(info.rebuilt_blocks >= 1 and info.rebuilt_blocks <= 8 * info.remeshed_chunks)
    assert.is_true(info.rebuilt_blocks < i0.blocks / 8)
    assert.are_not.equal(serial(before), serial(m))
    assert.are.equal(0, (edge_check(m)))
    assert.is_true(serial(fresh(v, carve, 0)) == serial(m), "edit differs from a fresh build")
  end)

  it("rebuilds on a worker: lod_mesh() returns the last complete mesh until the new one is done", function()
    local w = hills()
    local a, b, c = {40, 30, 40}, {150, 30, 150}, {100, 30, 40}
    w:set_viewer(a, {distances = D})
    local ma = w:lod_mesh(LO, HI, {wait = true})
    w:set_viewer(b)
    local m1, i1 = w:lod_mesh(LO, HI) -- starts the rebuild, returns at once
    assert.is_false(i1.current)
    assert.is_true(serial(m1) == serial(ma), "not the last complete mesh")
    local mb, ib = w:lod_mesh(LO, HI, {wait = true})
    assert.is_true(ib.current)
    local fb = fresh(b, nil, 0)
    assert.is_true(serial(fb) == serial(mb))
    -- an edit while a rebuild runs: the worker reads its own copy of the
    -- terrain; the next rebuild picks the edit up
    w:set_viewer(c)
    local m2 = w:lod_mesh(LO, HI)
    local s2 = serial(m2)
    assert.is_true(s2 == serial(mb), "not the last complete mesh")
    local function fill(x) x.terrain:fill_ball({100, 40, 40}, 6, "rock") end
    fill(w)
    -- whatever is published meanwhile is a whole mesh: b's, or c's before the edit
    local m3, i3 = w:lod_mesh(LO, HI)
    assert.is_false(i3.current)
    assert.are.equal(0, (edge_check(m3)))
    local s3 = serial(m3)
    assert.is_true(s3 == serial(mb) or s3 == serial(fresh(c, nil, 0)))
    local mc, ic = w:lod_mesh(LO, HI, {wait = true})
    assert.is_true(ic.current)
    assert.is_true(serial(fresh(c, fill, 0)) == serial(mc), "differs from a fresh build after the edit")
    -- lod_mesh() with nothing pending returns the same mesh, current
    local again, ia = w:lod_mesh(LO, HI)
    assert.is_true(ia.current)
    assert.is_true(serial(again) == serial(mc))
    -- past the change log (4096 edits) the copy of the terrain is redone
    -- whole, 16 chunks per call (72 chunks here), before the worker starts:
    -- meanwhile the old mesh is returned
    for _ = 1, 2100 do
      w.terrain:fill_ball({20, 44, 20}, 1.5, "rock")
      w.terrain:carve_ball({20, 44, 20}, 1.5)
    end
    w.terrain:generate{kind = "hills", size = {192, 48, 192}, seed = 6}
    for _ = 1, 2 do
      local m, i = w:lod_mesh(LO, HI)
      assert.is_false(i.current)
      assert.is_true(serial(m) == serial(mc))
    end
    local mg = w:lod_mesh(LO, HI, {wait = true})
    local wg = quarry.world.new{threads = 0}
    wg.terrain:generate{kind = "hills", size = {192, 48, 192}, seed = 6}
    wg:set_viewer(c, {distances = D})
    assert.is_true(serial(wg:lod_mesh(LO, HI, {wait = true})) == serial(mg), "differs after a new terrain")
    assert.has_error(function() w:lod_mesh{wiat = true} end)
    assert.has_error(function() w:lod_mesh(LO, HI, {wait = 1}) end)
  end)

  it("stats report triangles per LOD; bad input is refused", function()
    local w = quarry.world.new{}
    w.terrain:fill_ball({40, 40, 40}, 20, "rock")
    w:set_viewer({0, 40, 40}, {distances = {10, 20, 40, 80}})
    local m, info = w:lod_mesh{wait = true}
    local s = w:stats()
    assert.are.equal(5, #s.lod_triangles)
    local sum = s.seam_triangles
    for i = 1, 5 do sum = sum + s.lod_triangles[i] end
    assert.are.equal(m:triangle_count(), sum)
    assert.are.same(info.triangles_per_level, s.lod_triangles)
    assert.has_error(function() w:set_viewer({0, 0}) end)
    assert.has_error(function() w:set_viewer({0, 0, 0}, {distances = {3, 2, 1, 0}}) end, nil)
    assert.has_error(function() w.terrain:mesh({0, 0, 0}, {8, 8, 8}, {lod = 9}) end)
  end)

  it("the renderer draws the LOD mesh once a viewer is set and colours it by level", function()
    local host = require "support.host"
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. host.shell_quote(dir))
    host.write_file(dir .. "/lod.lua", [[
local quarry = require "quarry"
local g = quarry.graphics
local LOG, DIR = arg[1], arg[2]
local function log(s) local f = io.open(LOG, "a") f:write(s, "\n") f:close() end
local frame, world = 0, nil
function quarry.load()
  world = quarry.world.new{}
  world.terrain:generate{kind = "hills", size = {128, 32, 128}, seed = 1}
  g.set_camera{position = {64, 60, -20}, target = {64, 12, 64}, fov = math.rad(60)}
end
function quarry.update() frame = frame + 1 end
function quarry.draw()
  if frame == 2 then
    world:set_viewer({64, 20, 0}, {distances = {16, 40, 70, 100}})
    -- the renderer never waits for the clipmap's worker: finish the mesh here
    world:lod_mesh{wait = true}
  end
  if frame == 3 then g.debug{lod = true} end
  assert(g.draw_world(world))
  local s = g.stats()
  log(frame .. " " .. s.triangles .. " " .. s.draw_calls)
  assert(g.screenshot(DIR .. "/lod" .. frame .. ".ppm"))
end
]])
    local cmd = string.format("%s timeout 120 %s --frames 3 %s %s %s >/dev/null 2>%s", host.OFFSCREEN,
                              host.shell_quote(host.exe), host.shell_quote(dir .. "/lod.lua"),
                              host.shell_quote(dir .. "/log"), host.shell_quote(dir), host.shell_quote(dir .. "/err"))
    local _, _, code = os.execute(cmd)
    local err = host.read_file(dir .. "/err") or ""
    if code ~= 0 and err:find("offscreen not available", 1, true) then
      error("SDL has no offscreen video driver here: " .. err)
    end
    assert.are.equal(0, code, err)
    local tris = {}
    for _, line in ipairs(host.lines_of(dir .. "/log")) do
      local f, t, d = line:match("^(%d+) (%d+) (%d+)$")
      tris[tonumber(f)] = {tonumber(t), tonumber(d)}
    end
    assert.is_true(tris[2][1] > 0 and tris[2][1] < tris[1][1] / 2, tris[1][1] .. " -> " .. tris[2][1])
    assert.are.equal(1, tris[2][2]) -- one mesh: chunks and seams
    assert.are.equal(tris[2][1], tris[3][1])
    assert.are_not.equal(host.read_file(dir .. "/lod2.ppm"), host.read_file(dir .. "/lod3.ppm"))
    os.execute("rm -rf " .. host.shell_quote(dir))
  end)
end)
