-- protodump Lua runtime, the core every generated dissector uses: the decode context (c), experts and
-- truncation (rt.need), first-pass state replayed on re-dissection (rt.once, rt.msg_once), scopes, bounded tables,
-- Info templates, UTF-8 and NUL-ended strings (engine/fields.py, engine/strings.py), and conversation state with
-- its lifetime (engine/lifetime.py). The building blocks' Lua halves are lua/rt_<concept>.lua, each beside its
-- engine/blocks_<concept>.py (tests/test_block_twins.py); the plugin carries this file first, then those.
-- Runs on Lua 5.2 (Wireshark 4.0) and 5.4 (Wireshark >= 4.2): no bit operators, no bit32.
local rt = {}
rt.TRUNC = {}                       -- sentinel error: a field ran past the end of the data

-- c: one decode. c.tvb, c.pos, c.stop, c.sc (scope stack, innermost last), c.conv, c.frame, c.dir, c.E
function rt.expert(c, item, kind, msg)
  item:add_proto_expert_info(c.E[kind], msg)
end

function rt.need(c, size, what, parent)
  local left = c.stop - c.pos
  if size > left then
    if left < 0 then left = 0 end
    rt.expert(c, parent, "malformed",
      string.format("Truncated: %s needs %d byte%s, %d left", what, size, size ~= 1 and "s" or "", left))
    error(rt.TRUNC)
  end
end

-- State that depends on the packets before this one (sequence analysis, reassembly, a revision decided from
-- earlier lengths) is computed on the first pass only and replayed when Wireshark dissects the frame again
-- (pinfo.visited: every click in the GUI, tshark -2): running it again would see its own earlier effects.
function rt.once(c, key, fn)
  local memo = c.conv.memo
  if not memo then memo = {}; c.conv.memo = memo end
  local k = key .. "@" .. string.format("%d", c.frame)
  local kept = memo[k]
  if kept == nil or not c.visited then
    kept = table.pack(fn())
    memo[k] = kept
  end
  return table.unpack(kept, 1, kept.n)
end

-- State read by a message's decode is computed on the first pass and replayed (rt.once); several messages can
-- share a frame (WebSocket), so the key also counts the messages of the frame.
local msg_frame, msg_visited, msg_count = -1, false, 0
function rt.msg_once(c, key, fn)
  if c.mkey == nil then
    if c.frame ~= msg_frame or c.visited ~= msg_visited then
      msg_frame, msg_visited, msg_count = c.frame, c.visited, 0
    end
    msg_count = msg_count + 1
    c.mkey = string.format("%d", msg_count)
  end
  return rt.once(c, key .. "#" .. c.mkey, fn)
end

-- Bounded per-conversation tables (the twin of engine.context.bounded_put): a new key beyond `limit` evicts the
-- oldest one. t = { map = {}, q = {}, h = 1, t = 0, n = 0 }.
function rt.btable() return { map = {}, q = {}, h = 1, t = 0, n = 0 } end

function rt.bput(tb, key, value, limit)
  if tb.map[key] == nil then
    if tb.n >= limit then
      local old = tb.q[tb.h]
      tb.q[tb.h] = nil
      tb.h = tb.h + 1
      tb.map[old] = nil
      tb.n = tb.n - 1
    end
    tb.t = tb.t + 1
    tb.q[tb.t] = key
    tb.n = tb.n + 1
  end
  tb.map[key] = value
end

function rt.lookup(c, name)
  for i = #c.sc, 1, -1 do
    local v = c.sc[i][name]
    if v ~= nil then return v end
  end
  return nil
end

function rt.set(c, name, value) c.sc[#c.sc][name] = value end
function rt.push(c, name) local s = {}; c.sc[#c.sc][name] = s; c.sc[#c.sc + 1] = s; return s end
function rt.pop(c) c.sc[#c.sc] = nil end

-- The non-empty strings of a list joined by single spaces (the Info column: label, header info, packet info, notes).
function rt.join_nonempty(parts)
  local out = {}
  for _, p in ipairs(parts) do if p ~= nil and p ~= "" then out[#out + 1] = p end end
  return table.concat(out, " ")
end

function rt.template(parts, values)
  local out = {}
  for i = 1, #parts, 2 do
    if parts[i] then
      local v = values[parts[i + 1]]
      if v == nil then out[#out + 1] = "?"
      elseif type(v) == "number" then out[#out + 1] = string.format("%d", v)
      else out[#out + 1] = tostring(v) end
    else
      out[#out + 1] = parts[i + 1]
    end
  end
  return table.concat(out)
end

-- UTF-8 with each maximal ill-formed subpart replaced by U+FFFD (Wireshark's ENC_UTF_8 rule, Python's
-- 'replace'). TvbRange:string(ENC_UTF_8) cannot be used: it cuts its result to the raw byte length.
local SECOND = {}   -- lead byte -> { sequence length, lowest and highest allowed second byte }
for b = 0xC2, 0xDF do SECOND[b] = { 2, 0x80, 0xBF } end
SECOND[0xE0] = { 3, 0xA0, 0xBF }
for b = 0xE1, 0xEC do SECOND[b] = { 3, 0x80, 0xBF } end
SECOND[0xED] = { 3, 0x80, 0x9F }
SECOND[0xEE] = { 3, 0x80, 0xBF }; SECOND[0xEF] = { 3, 0x80, 0xBF }
SECOND[0xF0] = { 4, 0x90, 0xBF }
for b = 0xF1, 0xF3 do SECOND[b] = { 4, 0x80, 0xBF } end
SECOND[0xF4] = { 4, 0x80, 0x8F }

local HIGH = "[\128-\255]"
function rt.utf8(raw)
  if not string.find(raw, HIGH) then return raw end       -- ASCII (most text, and megabytes of it): as is
  local out, i, n = {}, 1, #raw
  while i <= n do
    local j = string.find(raw, HIGH, i) or n + 1        -- copy ASCII runs whole, not byte by byte
    if j > i then out[#out + 1] = string.sub(raw, i, j - 1); i = j end
    if i > n then break end
    local b = string.byte(raw, i)
    do
      local rule, good = SECOND[b], 1
      if rule then
        local lo, hi = rule[2], rule[3]
        while good < rule[1] and i + good <= n do
          local x = string.byte(raw, i + good)
          if x < lo or x > hi then break end
          good, lo, hi = good + 1, 0x80, 0xBF
        end
      end
      if rule and good == rule[1] then
        out[#out + 1] = string.sub(raw, i, i + good - 1)
      else
        out[#out + 1] = "\239\191\189"
      end
      i = i + good
    end
  end
  return table.concat(out)
end

-- A NUL-ended string in `area` bytes: returns its value, its length without NUL, the bytes it uses.
function rt.cstring(c, area, fixed)
  if area <= 0 then return "", 0, 0 end
  local raw = c.tvb:raw(c.pos, area)
  local nul = string.find(raw, "\0", 1, true)
  local n = nul and nul - 1 or area
  local used = (fixed or not nul) and area or n + 1
  return rt.utf8(string.sub(raw, 1, n)), n, used
end

-- Conversation state, keyed by the two endpoints in a fixed order; direction "src:port>dst:port".
-- Its lifetime is engine/lifetime.py's: all state of a pair of endpoints is dropped at the pair's next packet once
-- it ended (rt.end_conversation: ENet DISCONNECT, WebSocket Close both ways) more than CONV_LINGER seconds of
-- capture time ago, or has been idle for CONV_TIMEOUT, or at once when a new TCP connection (tcp.stream) starts
-- there. Beyond CONV_MAX live pairs, or beyond STATE_BUDGET bytes of
-- heavy state (rt.state_charge: inflate windows), the oldest is dropped (ended ones first, then the least recently
-- seen) and its next packet gets the note Python gives (rt.conversation_note). Only the first pass decides:
-- re-dissection replays what the first pass recorded.
local conversations, endpoints = {}, {}
local live = { n = 0 }              -- pair records in two lists, oldest first: ended ones, then the others
local lists = { ended = {}, live = {} }
local forgotten, forgotten_ring, forgotten_at = {}, {}, 0   -- pair -> why it was dropped (bounded ring)
local frame_notes = {}              -- frame number -> { proto, note }: shown on that frame's first game layer
local state_used = 0                -- bytes charged by rt.state_charge for live pairs
local function unlink(seen)
  local l = lists[seen.list]
  if seen.prev then seen.prev.next = seen.next else l.head = seen.next end
  if seen.next then seen.next.prev = seen.prev else l.tail = seen.prev end
  seen.prev, seen.next = nil, nil
end
local function append(seen, name)
  local l = lists[name]
  seen.list, seen.prev, seen.next = name, l.tail, nil
  if l.tail then l.tail.next = seen else l.head = seen end
  l.tail = seen
end
local function drop(pair, seen, why)
  for key in pairs(seen.keys) do conversations[key] = nil end
  for _, free in ipairs(seen.frees) do pcall(free) end
  state_used = math.max(0, state_used - seen.charged)
  unlink(seen)
  endpoints[pair] = nil
  live.n = live.n - 1
  if why then
    forgotten_at = forgotten_at % LIMITS.FORGOTTEN_LIMIT + 1
    local old = forgotten_ring[forgotten_at]
    if old then forgotten[old] = nil end
    forgotten_ring[forgotten_at], forgotten[pair] = pair, why
  end
end
local function over_cap()
  while live.n > 0 do
    local why
    if live.n > LIMITS.CONV_MAX then
      why = string.format("more than %d live conversations: protodump.max_conversations", LIMITS.CONV_MAX)
    elseif state_used > LIMITS.STATE_BUDGET then
      why = string.format("conversation state over %d bytes: protodump.state_budget", LIMITS.STATE_BUDGET)
    else
      return
    end
    local oldest = lists.ended.head or lists.live.head
    drop(oldest.pair, oldest, "Conversation state was dropped (" .. why .. "): its analysis starts again here")
  end
end
local function pair_of(pinfo)
  local a = tostring(pinfo.src) .. ":" .. string.format("%d", pinfo.src_port)
  local b = tostring(pinfo.dst) .. ":" .. string.format("%d", pinfo.dst_port)
  return (a < b and (a .. "|" .. b) or (b .. "|" .. a)), a .. ">" .. b
end
-- tshark's tcp.stream of this frame (nil: not TCP, or no tree on this pass)
-- (a function: outside Wireshark, as in the tests' plain Lua, there is no Field)
local ok_stream, F_TCP_STREAM = pcall(function() return Field.new("tcp.stream") end)
local function tcp_stream(pinfo)
  if not ok_stream or pinfo.port_type ~= 2 then return nil end     -- PT_TCP
  local ok, all = pcall(function() return { F_TCP_STREAM() } end)
  if not ok or #all == 0 then return nil end
  return all[1].value
end
function rt.conversation(proto, pinfo)
  local pair, dir = pair_of(pinfo)
  local seen = endpoints[pair]
  if not pinfo.visited then
    local now = pinfo.abs_ts
    local stream = tcp_stream(pinfo)
    if seen and ((seen.ended and seen.ended < now - LIMITS.CONV_LINGER)
                 or (not seen.ended and seen.last < now - LIMITS.CONV_TIMEOUT)
                 or (stream and seen.stream and stream ~= seen.stream)) then
      -- (a new tcp.stream on these endpoints: a SYN reused the ports; the earlier connection's state goes, and
      -- its end no longer frees the new one: engine.dispatch, engine.lifetime.Lifetimes.restart)
      drop(pair, seen, nil)
      seen = nil
    end
    if seen and stream then seen.stream = stream end
    if not seen then
      seen = { keys = {}, last = now, pair = pair, frees = {}, charged = 0, stream = stream }
      endpoints[pair] = seen
      append(seen, "live")
      live.n = live.n + 1
      if forgotten[pair] then
        frame_notes[pinfo.number] = { proto, forgotten[pair] }
        forgotten[pair] = nil
      end
      over_cap()
    elseif not seen.ended then
      seen.last = now
      unlink(seen); append(seen, "live")
    end
  end
  local key = proto .. "|" .. pair
  local conv = conversations[key]
  if not conv then
    conv = {}; conversations[key] = conv
    if seen then seen.keys[key] = true end
  end
  return conv, dir
end
function rt.end_conversation(pinfo)
  local seen = endpoints[pair_of(pinfo)]
  if seen and not seen.ended and not pinfo.visited then
    seen.ended = pinfo.abs_ts
    unlink(seen); append(seen, "ended")
  end
end
-- Heavy state held for this frame's pair (an inflate window): `free` is called when the pair is dropped.
function rt.state_charge(pinfo, bytes, free)
  if pinfo.visited then return end
  local seen = endpoints[pair_of(pinfo)]
  if not seen then rt.conversation("websocket", pinfo); seen = endpoints[pair_of(pinfo)] end
  seen.charged = seen.charged + bytes
  state_used = state_used + bytes
  seen.frees[#seen.frees + 1] = free
  over_cap()
end
-- The note for a conversation dropped by the cap, on the first layer of its next packet (engine.dispatch).
function rt.conversation_note(proto, pinfo, item, E)
  local note = frame_notes[pinfo.number]
  if note and note[1] == proto and E and E.sequence then item:add_proto_expert_info(E.sequence, note[2]) end
end
function rt.reset()
  conversations, endpoints, forgotten, forgotten_ring, frame_notes = {}, {}, {}, {}, {}
  lists.ended, lists.live, live.n, state_used, forgotten_at = {}, {}, 0, 0, 0
end

-- Every value of a field extractor in this frame so far ({} when none, or no tree on this pass).
function rt.field_values(f)
  if not f then return {} end
  local ok, r = pcall(function() return { f() } end)
  return ok and r or {}
end
