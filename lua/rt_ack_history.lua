-- Ack history (engine/blocks_ack_history.py): the bitmap of earlier acks as bit lines and acknowledged numbers.
local floor = math.floor

-- bit lines like Wireshark's: ".... ...1" for bit 0 of 8 bits
function rt.bit_line(width, bit, value)
  local chars = {}
  for i = width - 1, 0, -1 do
    chars[#chars + 1] = (i == bit) and (value == 1 and "1" or "0") or "."
    if i > 0 and i % 4 == 0 then chars[#chars + 1] = " " end
  end
  return table.concat(chars)
end

-- AckHistory: bit i-1 set means sequence number ack - i was received.
function rt.ack_history(c, tree, r, f, f_bit, f_acked, bits, modulo, ack)
  local val = r:le_uint()
  local it = tree:add_le(f, r)
  local acked = {}
  for i = 0, bits - 1 do
    local bit = floor(val / 2 ^ i) % 2
    local seq = (ack - i - 1) % modulo
    it:add(f_bit, r, bit, rt.bit_line(bits, i, bit) .. " = seq " .. string.format("%d", seq) ..
      " (ack-" .. string.format("%d", i + 1) .. "): " .. (bit == 1 and "received" or "missing"))
    if bit == 1 then acked[#acked + 1] = seq end
  end
  for _, seq in ipairs(acked) do it:add(f_acked, r, seq):set_generated() end
  return val
end
