-- Framing (engine/blocks_framing.py): an inner packet bounded by a length (Framed), and a packet's length on a
-- byte stream measured from its table (framing_steps): the same trees, the same lengths.

-- Framed: decode `body` inside the next n bytes; what it leaves is trailing data.
function rt.framed(c, T, n, body, f_trailing)
  local start, stop = c.pos, c.stop
  c.stop = start + n
  local ok, err = pcall(body, c, T)
  if ok and c.pos < c.stop then
    T:add(f_trailing, c.tvb(c.pos, c.stop - c.pos))
    rt.expert(c, T, "trailing", string.format("%d bytes after the inner packet", c.stop - c.pos))
  end
  c.stop = stop
  c.pos = start + n
  if not ok then error(err, 0) end
end

-- Stream framing from the tables (engine.blocks_framing.measure): steps { "fixed", size, code, name } and
-- { "counted", name, delta }; the length may run past the data; -1 cannot tell, 0 more bytes needed to tell.
local function read_int(tvb, at, size, code)
  local r = tvb(at, size)
  local little = string.sub(code, 1, 1) ~= ">"
  local signed = string.find(code, "[bhi]") ~= nil
  if little then return signed and r:le_int() or r:le_uint() end
  return signed and r:int() or r:uint()
end

function rt.measure(steps, tvb, pos, values)
  if not steps then return -1 end
  local at, len = pos, tvb:len()
  for _, s in ipairs(steps) do
    if s[1] == "counted" then
      local n = values[s[2]]
      if n == nil or n + s[3] < 0 then return -1 end
      at = at + n + s[3]
    else
      if s[3] ~= "" then
        if at + s[2] > len then return 0 end
        values[s[4]] = read_int(tvb, at, s[2], s[3])
      end
      at = at + s[2]
    end
  end
  return at - pos
end
