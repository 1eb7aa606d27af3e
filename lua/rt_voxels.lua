-- Voxel chunks (engine/blocks_voxels.py, the same text byte for byte): figures over a chunk's values (Summary),
-- the summary of split IDs (SplitIdGrid), and the chunk browsable by position (BlockMap): a slice per z, in it a
-- row per y listing the run of x, "y=Y: blocks ID ID ..., light L L ...", index i = x + side (y + side z).
-- Layouts: "split" (Rutentoy: ID = data[i] << 4 | data[n + i] >> 4, light = data[n + i] & 15) and "u16" (blank:
-- ID = u16le at 4 i, light = data[4 n + i]).

local VOXEL_LAYOUTS = { split = { 1, 1 }, u16 = { 4, 4 } } -- bytes per block in the ID array, light array at n *

function rt.block_map(c, T, pos, side, layout, label, hex_ids, f)
  if pos < 0 then return end
  local n = side * side * side
  local l = VOXEL_LAYOUTS[layout]
  local stride, lights = l[1], l[2] * n
  local raw = c.tvb:raw(pos, lights + n)
  local byte, fmt, floor = string.byte, string.format, math.floor
  local idf = hex_ids and "%03x" or "%d"
  local top = T:add(f.map, c.tvb(pos, n * stride))
  top:set_text(label)
  local plane = side * side
  for z = 0, side - 1 do
    local at = plane * z
    local slice = top:add(f.z, c.tvb(pos + stride * at, stride * plane), z)
    local filled, lighted = 0, 0
    for y = 0, side - 1 do
      local k = at + side * y
      local ids, lit = {}, {}
      for x = 0, side - 1 do
        local i = k + x
        local b, m = byte(raw, stride * i + 1), byte(raw, lights + i + 1)
        local id, light
        if layout == "split" then
          id, light = b * 16 + floor(m / 16), m % 16
        else
          id, light = b + byte(raw, stride * i + 2) * 256, m
        end
        ids[x + 1], lit[x + 1] = fmt(idf, id), fmt("%d", light)
        if id ~= 0 then filled = filled + 1 end
        if light ~= 0 then lighted = lighted + 1 end
      end
      local text = fmt("y=%d: blocks %s, light %s", y, table.concat(ids, " "), table.concat(lit, " "))
      slice:add(f.row, c.tvb(pos + stride * k, stride * side), text):set_text(text)
    end
    slice:set_text(fmt("z=%d: %d non-zero, %d lit", z, filled, lighted))
  end
end

-- --- voxel chunk summary (SplitIdGrid) -------------------------------------------------------------------------

local floor = math.floor

function rt.split_id_grid(c, T, count, max_listed, label, names, f)
  rt.need(c, 2 * count, label, T)
  local r = c.tvb(c.pos, 2 * count)
  local raw = r:raw()
  T:add(f.high, c.tvb(c.pos, count))
  T:add(f.low, c.tvb(c.pos + count, count))
  local counts, ids, lit, maxl = {}, {}, 0, 0
  for i = 1, count do
    local hi, m = string.byte(raw, i), string.byte(raw, count + i)
    local id = hi * 16 + floor(m / 16)
    if not counts[id] then counts[id] = 0; ids[#ids + 1] = id end
    counts[id] = counts[id] + 1
    local l = m % 16
    if l > 0 then lit = lit + 1 end
    if l > maxl then maxl = l end
  end
  table.sort(ids)
  local non_air, unknown = count - (counts[0] or 0), 0
  for _, id in ipairs(ids) do if names[id] == nil then unknown = unknown + counts[id] end end
  local node = T:add(f.summary, r)
  node:set_generated()
  node:set_text(string.format("%s: %d non-air, %d distinct, %d lit", label, non_air, #ids, lit))
  node:add(f.non_air, r, non_air):set_generated()
  node:add(f.distinct, r, #ids):set_generated()
  for i = 1, math.min(#ids, max_listed) do
    local it = node:add(f.block, r, ids[i])
    it:set_generated()
    it:add(f.count, r, counts[ids[i]]):set_generated()
  end
  node:add(f.lit, r, lit):set_generated()
  node:add(f.max_light, r, maxl):set_generated()
  if unknown > 0 then
    local it = node:add(f.unknown, r, unknown)
    it:set_generated()
    rt.expert(c, it, "unexpected", string.format("%d blocks have IDs the spec does not list", unknown))
  end
  c.pos = c.pos + 2 * count
end

-- Summary: non-zero count, distinct values, maximum of `count` LE values `width` bytes wide, `stride` apart.
function rt.summary(c, count, stride, width)
  local raw = c.tvb:raw(c.pos, count * stride)
  local nonzero, distinct, seen, max = 0, 0, {}, 0
  for i = 0, count - 1 do
    local v = 0
    for k = width, 1, -1 do v = v * 256 + string.byte(raw, i * stride + k) end
    if v ~= 0 then nonzero = nonzero + 1 end
    if not seen[v] then seen[v] = true; distinct = distinct + 1 end
    if v > max then max = v end
  end
  return { nonzero = nonzero, distinct = distinct, max = max }
end
