-- Vectors and rotations (engine/blocks_vectors.py): a vector's values as its label shows them, and blank's
-- smallest-three quaternion unpacked. The rest of their Lua is emitted inline (Vec3.emit_lua).
local floor = math.floor

-- Python's "{:.6g}" and str(int) for labels.
function rt.short(v, is_float)
  if is_float then return string.format("%.6g", v) end
  return string.format("%d", v)
end

-- blank's quat: u64 LE, bits 63-62 the largest component's index, three 20-bit components at 59-40, 39-20, 19-0
function rt.quat_smallest3(r)
  local lo, hi = r:range(0, 4):le_uint(), r:range(4, 4):le_uint()
  local largest = floor(hi / 2 ^ 30)
  local comps = { floor(hi / 256) % 1048576, (hi % 256) * 4096 + floor(lo / 1048576), lo % 1048576 }
  local small = {}
  for i = 1, 3 do small[i] = (comps[i] - 524287) * 0.7072 / 524287 end
  local s = 1.0 - (small[1] * small[1] + small[2] * small[2] + small[3] * small[3])
  if s < 0.0 then s = 0.0 end
  local q, j = {}, 1
  for i = 0, 3 do
    if i == largest then q[#q + 1] = math.sqrt(s) else q[#q + 1] = small[j]; j = j + 1 end
  end
  return largest, q
end
