-- Transfers reassembled by cookie (engine/blocks_cookies.py): text reassembled with its commands, images checked
-- as QOI and hashed (xxHash32), in ordered bounded tables per direction.
-- Lua 5.2 has no bit operators: 32-bit arithmetic is done on doubles, exact below 2^53.

local floor = math.floor
local TWO32 = 4294967296

-- Ordered bounded table (insertion order, like a Python dict with bounded_put / pop): { map, q, h, t, n }
function rt.otable() return { map = {}, q = {}, h = 1, t = 0, n = 0, stamp = 0 } end

function rt.oget(tb, key) local e = tb.map[key]; return e and e[1] end

function rt.odel(tb, key)
  if tb.map[key] ~= nil then tb.map[key] = nil; tb.n = tb.n - 1 end
end

function rt.oput(tb, key, value, limit)
  local e = tb.map[key]
  if e then e[1] = value; return end
  while tb.n >= limit and tb.h <= tb.t do     -- evict the oldest live entry
    local old = tb.q[tb.h]
    tb.q[tb.h] = nil
    tb.h = tb.h + 1
    local live = tb.map[old[1]]
    if live and live[2] == old[2] then tb.map[old[1]] = nil; tb.n = tb.n - 1 end
  end
  tb.stamp = tb.stamp + 1
  tb.t = tb.t + 1
  tb.q[tb.t] = { key, tb.stamp }
  tb.map[key] = { value, tb.stamp }
  tb.n = tb.n + 1
end

local function role_table(c, name)
  local role = c.sc[1]._role or "c2s"
  c.conv[name] = c.conv[name] or {}
  local t = c.conv[name][role]
  if not t then t = rt.otable(); c.conv[name][role] = t end
  return t, role
end

local function peer(role) return role == "c2s" and "s2c" or "c2s" end

local function add_frame(state, frame)
  for _, f in ipairs(state.frames) do if f == frame then return end end
  state.frames[#state.frames + 1] = frame
end

-- A new tvb holding `s` (nil for an empty string: Wireshark makes no empty data source)
local function new_tvb(s, name)
  if #s == 0 then return nil end
  return ByteArray.new(s, true):tvb(name)
end

-- a text as a string field shows it: up to its first NUL (engine.blocks_cookies.until_nul)
local function until_nul(raw)
  local nul = string.find(raw, "\0", 1, true)
  return nul and string.sub(raw, 1, nul - 1) or raw
end

-- --- text reassembly (TextReassembly) --------------------------------------------------------------------------

function rt.split_command(text, cmd)
  local pos = #cmd.word + 1                  -- 0-based offset of the first argument
  if pos > #text then return {} end
  local spans, count = {}, 0
  while true do
    if cmd.maxsplit >= 0 and count >= cmd.maxsplit then spans[#spans + 1] = { pos, #text }; break end
    local nxt = string.find(text, cmd.sep, pos + 1, true)
    if not nxt then spans[#spans + 1] = { pos, #text }; break end
    spans[#spans + 1] = { pos, nxt - 1 }
    pos, count = nxt - 1 + #cmd.sep, count + 1
  end
  if #spans > 1 and spans[#spans][1] == spans[#spans][2] then spans[#spans] = nil end
  return spans
end

local function find_command(s, text)
  local word = string.match(text, "^[^ ]*")
  for _, cmd in ipairs(s.commands) do
    if cmd.word == word then return cmd, word end
  end
  return nil, word
end

-- the arguments of a command: { name = value } and per argument its span / value / problem
local function command_args(cmd, text)
  local spans, args, shown = rt.split_command(text, cmd), {}, {}
  for i, a in ipairs(cmd.args) do
    local sp = spans[i]
    if not sp then break end
    local raw = string.sub(text, sp[1] + 1, sp[2])
    local entry = { a = a, s = sp[1], n = sp[2] - sp[1] }
    if a.kind == "string" then
      raw = until_nul(raw)
      args[a.name] = rt.utf8(raw); entry.n = #raw
    elseif string.match(raw, "^[ \t\r\n]*[0-9]+[ \t\r\n]*$") and tonumber(raw) < TWO32 then
      args[a.name] = tonumber(raw); entry.v = tonumber(raw)
    else
      entry.bad = string.format("%s: '%s' is not a number", a.label, rt.utf8(until_nul(raw)))
    end
    shown[#shown + 1] = entry
  end
  return args, shown, spans
end

-- Add a piece to the transfer `key` of this direction (engine.blocks_cookies.collect_piece): its state when
-- `last` completes it, else nil; over `limit` bytes it is dropped (the message) and later pieces ignored.
function rt.collect_piece(c, kind, key, piece, last, limit, pending, noun)
  local tb = role_table(c, kind)
  local state = rt.oget(tb, key) or { parts = {}, frames = {}, size = 0 }
  rt.odel(tb, key)
  local msg
  if state.size >= 0 then
    state.parts[#state.parts + 1] = piece
    state.size = state.size + #piece
    add_frame(state, c.frame)
    if state.size > limit then
      msg = string.format("%s %d exceeds %d bytes: dropped", noun, key, limit)
      state = { parts = {}, frames = {}, size = -1 }
    end
  end
  if not last then rt.oput(tb, key, state, pending); return nil, msg end
  if state.size < 0 then return nil, msg end
  return state, msg
end

-- First pass only: the whole text when the final chunk arrives; Client IPC commands update the conversation.
local function text_step(c, s, piece)
  local role = c.sc[1]._role or "c2s"
  local last = rt.lookup(c, s.final) ~= 0
  local state, msg = rt.collect_piece(c, "texts", rt.lookup(c, s.key), piece, last, s.limit, s.pending, "Message")
  if not state then return nil, msg end
  local res = { text = table.concat(state.parts), frames = state.frames, chunks = #state.parts }
  if rt.lookup(c, s.channel) == s.command_channel then
    local cmd = find_command(s, res.text)
    if cmd then
      local args = command_args(cmd, res.text)
      c.conv.ipc = c.conv.ipc or {}
      c.conv.ipc[role] = c.conv.ipc[role] or {}
      c.conv.ipc[role][cmd.word] = args
      if cmd.sets and args[cmd.sets[1]] == cmd.sets[2] then
        c.conv.flags = c.conv.flags or {}
        c.conv.flags[cmd.sets[3] .. ":" .. peer(role)] = true
      end
    end
  end
  return res, msg
end

local function show_command(c, s, node, tv, text)
  local cmd, word = find_command(s, text)
  if not cmd then return end
  local _, shown, spans = command_args(cmd, text)
  local label = (#spans == 0 and cmd.alone) and cmd.alone or cmd.label
  local it = node:add(s.cmd, tv:range(0, #word), cmd.word)
  it:set_text("IPC command: " .. label)
  for _, e in ipairs(shown) do
    if e.bad then
      rt.expert(c, it, "malformed", e.bad)
    elseif e.a.kind == "string" then
      it:add_packet_field(e.a.f, tv:range(e.s, e.n), ENC_UTF_8)
    else
      it:add(e.a.f, tv:range(e.s, e.n), e.v)
    end
  end
  c.notes[#c.notes + 1] = label
end

function rt.text_reassembly(c, T, s)
  rt.need(c, s.size, s.label, T)
  local r = c.tvb(c.pos, s.size)
  local chunk = r:raw()
  c.sc[#c.sc][s.name] = chunk
  local item = T:add(s.f, r)
  c.pos = c.pos + s.size
  local chunk_shown = until_nul(chunk)
  if #chunk_shown > 0 then    -- the chunk alone as text (engine/blocks_cookies.py TextReassembly.decode)
    item:add_packet_field(s.ctext, r:range(0, #chunk_shown), ENC_UTF_8)
  end
  local piece = string.gsub(chunk, "%z+$", "")
  local res, msg = rt.once(c, "text#" .. c.pdu, function() return text_step(c, s, piece) end)
  if msg then rt.expert(c, item, "reassembly", msg) end
  if not res then return end
  local node = item:add(s.r)
  node:set_text("Reassembled message")
  node:set_generated()
  for _, fr in ipairs(res.frames) do node:add(s.frame, fr):set_generated() end
  node:add(s.chunks, res.chunks):set_generated()
  node:add(s.length, #res.text):set_generated()
  local tv = new_tvb(res.text, "Reassembled message")
  local shown = until_nul(res.text)
  c.sc[#c.sc].text = rt.utf8(shown)
  if not tv then node:add(s.text, ""); c.notes[#c.notes + 1] = '""'; return end
  node:add_packet_field(s.text, tv:range(0, #shown), ENC_UTF_8)
  c.notes[#c.notes + 1] = '"' .. c.sc[#c.sc].text .. '"'
  if rt.lookup(c, s.channel) == s.command_channel then show_command(c, s, node, tv, res.text) end
end

-- --- images (ImageReassembly): QOI checks and xxHash32 --------------------------------------------------------

local function u32be(s, i) -- 1-based
  local a, b, c2, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c2) * 256 + d
end

-- Walk the QOI chunk stream: nil when it holds exactly w*h pixels then the end marker, else the problem.
function rt.qoi_walk(data, w, h)
  local pos, pixels, want, stop = 14, 0, w * h, #data - 8
  while pixels < want and pos < stop do
    local b = string.byte(data, pos + 1)
    if b == 0xFE then pos, pixels = pos + 4, pixels + 1
    elseif b == 0xFF then pos, pixels = pos + 5, pixels + 1
    elseif b >= 0xC0 then pos, pixels = pos + 1, pixels + (b % 64) + 1
    elseif b >= 0x80 then pos, pixels = pos + 2, pixels + 1
    else pos, pixels = pos + 1, pixels + 1 end
  end
  if pixels < want then return string.format("QOI data ends after %d of %d pixels", pixels, want) end
  if pixels > want then return string.format("QOI run overshoots: %d pixels for %d", pixels, want) end
  if string.sub(data, pos + 1) ~= "\0\0\0\0\0\0\0\1" then
    return string.format("QOI stream does not end with the end marker at byte %d (%d bytes left)", pos, #data - pos)
  end
  return nil
end

local P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393

local function mul32(a, b)
  local ah, al = floor(a / 65536), a % 65536
  local bh, bl = floor(b / 65536), b % 65536
  return (al * bl + ((ah * bl + al * bh) % 65536) * 65536) % TWO32
end

local function rotl(x, r) return (x * 2 ^ r) % TWO32 + floor(x / 2 ^ (32 - r)) end

local XOR4 = {}
for a = 0, 15 do
  XOR4[a] = {}
  for b = 0, 15 do
    local v, bit = 0, 1
    for _ = 1, 4 do
      if (floor(a / bit) % 2) ~= (floor(b / bit) % 2) then v = v + bit end
      bit = bit * 2
    end
    XOR4[a][b] = v
  end
end

local function xor32(a, b)
  local v, scale = 0, 1
  for _ = 1, 8 do
    v = v + XOR4[a % 16][b % 16] * scale
    a, b, scale = floor(a / 16), floor(b / 16), scale * 16
  end
  return v
end

local function u32le(s, i) -- 1-based
  local a, b, c2, d = string.byte(s, i, i + 3)
  return ((d * 256 + c2) * 256 + b) * 256 + a
end

local function round(acc, input)
  return mul32(rotl((acc + mul32(input, P2)) % TWO32, 13), P1)
end

-- xxHash32 of a string, seed 0, as 8 lowercase hex digits
function rt.xxh32(s)
  local n, p, h = #s, 1, nil
  if n >= 16 then
    local v1, v2, v3, v4 = (P1 + P2) % TWO32, P2, 0, TWO32 - P1
    while p + 15 <= n do
      v1 = round(v1, u32le(s, p)); v2 = round(v2, u32le(s, p + 4))
      v3 = round(v3, u32le(s, p + 8)); v4 = round(v4, u32le(s, p + 12))
      p = p + 16
    end
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) % TWO32
  else
    h = P5
  end
  h = (h + n) % TWO32
  while p + 3 <= n do
    h = mul32(rotl((h + mul32(u32le(s, p), P3)) % TWO32, 17), P4)
    p = p + 4
  end
  while p <= n do
    h = mul32(rotl((h + string.byte(s, p) * P5) % TWO32, 11), P1)
    p = p + 1
  end
  h = mul32(xor32(h, floor(h / 32768)), P2)
  h = mul32(xor32(h, floor(h / 8192)), P3)
  h = xor32(h, floor(h / 65536))
  return string.format("%08x", h)
end

-- the announced hex digest names this one (any case, leading zeros optional)
function rt.same_digest(announced, digest)
  local text = string.lower(string.match(announced, "^%s*(.-)%s*$"))
  return #text > 0 and #text <= 8 and string.match(text, "^[0-9a-f]+$") ~= nil
    and tonumber(text, 16) == tonumber(digest, 16)
end

local function image_step(c, s, piece, last)
  local role = c.sc[1]._role or "c2s"
  if last then
    c.conv.flags = c.conv.flags or {}
    c.conv.flags[s.clears .. ":" .. role] = false
  end
  local state, msg = rt.collect_piece(c, "images", rt.lookup(c, s.key), piece, last, s.limit, s.pending, "Image")
  if not state then return nil, msg end
  local ipc = c.conv.ipc and c.conv.ipc[role] and c.conv.ipc[role][s.digest_cmd]
  return { data = table.concat(state.parts), frames = state.frames, announced = ipc and ipc[s.digest_arg] }, msg
end

local function is_side(v, max) -- a power of two up to max
  if v == 0 or v > max then return false end
  while v % 2 == 0 do v = v / 2 end
  return v == 1
end

-- header items, then the problem (nil: a valid QOI within the limits)
local function image_check(c, s, node, tv, data)
  if #data < 22 then return string.format("Image of %d bytes is too short for QOI", #data) end
  local w, h = u32be(data, 5), u32be(data, 9)
  local ch, cs = string.byte(data, 13), string.byte(data, 14)
  node:add(s.magic, tv:range(0, 4))
  local wi = node:add(s.width, tv:range(4, 4))
  local hi = node:add(s.height, tv:range(8, 4))
  node:add(s.channels, tv:range(12, 1))
  node:add(s.colorspace, tv:range(13, 1))
  if string.sub(data, 1, 4) ~= "qoif" then return "Not a QOI image (magic is not qoif)" end
  for _, p in ipairs({ { wi, w }, { hi, h } }) do
    if not is_side(p[2], s.max_side) then
      rt.expert(c, p[1], "malformed", string.format("Side %d is not a power of two up to %d", p[2], s.max_side))
    end
  end
  if w == 0 or h == 0 or w > s.max_side or h > s.max_side then
    return string.format("Texture %dx%d is outside the spec's limits", w, h)
  end
  if (ch ~= 3 and ch ~= 4) or cs > 1 then
    return string.format("Bad QOI header: %d channels, colour space %d", ch, cs)
  end
  return rt.qoi_walk(data, w, h)
end

function rt.image_reassembly(c, T, s)
  rt.need(c, s.size, s.label, T)
  local r = c.tvb(c.pos, s.size)
  local n = rt.lookup(c, s.len_field)
  local item = T:add(s.f, r)
  c.pos = c.pos + s.size
  if n > s.size then
    rt.expert(c, item, "malformed", string.format("%s: %d bytes used of a %d-byte chunk", s.label, n, s.size))
    n = s.size
  end
  local piece = n > 0 and r:range(0, n):raw() or ""
  local res, msg = rt.once(c, "image#" .. c.pdu, function() return image_step(c, s, piece, n < s.size) end)
  if msg then rt.expert(c, item, "reassembly", msg) end
  if not res then return end
  local data = res.data
  local node = item:add(s.r)
  node:set_text("Reassembled image")
  node:set_generated()
  for _, fr in ipairs(res.frames) do node:add(s.frame, fr):set_generated() end
  node:add(s.length, #data):set_generated()
  c.notes[#c.notes + 1] = string.format("[image %d bytes]", #data)
  local tv = new_tvb(data, "Reassembled image")
  local whole = tv and tv:range(0, #data) or c.tvb(c.pos, 0)
  local digest = rt.xxh32(data)
  node:add(s.hash, whole, digest):set_generated()
  -- a zero-length range of an empty range raises ("Range is out of bounds"): an empty image is its own
  local at = whole:len() > 0 and whole:range(0, 0) or whole
  if res.announced then
    node:add(s.announced, at, res.announced):set_generated()
    local same = rt.same_digest(res.announced, digest)
    local ok = node:add(s.match, at, same)
    ok:set_generated()
    if not same then
      rt.expert(c, ok, "sequence", string.format("xxHash32 %s does not match the announced digest %s", digest,
        res.announced))
    end
  end
  local problem = "Image of 0 bytes is too short for QOI"
  if tv then problem = image_check(c, s, node, tv, data) end
  local v = node:add(s.valid, whole, problem == nil)
  v:set_generated()
  if problem then rt.expert(c, v, "malformed", problem) end
end
