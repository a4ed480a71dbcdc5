-- OPEN (found by fuzz/api.lua under make sanitize, 2026-11-26; fails seeds
-- 1, 4 and 9 of the ASan/UBSan API fuzzer, seed 1 of them in spec/fuzz_spec.lua):
-- world:lod_mesh() on a world whose terrain holds no chunk calls
-- qsort(NULL, 0, ...) in q_terrain_chunk_views (engine/voxel/storage.c:454,
-- from engine/mesh/clipmap.c sync_copy):
--   runtime error: null pointer passed as argument 1, which is declared to never be null
--
--   make sanitize builds build/sanitize; then with the runtimes preloaded
--   (see scripts/run-tests.sh): QUARRY_BUILD=build/sanitize lua5.4 spec/regress/open/lod_mesh_empty_ubsan.lua
package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local w = quarry.world.new{}
w:lod_mesh()
print("ok")
