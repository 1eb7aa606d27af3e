-- Text building blocks (engine/blocks_text.py): NUL-ended strings, UUID / enum / "a:b" checks, the rest of a
-- message with its format sniffed (rt_sniff.lua), JSON (rt_json.lua), and per-conversation memories.

-- The offset (from `at`) of the first NUL in the next `n` bytes, or nil: read in growing pieces, so a message of
-- many short strings is not copied once per string.
local function find_nul(tvb, at, n)
  local from, step = 0, 64
  while from < n do
    local len = math.min(step, n - from)
    local i = string.find(tvb:raw(at + from, len), "\0", 1, true)
    if i then return from + i - 1 end
    from, step = from + len, step * 2
  end
  return nil
end

-- A StringNT: value, item, raw bytes, well formed?, start offset.
function rt.text(c, T, f, label)
  rt.need(c, 1, label, T)
  local at, n = c.pos, c.stop - c.pos
  local nul = find_nul(c.tvb, at, n)
  local len = nul or n
  local it = T:add_packet_field(f, c.tvb(at, len), ENC_UTF_8)
  local used = nul and len + 1 or n
  it:set_len(used)
  local s = len > 0 and c.tvb:raw(at, len) or ""
  local v = rt.utf8(s)
  c.pos = at + used
  if not nul then
    rt.expert(c, it, "malformed", label .. ": no terminating NUL")
    return v, it, s, false, at
  end
  if v ~= s then
    rt.expert(c, it, "unexpected", label .. ": invalid UTF-8")
    return v, it, s, false, at
  end
  return v, it, s, true, at
end

local UUID = "^" .. string.rep("%x", 8) .. "%-" .. string.rep("%x", 4) .. "%-" .. string.rep("%x", 4) .. "%-" ..
  string.rep("%x", 4) .. "%-" .. string.rep("%x", 12) .. "$"
function rt.is_uuid(v) return string.find(v, UUID) ~= nil end

-- "a:b": the two parts as fields under the string item.
function rt.split(c, it, s, at, sep, f1, f2, n1, n2, not_uuid, no_sep)
  local i = string.find(s, sep, 1, true)
  if not i then rt.expert(c, it, "unexpected", no_sep); return end
  local first, second = string.sub(s, 1, i - 1), string.sub(s, i + #sep)
  c.sc[#c.sc][n1] = rt.utf8(first)
  c.sc[#c.sc][n2] = rt.utf8(second)
  local a = it:add_packet_field(f1, c.tvb(at, #first), ENC_UTF_8)
  if not_uuid and not rt.is_uuid(c.sc[#c.sc][n1]) then rt.expert(c, a, "unexpected", not_uuid) end
  it:add_packet_field(f2, c.tvb(at + i - 1 + #sep, #second), ENC_UTF_8)
end

-- The rest of the message: the bytes, their size, their format and image dimensions when recognisable.
local SNIFF_LIMIT = LIMITS.SNIFF_LIMIT      -- engine.sniff.SNIFF_LIMIT
function rt.rest(c, T, name, F, abbrevs)
  local n = c.stop - c.pos
  local r = c.tvb(c.pos, n)
  local it = T:add(F[abbrevs[1]], r)
  local scope = c.sc[#c.sc]
  scope[name] = n > 0 and r:raw() or ""
  scope[name .. "_size"] = n
  it:add(F[abbrevs[2]], r, n):set_generated()
  local fmt, w, h = rt.sniff(n > 0 and c.tvb:raw(c.pos, math.min(n, SNIFF_LIMIT)) or "")
  scope[name .. "_format"] = fmt or "unknown format"
  if fmt then
    it:add(F[abbrevs[3]], r, fmt):set_generated()
    if w then
      it:add(F[abbrevs[4]], r, w):set_generated()
      it:add(F[abbrevs[5]], r, h):set_generated()
    end
  end
  c.pos = c.stop
end

-- Who is the client: learned from the first one-way packet of the conversation.
local function flip(dir)
  local a, b = string.match(dir, "^(.-)>(.*)$")
  return b .. ">" .. a
end

function rt.sender(c, T, f, side)
  local actual = rt.msg_once(c, "sender", function()
    local client = c.conv.client_dir
    if client == nil then
      client = side == "client" and c.dir or flip(c.dir)
      c.conv.client_dir = client
    end
    return c.dir == client and "client" or "server"
  end)
  local it = T:add(f, c.tvb(c.pos, 0), actual)
  it:set_generated()
  if actual ~= side then
    rt.expert(c, it, "unexpected", "Sent by the " .. actual .. "; only the " .. side .. " sends this packet")
  end
end

function rt.remember(c, tname, key, value, limit)
  if c.visited then return end
  local k, v = rt.lookup(c, key), rt.lookup(c, value)
  if k == nil or v == nil then return end
  c.conv[tname] = c.conv[tname] or rt.btable()
  rt.bput(c.conv[tname], k, v, limit)
end

function rt.recall(c, T, f, name, tname, key)
  local k = rt.lookup(c, key)
  local known = rt.msg_once(c, "recall_" .. name, function()
    local t = c.conv[tname]
    return t and k ~= nil and t.map[k] or nil
  end)
  if known ~= nil then T:add(f, c.tvb(c.pos, 0), known):set_generated() end
  if known ~= nil then c.sc[#c.sc][name] = known else c.sc[#c.sc][name] = k end
end
