-- Brute-force reference models for terrain edits, written independently of
-- the C code from the definitions in engine/voxel/terrain.h: a voxel's
-- coverage is clamp(1/2 + d, 0, 1), d the signed distance (voxel units,
-- positive inside) from the voxel centre to the shape's surface, stored as
-- round(coverage * 255).
local M = {}

local function clamp01(v) return v < 0 and 0 or (v > 1 and 1 or v) end
M.clamp01 = clamp01

function M.q8(cov) return math.floor(cov * 255 + 0.5) / 255 end

function M.ball_distance(cx, cy, cz, r)
  return function(x, y, z)
    local dx, dy, dz = x - cx, y - cy, z - cz
    return r - math.sqrt(dx * dx + dy * dy + dz * dz)
  end
end

-- Axis-aligned or rotated box: rotation as {w, x, y, z}.
function M.block_distance(c, size, q)
  q = q or {1, 0, 0, 0}
  local w, qx, qy, qz = q[1], q[2], q[3], q[4]
  local n = math.sqrt(w * w + qx * qx + qy * qy + qz * qz)
  w, qx, qy, qz = w / n, qx / n, qy / n, qz / n
  -- inverse rotation of a vector: rotate by the conjugate
  local function inv_rotate(vx, vy, vz)
    local ux, uy, uz, s = -qx, -qy, -qz, w
    local tx = 2 * (uy * vz - uz * vy)
    local ty = 2 * (uz * vx - ux * vz)
    local tz = 2 * (ux * vy - uy * vx)
    return vx + s * tx + (uy * tz - uz * ty),
           vy + s * ty + (uz * tx - ux * tz),
           vz + s * tz + (ux * ty - uy * tx)
  end
  local h = {size[1] / 2, size[2] / 2, size[3] / 2}
  return function(x, y, z)
    local lx, ly, lz = inv_rotate(x - c[1], y - c[2], z - c[3])
    local e = {math.abs(lx) - h[1], math.abs(ly) - h[2], math.abs(lz) - h[3]}
    local out2, inner = 0, -math.huge
    for a = 1, 3 do
      if e[a] > 0 then out2 = out2 + e[a] * e[a] end
      if e[a] > inner then inner = e[a] end
    end
    return -(math.sqrt(out2) + math.min(inner, 0))
  end
end

function M.cylinder_distance(c, r, height)
  local hh = height / 2
  return function(x, y, z)
    local dx, dz = x - c[1], z - c[3]
    local ex = math.sqrt(dx * dx + dz * dz) - r
    local ey = math.abs(y - c[2]) - hh
    local ox, oy = math.max(ex, 0), math.max(ey, 0)
    return -(math.sqrt(ox * ox + oy * oy) + math.min(math.max(ex, ey), 0))
  end
end

-- Coverage of voxel (i, j, k) under a distance function.
function M.coverage(dist, i, j, k)
  return clamp01(0.5 + dist(i + 0.5, j + 0.5, k + 0.5))
end

-- Sum of occupancy (0..1) over a voxel box read from the terrain.
function M.occupancy_sum(T, min, max)
  local d = T:read(min, max)
  local s = 0
  for i = 1, #d.occupancy do s = s + d.occupancy[i] end
  return s
end

return M
