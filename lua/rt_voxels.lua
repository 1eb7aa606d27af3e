-- Voxel chunks browsable by position (engine/blocks_voxels.py, the same text byte for byte): a slice per z, in it a
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
