-- Integers made of bits (engine/blocks_bits.py): BitFields reads its parts through rt.bits; BitSplit and Combined
-- are emitted inline. Lua 5.2 has no bit operators: arithmetic on doubles, exact below 2^53.

local floor = math.floor

-- width bits from bit `shift` of the little-endian bytes `s` (width <= 32), sign-extended when signed
function rt.bits(s, shift, width, signed)
  local first, last = floor(shift / 8), floor((shift + width - 1) / 8)
  local v, scale = 0, 1
  for i = first, last do
    v = v + string.byte(s, i + 1) * scale
    scale = scale * 256
  end
  v = floor(v / 2 ^ (shift - first * 8)) % 2 ^ width
  if signed and v >= 2 ^ (width - 1) then v = v - 2 ^ width end
  return v
end
