-- File transfers (engine/blocks_transfer.py): the same trees.

-- zlib inflate with a cap of our own (rt.inflate's is for blank's small chunks): strict and bounded
-- (lua/rt_inflate.lua).
function rt.inflate_capped(s, name, limit)
  return (rt.inflate_strict(s, limit, name))
end

-- File transfers (engine.blocks_transfer.Transfer): the state steps run on the first pass only (rt.once).
local FILE_LIMIT, INFLATED_LIMIT, REQUEST_LIMIT, BLOCK_LIMIT = LIMITS.FILE_LIMIT, LIMITS.INFLATED_LIMIT,
  LIMITS.REQUEST_LIMIT, LIMITS.BLOCK_LIMIT

-- Place a piece, the first copy of a byte winning (as reassembly/offsets.py): only the spans no earlier piece
-- covered are kept, so the parts never overlap; returns the bytes added.
local function place(parts, at, piece)
  if at >= (parts.hi or 0) then                 -- past every earlier piece (blocks in order): nothing to scan
    if #piece > 0 then parts[#parts + 1] = { at, piece }; parts.hi = at + #piece end
    return #piece
  end
  local todo = { { at, at + #piece } }
  for _, q in ipairs(parts) do
    local qs, qe, left = q[1], q[1] + #q[2], {}
    for _, span in ipairs(todo) do
      local s, e = span[1], span[2]
      if qe <= s or qs >= e then left[#left + 1] = span
      else
        if s < qs then left[#left + 1] = { s, qs } end
        if qe < e then left[#left + 1] = { qe, e } end
      end
    end
    todo = left
  end
  local added = 0
  for _, span in ipairs(todo) do
    parts[#parts + 1] = { span[1], string.sub(piece, span[1] - at + 1, span[2] - at) }
    added = added + span[2] - span[1]
    if span[2] > (parts.hi or 0) then parts.hi = span[2] end
  end
  return added
end

local function joined(parts)
  table.sort(parts, function(a, b) return a[1] < b[1] end)
  local out = {}
  for i, q in ipairs(parts) do out[i] = q[2] end
  return table.concat(out)
end

local STEPS = {}

function STEPS.request(c, st, names, mask)
  if #st.requests >= REQUEST_LIMIT then table.remove(st.requests, 1) end
  local kind = (rt.lookup(c, names.kind) or 0) % (mask + 1)
  st.requests[#st.requests + 1] = { rt.lookup(c, names.name), kind, c.frame }
  return {}
end

function STEPS.start(c, st, names)
  local total, size = rt.lookup(c, names.total), rt.lookup(c, names.size)
  local req = table.remove(st.requests, 1)
  local res = { name = req and req[1] or "?", kind = req and req[2] or 0, noreq = req == nil }
  if total > FILE_LIMIT then
    res.toolarge = string.format("Transfer of %d bytes exceeds the limit of %d", total, FILE_LIMIT)
    st.current = nil
    return res
  end
  if size > INFLATED_LIMIT then             -- given up at once, before any byte is kept or inflated
    res.toolarge = string.format("File of %d bytes exceeds the limit of %d", size, INFLATED_LIMIT)
    st.current = nil
    return res
  end
  st.current = { name = res.name, kind = res.kind, total = total, size = size, parts = {}, got = 0, frames = {},
                 seen = {}, blocks = 0 }
  return res
end

function STEPS.piece(c, st, names)
  local cur = st.current
  if cur == nil then return { none = true } end
  local res = { name = cur.name, kind = cur.kind }
  local at, piece = rt.lookup(c, names.at), rt.lookup(c, names.data)
  if cur.blocks >= BLOCK_LIMIT then
    res.toomany = string.format("More than %d blocks: the transfer is dropped", BLOCK_LIMIT)
    st.current = nil
    return res
  end
  if cur.whole == nil then
    if at + #piece > cur.total then
      res.err = string.format("Block %d+%d lies beyond the transfer size %d", at, #piece, cur.total)
      return res
    end
    cur.got = cur.got + place(cur.parts, at, piece)
    if not cur.seen[c.frame] then cur.seen[c.frame] = true; cur.frames[#cur.frames + 1] = c.frame end
    if cur.got >= cur.total then
      cur.whole = joined(cur.parts)
      table.sort(cur.frames)
      cur.parts, cur.seen = {}, {}            -- done: keep no pieces
    end
  end
  cur.blocks = cur.blocks + 1
  return res
end

function STEPS.finish(c, st)
  local cur = st.current
  st.current = nil
  if cur == nil then return { none = true } end
  local res = { name = cur.name, kind = cur.kind, total = cur.total, size = cur.size }
  if cur.whole == nil then
    res.got = cur.got
    return res
  end
  res.whole, res.blocks, res.first, res.last = cur.whole, cur.blocks, cur.frames[1], cur.frames[#cur.frames]
  return res
end

function STEPS.abort(c, st, names, mask, who)
  local cur = st.current
  st.current = nil
  if cur == nil and who == "Server" and #st.requests > 0 then   -- refuses the oldest request (a missing file)
    local req = table.remove(st.requests, 1)
    return { refused = true, name = req[1], kind = req[2], frame = req[3] }
  end
  if cur == nil then return { none = true } end
  return { name = cur.name, kind = cur.kind, total = cur.total,
           got = cur.whole and cur.total or cur.got }
end

local function file_node(c, T, F, label, res)
  local r = c.tvb(c.pos, 0)
  local node = T:add(F.node, r)
  node:set_text(label .. ": " .. res.name)
  node:set_generated()
  node:add(F.name, r, res.name):set_generated()
  node:add(F.kind, r, res.kind):set_generated()
  return node, r
end

local function show_end(c, T, F, label, res, inside)
  if res.none then
    rt.expert(c, T, "unexpected", "File end with no file transfer active")
    c.sc[1].file = "no transfer active"
    return
  end
  local node, r = file_node(c, T, F, label, res)
  node:add(F.total, r, res.total):set_generated()
  node:add(F.size, r, res.size):set_generated()
  if res.whole == nil then
    node:add(F.received, r, res.got):set_generated()
    rt.expert(c, node, "reassembly", string.format("File transfer ended with %d of %d bytes", res.got, res.total))
    c.sc[1].file = res.name .. " incomplete"
    return
  end
  node:add(F.blocks, r, res.blocks):set_generated()
  node:add(F.first, r, res.first):set_generated()
  node:add(F.last, r, res.last):set_generated()
  local data = nil
  if #res.whole > 0 then
    data = rt.inflate_capped(res.whole, "Inflated file", INFLATED_LIMIT)
  end
  if data == nil then
    -- the bytes as received, a data source as protodump's (its --export-objects saves them)
    if #res.whole > 0 then ByteArray.new(res.whole, true):tvb("Reassembled file") end
    rt.expert(c, node, "malformed", "File does not inflate (zlib)")
    c.sc[1].file = res.name .. " (does not inflate)"
    return
  end
  node:add(F.inflated, r, data:len()):set_generated()
  if data:len() ~= res.size then
    rt.expert(c, node, "unexpected", string.format("Inflated to %d bytes, %d announced", data:len(), res.size))
  end
  -- (a wire string joined, not formatted: Lua 5.2's "%s" cuts one under 100 bytes at a NUL, 5.4's keeps it whole;
  -- Wireshark then cuts the text it is shown in at the NUL: the column, the label, the expert's message)
  c.sc[1].file = res.name .. string.format(" (%d -> %d bytes)", #res.whole, data:len())
  local fn = inside[res.kind]
  if fn then
    local sub = { tvb = data, pos = 0, stop = data:len(), sc = { {} }, conv = c.conv, frame = c.frame, dir = c.dir,
                  E = c.E, notes = c.notes }
    pcall(fn, sub, node)
  end
end

function rt.transfer(c, T, step, label, F, names, inside, mask, who)
  c.conv.files = c.conv.files or { requests = {} }
  local st = c.conv.files
  local name = step == "end" and "finish" or step
  local res = rt.once(c, "file" .. string.format("%d", c.layer or 0), function()
    return STEPS[name](c, st, names, mask, who)
  end)
  if step == "request" then return end
  if step == "end" then return show_end(c, T, F, label, res, inside) end
  if res.none then
    local msg = step == "piece" and "File block with no file transfer active"
      or (step == "abort" and (who .. " aborts with no file transfer active")) or nil
    if msg then rt.expert(c, T, "unexpected", msg) end
    return
  end
  local node, r = file_node(c, T, F, label, res)
  if step == "start" then
    if res.noreq then rt.expert(c, node, "unexpected", "File transfer started without a request") end
    if res.toolarge then rt.expert(c, node, "reassembly", res.toolarge) end
  elseif step == "piece" then
    if res.toomany then rt.expert(c, node, "reassembly", res.toomany) end
    if res.err then rt.expert(c, node, "malformed", res.err) end
  elseif step == "abort" and res.refused then
    node:add(F.request, r, res.frame):set_generated()
    rt.expert(c, node, "unexpected", "Server refused the request for " .. res.name ..
      string.format(" (frame %d)", res.frame))
  elseif step == "abort" then
    node:add(F.received, r, res.got):set_generated()
    rt.expert(c, node, "reassembly", who .. " aborted the transfer of " .. res.name ..
      string.format(" (%d of %d bytes)", res.got, res.total))
  end
end
