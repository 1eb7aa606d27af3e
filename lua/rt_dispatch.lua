-- Dispatch on a type code (engine/blocks_dispatch.py): the same trees. Select and Fit are emitted inline.

-- A constant table built on first use (generated code refers to functions defined after the caller).
local CACHE = {}
function rt.cached(key, build)
  local t = CACHE[key]
  if t == nil then t = build(); CACHE[key] = t end
  return t
end

-- Dispatch: tables[variant] = { code field, { [code] = { fn, label, info template } } }.
function rt.dispatch(c, T, name, label, tables, first, key, unknown, f_data)
  rt.need(c, 1, label, T)
  local variant = key and rt.lookup(c, key)
  if variant == nil or tables[variant] == nil then variant = first end
  local t = tables[variant]
  local code = c.tvb(c.pos, 1):uint()
  c.sc[#c.sc][name] = code
  local it = T:add(t[1], c.tvb(c.pos, 1))
  c.pos = c.pos + 1
  local pkt = t[2][code]
  if pkt == nil then
    local msg = string.gsub(unknown, "{}", string.format("%d", code))
    rt.expert(c, it, "undecoded", msg)
    c.sc[1]._info = msg
    if c.pos < c.stop then
      T:add(f_data, c.tvb(c.pos, c.stop - c.pos))
      c.pos = c.stop
    end
    return
  end
  local values = c.sc[#c.sc]
  c.sc[1]._info = pkt[2]
  pkt[1](c, T)
  if pkt[3] then c.sc[1]._info = pkt[2] .. " " .. rt.template(pkt[3], values) end
end
