-- WebSocket messages assembled by the plugin itself (the twin of dissectors/websocket.py's messages, for the
-- protocols that ride on WebSocket). Wireshark's own websocket dissector still frames the stream and shows its
-- layer, but what it hands up differs by version: 4.0 does not reassemble fragmented messages (a message whose
-- last frame is empty is never handed up, a compressed one is handed up still compressed) and its inflate context
-- goes out of step after one, so every later compressed message of the connection is lost; 4.4 still loses an
-- uncompressed fragmented one. So the plugin takes the frames Wireshark found (every `websocket` item: its data
-- source and offset give the frame's bytes) and does the rest as protodump does: unmasking, fragments (control
-- frames between them), permessage-deflate (RFC 7692) with the parameters of the 101 answer, one context per
-- direction unless `<side>_no_context_takeover`, the same limits.
--
-- Inflate: Lua has no zlib, Wireshark's tvb:uncompress has no streaming state. A deflate stream can be resumed
-- at any message boundary (each ends with a sync flush, byte-aligned) from its last 32 KiB of output: the plugin
-- inflates [a stored block holding that window] + message + 00 00 ff ff + [a stored marker block] in one call and
-- keeps the new window. The marker tells a stream that goes on from one the message ended (a final block). A
-- message whose compressed size could inflate past the limit (1032:1, deflate's maximum ratio) is inflated in
-- growing prefixes, so no call produces more than twice the limit (a deflate bomb costs bounded time and memory).
--
-- Who hands the messages up: Wireshark's ws dissector calls the protocol (heuristic list "ws", table ws.port) for
-- the messages it delivers; the n-th call of a frame shows the plugin's n-th message of that frame (so layers stay
-- in Wireshark's order); the messages Wireshark did not deliver are shown by a postdissector at the end.

local WS_MESSAGE_LIMIT = LIMITS.WS_MESSAGE_LIMIT     -- dissectors.websocket.MESSAGE_LIMIT
local WS_FRAGMENT_LIMIT = LIMITS.WS_FRAGMENT_LIMIT   -- dissectors.websocket.FRAGMENT_LIMIT
local WS_MAX_FRAME = LIMITS.WS_MAX_FRAME             -- dissectors.websocket.MAX_FRAME: a longer frame stops the direction
local WS_WINDOW = 32768             -- the deflate window: history a message may refer to
local WS_RATIO = 1032               -- deflate's largest expansion

local F_WS = nil
local F_HTTP_REQ, F_HTTP_CODE, F_HTTP_EXT, F_TCP_STREAM
local function ws_fields()
  if F_WS == nil then
    local function get(name) local ok, f = pcall(Field.new, name); if ok then return f end end
    F_WS = get("websocket") or false
    F_HTTP_REQ, F_HTTP_CODE = get("http.request"), get("http.response.code")
    F_HTTP_EXT, F_TCP_STREAM = get("http.sec_websocket_extensions"), get("tcp.stream")
  end
  return F_WS
end

local all = rt.field_values

-- XOR of two bytes, from a table built on first use (Lua 5.2 has no bit operators)
local XOR8
local function xor_table()
  if XOR8 then return XOR8 end
  XOR8 = {}
  for a = 0, 255 do
    for b = 0, 255 do
      local r, m, x, y = 0, 1, a, b
      while x > 0 or y > 0 do
        if x % 2 ~= y % 2 then r = r + m end
        x, y, m = (x - x % 2) / 2, (y - y % 2) / 2, m * 2
      end
      XOR8[a * 256 + b] = r
    end
  end
  return XOR8
end

function rt.ws_unmask(s, key)
  local X, k = xor_table(), { key:byte(1, 4) }
  local parts, unpack = {}, table.unpack or unpack
  for i = 1, #s, 4096 do
    local b = { s:byte(i, math.min(i + 4095, #s)) }
    for j = 1, #b do b[j] = X[b[j] * 256 + k[(i + j - 2) % 4 + 1]] end
    parts[#parts + 1] = string.char(unpack(b))
  end
  return table.concat(parts)
end

local function le16(n) return string.char(n % 256, math.floor(n / 256)) end
local function stored(data) return "\0" .. le16(#data) .. le16(65535 - #data) .. data end

-- One tvb:uncompress call (uncompress became uncompress_zlib in 4.2; a missing method raises, hence pcall).
local function uncompress(input)
  local ok, r = pcall(function()
    local t = ByteArray.new(input, true):tvb("Compressed message")
    local ok1, out = pcall(function() return t:range(0):uncompress("Decompressed payload") end)
    if not ok1 then out = t:range(0):uncompress_zlib("Decompressed payload") end
    return out
  end)
  if ok then return r end
  return nil
end

-- Stored blocks of zeros put before a message that may inflate far: tvb:uncompress sizes its output steps from
-- the input length and copies its whole output at every step (Wireshark 4.0: 16 MB from 16 KB took 8 s); a 1 MiB
-- input makes the steps 2 MiB. (They precede the window, so the message cannot reach them by a valid distance.)
local WS_PAD
local function padding()
  if WS_PAD == nil then
    local block = stored(string.rep("\0", 65535))
    WS_PAD = { text = string.rep(block, 16), size = 16 * 65535 }
  end
  return WS_PAD
end

-- Inflate one message with direction state `z` ({ window = last output or "" }). Returns the output tvb (or ""
-- for nothing), the offset and the length of the message in it, or nil and the reason (protodump's wording).
-- The message is first walked (rt.deflate_walk: bounded, as strict as zlib), which also tells where the
-- compressed stream stands after it: ended (a final block: the next message starts a new stream), between two
-- blocks on a byte boundary (the usual sync flush: resumed from the window), or in the middle of a block (a
-- damaged message: zlib's inflate, as Python's and tshark's, returns what it decoded and goes on with the next
-- message's bytes; the plugin keeps this one's input and decodes it again in front of the next).
-- The walk of one message from direction state `z` (left as it is): pcall's ok, then the bytes the stream has
-- decoded so far, how it stands after (ended, clean), and the input, window and earlier output it walked from.
local function ws_walk(z, data)
  local window, carry, done = z.window, z.carry or "", z.done or 0
  local input = carry .. data .. "\0\0\255\255"
  local ok, total, _, ended, clean = pcall(rt.deflate_walk, input, 1, WS_MESSAGE_LIMIT + done, #window, WS_WINDOW,
                                           true)
  return ok, total, ended, clean, input, window, done
end

function rt.ws_inflate(z, data, fresh)
  -- a failed inflate with context takeover leaves the shared context unknown: every later message fails too
  -- (zlib's BAD state; dissectors/websocket.py's Inflater.broken)
  if z.broken then return nil, "Decompression failed: the shared context was lost earlier" end
  if fresh then z.window, z.carry, z.done = "", "", 0 end
  local function restart() z.window, z.carry, z.done = "", "", 0 end
  local over = string.format("Decompressed message exceeds the limit of %d bytes", WS_MESSAGE_LIMIT)
  local ok, total, ended, clean, input, window, done = ws_walk(z, data)
  if not ok then
    restart()
    if type(total) == "table" and total.inflate == "over the limit" then return nil, over end
    z.broken = not fresh
    return nil, "Decompression failed"
  end
  local n, r, skip = total - done, "", 0
  if total > 0 then
    local pre = stored(window)
    skip = #window
    if #input * WS_RATIO > WS_MESSAGE_LIMIT then           -- may inflate far: big output steps for the C inflate
      local pad = padding()
      pre, skip = pad.text .. pre, pad.size + skip
    end
    r = uncompress(pre .. input)
    if r == nil or r:len() ~= skip + total then            -- the walk and zlib disagree: never seen
      restart()
      z.broken = not fresh
      return nil, "Decompression failed"
    end
  end
  if ended == "final" then
    restart()                    -- a final block ended the stream: the next message starts a new one
    -- ... and Wireshark's own context (context takeover) stays at the stream's end: it hands every later
    -- message up as it came, which says nothing of its websocket.decompress (dissectors/websocket.py ENDED)
    if not fresh then z.ended = true end
  elseif clean then
    if total > 0 then
      local keep = math.min(WS_WINDOW, #window + total)
      local from_out = math.min(keep, total)
      z.window = string.sub(window, #window - (keep - from_out) + 1) .. r:raw(skip + total - from_out, from_out)
    end
    z.carry, z.done = "", 0
  elseif #input > WS_MESSAGE_LIMIT then
    restart()
    return nil, over
  else
    z.carry, z.done = input, total
  end
  return r, skip + done, n
end

-- permessage-deflate parameters of a Sec-WebSocket-Extensions value (ws_handshake.extensions), or nil.
local function ws_extensions(value)
  for ext in string.gmatch(value .. ",", "([^,]*),") do
    local params, first = {}, nil
    for part in string.gmatch(ext .. ";", "([^;]*);") do
      part = part:match("^%s*(.-)%s*$")
      if first == nil then first = part:lower()
      elseif part ~= "" then
        local k, v = part:match("^([^=]*)=?(.*)$")
        params[k:match("^%s*(.-)%s*$"):lower()] = v:match("^%s*(.-)%s*$")
      end
    end
    if first == "permessage-deflate" then return params end
  end
  return nil
end

-- Whether this direction starts each message afresh (its side asked for no context takeover).
local function ws_fresh(conn, dir)
  return conn.deflate[(dir == conn.client and "client" or "server") .. "_no_context_takeover"] ~= nil
end

-- Whether Wireshark, inflating, would hand up something else than a one-frame compressed message as it came:
-- permessage-deflate was agreed and the message inflates to some bytes, or fails to (then nothing is handed up),
-- from the direction's state `z` (a walk only: `z` is left as it is).
local function ws_inflates(conn, dir, z, data)
  if not conn.deflate then return false end
  if z.broken then return true end
  local ok, total, _, _, _, _, done = ws_walk(ws_fresh(conn, dir) and { window = "" } or z, data)
  return not ok or total - done > 0
end

local ws_conns, ws_frames = {}, {}
-- Wireshark's websocket.decompress preference (no Lua API reads another protocol's preference): off when its
-- dissector hands up a one-frame compressed message as it is (seen in rt.ws_messages before that message is
-- inflated); the plugin then inflates no message, as protodump with the same preference.
local ws_keep_compressed = false
function rt.ws_reset() ws_conns, ws_frames = {}, {} end

local function ws_header(src, at)
  local avail = src:len() - at
  if avail < 2 then return nil end
  local b0, b1 = src(at, 1):uint(), src(at + 1, 1):uint()
  local size, pos = b1 % 128, at + 2
  if size == 126 then
    if avail < 4 then return nil end
    size, pos = src(at + 2, 2):uint(), pos + 2
  elseif size == 127 then
    if avail < 10 then return nil end
    size, pos = src(at + 2, 4):uint() * 4294967296.0 + src(at + 6, 4):uint(), pos + 8   -- a float: no 5.4 wrap
  end
  local key
  if b1 >= 128 then
    if src:len() < pos + 4 then return nil end
    key, pos = src:raw(pos, 4), pos + 4
  end
  local n = math.max(0, math.min(size, src:len() - pos))
  return { fin = b0 >= 128, rsv = math.floor(b0 / 16) % 8, opcode = b0 % 16, key = key,
           payload = n > 0 and src:raw(pos, n) or "", whole = pos - at + size }
end

-- One data frame into its direction's message (websocket.py data_frame/message); a complete message is added
-- to `out`.
local function ws_data_frame(conn, dir, f, out, pinfo)
  local d = conn.dirs[dir]
  if not d then d = { z = { window = "" } }; conn.dirs[dir] = d end
  local payload = f.key and rt.ws_unmask(f.payload, f.key) or f.payload
  local m = d.msg
  if f.opcode == 0 then
    if m == nil then m = { opcode = 2, compressed = false, parts = {}, size = 0, frames = 0 }; d.msg = m end
  else
    m = { opcode = f.opcode, compressed = f.rsv >= 4, parts = {}, size = 0, frames = 0 }
    d.msg = m
  end
  m.parts[#m.parts + 1] = payload
  m.size, m.frames = m.size + #payload, m.frames + 1
  if m.size > WS_MESSAGE_LIMIT or m.frames > WS_FRAGMENT_LIMIT then
    d.msg = nil
    out[#out + 1] = { err = "reassembly" }
    return
  end
  if not f.fin then return end
  d.msg = nil
  local data = table.concat(m.parts)
  local plain = not f.key
  if m.compressed and conn.deflate and not ws_keep_compressed then
    if not d.charged then         -- an inflate window: counted in the state budget (Python's Inflater.COST)
      d.charged = true
      rt.state_charge(pinfo, LIMITS.INFLATE_COST, function() d.z = { window = "" } end)
    end
    local ended = d.z.ended      -- (before this message: Wireshark inflated it if its own final block ends it)
    local r, at, n = rt.ws_inflate(d.z, data, ws_fresh(conn, dir))
    if r == nil then out[#out + 1] = { err = at }; return end
    if n == 0 then return end
    -- the message alone (r also holds the window before it: a range of r would place the message's items at
    -- their offset in that buffer, where protodump's "Decompressed payload" holds the message only)
    out[#out + 1] = { data = r:raw(at, n), name = "Decompressed payload",
                      compressed = #m.parts == 1 and not ended and data or nil,
                      plain = { data = data, name = plain and "Reassembled WebSocket message" or "Unmasked data" } }
    return
  end
  if #data == 0 then return end
  out[#out + 1] = { data = data, name = plain and "Reassembled WebSocket message" or "Unmasked data" }
end

-- This frame's complete WebSocket messages: a list of { data = bytes, name = source name } or
-- { err = reason }. Computed while Wireshark dissects the frame the first time, as its websocket items appear (a
-- hand-off sees the items up to its own frame; the postdissector sees them all and closes the record), replayed
-- on every later dissection. `final`: this is the postdissector.
function rt.ws_messages(pinfo, final, delivered)
  local rec = ws_frames[pinfo.number]
  if rec and rec.done then return rec.msgs end
  if not ws_fields() then return nil end
  if rec == nil then
    local streams = all(F_TCP_STREAM)
    if #streams == 0 then return nil end
    local key = tostring(streams[#streams].value)
    local dir = tostring(pinfo.src) .. ":" .. string.format("%d", pinfo.src_port) .. ">" ..
                tostring(pinfo.dst) .. ":" .. string.format("%d", pinfo.dst_port)
    local conn = ws_conns[key]
    if #all(F_HTTP_REQ) > 0 then
      conn = { client = dir, dirs = {} }        -- an upgrade request starts the connection afresh
      ws_conns[key] = conn
      -- freed with its conversation (rt.conversation's lifetime, cap and budget)
      rt.state_charge(pinfo, 0, function() if ws_conns[key] == conn then ws_conns[key] = nil end end)
    end
    if conn then
      for _, fi in ipairs(all(F_HTTP_CODE)) do
        if tonumber(tostring(fi.value)) == 101 then
          local ext = all(F_HTTP_EXT)
          conn.deflate = #ext > 0 and ws_extensions(tostring(ext[#ext].value)) or nil
        end
      end
    end
    if conn == nil then return {} end
    rec = { conn = conn, dir = dir, seen = 0, msgs = {}, done = false }
    ws_frames[pinfo.number] = rec
  end
  local frames = all(F_WS)
  for i = rec.seen + 1, #frames do
    local ok, f = pcall(ws_header, frames[i].source, frames[i].offset)
    local d = rec.conn.dirs[rec.dir]
    if not d then d = { z = { window = "" } }; rec.conn.dirs[rec.dir] = d end
    if ok and f and f.whole > WS_MAX_FRAME then d.stopped = true end
    if ok and f and f.opcode < 8 and not d.stopped then
      -- the frame Wireshark just handed up, a one-frame compressed message, delivered as it is: its
      -- websocket.decompress is off, so this message is not inflated either (nor any later one). Not when the
      -- message inflates to nothing: Wireshark hands such a message up as it came (it makes no buffer of 0 bytes)
      if delivered and i == #frames and f.fin and f.rsv >= 4 and f.opcode ~= 0 and not ws_keep_compressed
          and not d.z.ended and delivered:len() == #f.payload and #f.payload > 0 then
        local payload = f.key and rt.ws_unmask(f.payload, f.key) or f.payload
        if delivered:raw(0, delivered:len()) == payload and ws_inflates(rec.conn, rec.dir, d.z, payload) then
          ws_keep_compressed = true
        end
      end
      ws_data_frame(rec.conn, rec.dir, f, rec.msgs, pinfo)
    end
    if ok and f and f.opcode == 8 then     -- both sides sent Close: the conversation ends (dissectors/websocket.py)
      d.closed = true
      local n = 0
      for _, side in pairs(rec.conn.dirs) do if side.closed then n = n + 1 end end
      if n == 2 then rt.end_conversation(pinfo) end
    end
  end
  rec.seen = math.max(rec.seen, #frames)
  if final then rec.done, rec.conn = true, nil end
  return rec.msgs
end

-- Whether this frame's messages were shown by an earlier dissection (replay: state is not learnt again). Not
-- pinfo.visited: under tshark -2 the first pass sees no fields, so the first dissection that computes is visited.
function rt.ws_visited(pinfo)
  local rec = ws_frames[pinfo.number]
  return rec ~= nil and rec.done == true
end

-- Hand-off bookkeeping: which of the frame's messages Wireshark's calls have shown.
local ws_calls = {}

-- Called for a message Wireshark hands up (tvb: what it delivered): the plugin's message to show instead,
-- its tvb, or nil (nothing of ours here). `found` is false when the plugin could not see the frames.
function rt.ws_next(pinfo, tvb)
  local msgs = rt.ws_messages(pinfo, false, tvb)
  if msgs == nil then return nil, false end
  local i = (ws_calls[pinfo.number] or 0) + 1
  while msgs[i] and msgs[i].err do i = i + 1 end
  local m = msgs[i]
  -- none complete yet (tshark -2's second pass hands a reassembled message up before the frame's last fragments):
  -- the count stays, so the postdissector still shows it
  if m == nil then return nil, true end
  ws_calls[pinfo.number] = i
  if m.compressed and tvb:len() == #m.compressed and tvb:raw(0, tvb:len()) == m.compressed then
    ws_keep_compressed = true
    m = m.plain
    msgs[i] = m
  end
  return rt.ws_tvb(m, tvb), true
end

function rt.ws_tvb(m, delivered)
  if delivered and delivered:len() == #m.data and delivered:raw(0, delivered:len()) == m.data then return delivered end
  return ByteArray.new(m.data, true):tvb(m.name)
end

-- The Info column of a frame holding several messages: their texts joined with ", " (reset by the postdissector
-- at the end of every dissection, so the next dissection of the frame starts afresh).
local info_frame, info_parts = -1, {}
function rt.ws_info(pinfo, info)
  if info_frame ~= pinfo.number then info_frame, info_parts = pinfo.number, {} end
  info_parts[#info_parts + 1] = tostring(info)
  pinfo.cols.info:set(table.concat(info_parts, ", "))
end

-- The messages of this frame no hand-off showed (postdissector); resets the count for the next dissection.
function rt.ws_rest(pinfo)
  local msgs = rt.ws_messages(pinfo)
  local i = ws_calls[pinfo.number] or 0
  ws_calls[pinfo.number] = nil
  local rest = {}
  if msgs == nil then return rest end
  for j = i + 1, #msgs do
    if not msgs[j].err then rest[#rest + 1] = rt.ws_tvb(msgs[j]) end
  end
  return rest
end

-- The protocols over WebSocket (rt.ws_consumer(fn): fn(tvb, pinfo, tree) shows the message if it is theirs):
-- the messages Wireshark did not hand up are offered to them at the end of the frame by one postdissector.
local ws_consumers = {}
function rt.ws_consumer(fn)
  if #ws_consumers == 0 then
    local post = Proto("protodump.ws", "protodump: WebSocket messages Wireshark did not hand up")
    function post.dissector(tvb, pinfo, tree)
      local ok, rest = pcall(rt.ws_rest, pinfo)
      if ok then
        for _, t in ipairs(rest) do
          for _, take in ipairs(ws_consumers) do
            local ok2, taken = pcall(take, t, pinfo, tree)
            if ok2 and taken then break end
          end
        end
      end
      info_frame = -1
      pcall(rt.ws_messages, pinfo, true)      -- the record is complete: later dissections replay it
      return 0       -- adds no layer of its own (frame.protocols unchanged)
    end
    register_postdissector(post)
  end
  ws_fields()           -- Field.new only works while the plugin loads
  ws_consumers[#ws_consumers + 1] = fn
end
