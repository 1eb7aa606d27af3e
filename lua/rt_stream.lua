-- Stream protocols over TCP and SCTP (the twin of engine/streams.py, reassembly/tcp.py, reassembly/sctp.py).
--
-- The plugin does its own stream reassembly instead of dissect_tcp_pdus: from tcp.seq / tcp.len (and
-- sctp.data_sid / sctp.data_ssn) it places every PDU in the frame where tshark's own reassembly would (measured:
-- docs/tshark-formats.md section 6), resynchronises after a gap, and stops a direction that cannot be framed.
-- Why not dissect_tcp_pdus: `tshark -2` builds no tree on its first pass, so a Lua dissector cannot see the TCP
-- analysis there, and the cuts dissect_tcp_pdus made blind would be replayed on the second pass. Here a frame is
-- computed at its first dissection that has the fields (the first pass normally, the second one under -2: on a
-- blind pass nothing is done), and replayed from a record on every later one (GUI clicks), so every run shows
-- the same.

local STREAM_MAX_PDU = LIMITS.MAX_PDU      -- reassembly.tcp.MAX_PDU
local STREAM_RESYNC_LIMIT = LIMITS.RESYNC_LIMIT   -- engine.streams.RESYNC_LIMIT

local function stream_field(name)
  local ok, f = pcall(Field.new, name)
  if ok then return f end
  return nil
end
local F_TCP_SEQ = stream_field("tcp.seq")
local F_TCP_LOST = stream_field("tcp.analysis.lost_segment")
local F_TCP_LEN = stream_field("tcp.len")
local F_TCP_COMPLETE = stream_field("tcp.completeness")
local F_SCTP_SID = stream_field("sctp.data_sid")
local F_SCTP_SSN = stream_field("sctp.data_ssn")
local F_SCTP_U = stream_field("sctp.data_u_bit")

-- the value of the last occurrence of a field in this frame so far (nil: none, or no tree on this pass)
local function last_value(f)
  if f == nil then return nil end
  local ok, all = pcall(function() return { f() } end)
  if not ok or #all == 0 then return nil end
  return all[#all].value
end

-- The first position where a whole PDU starts and the PDUs chained from it end exactly at the end of the data
-- or with one running past it (engine.streams.default_resync). len_at(pos) = pdu length at pos.
function rt.stream_default_resync(len_at, size)
  if size > STREAM_RESYNC_LIMIT then size = STREAM_RESYNC_LIMIT end
  local good, tail = {}, {}
  for pos = size - 1, 0, -1 do
    local n = len_at(pos)
    if n == 0 or (n > 0 and pos + n > size) then
      tail[pos] = n <= STREAM_MAX_PDU
    elseif n > 0 then
      local after = pos + n
      good[pos] = after == size or good[after] or tail[after] or false
    end
  end
  for pos = 0, size - 1 do
    if good[pos] then return pos end
  end
  return nil
end

local function stream_state(conv, key)
  conv.stream = conv.stream or {}
  local st = conv.stream[key]
  if not st then
    st = { recs = {}, nxt = 0, stopped = false, resyncing = false, started = false, next_ssn = 0, carry = "" }
    conv.stream[key] = st
  end
  return st
end

-- The record of one call in frame pinfo.number: { entries = layers to show, in order }, computed once and replayed
-- on every later dissection of the frame. index: which call of the frame this is (SCTP: the DATA chunk's number
-- in the packet; TCP: 1), nil on a tree-less pass (then the order of the calls counts).
local function stream_record(st, pinfo, index)
  local frame = pinfo.number
  if st.cur_frame ~= frame then st.cur_frame, st.ordinal = frame, 0 end
  st.ordinal = st.ordinal + 1
  local recs = st.recs[frame]
  if recs == nil then recs = {}; st.recs[frame] = recs end
  local k = index or st.ordinal
  local rec = recs[k]
  if rec and pinfo.visited then return rec, true end
  local before = 0
  for i, r in pairs(recs) do if i < k then before = before + r.pdus end end
  rec = { entries = {}, pdus = 0, first_pdu = before }
  recs[k] = rec
  return rec, false
end

-- --- showing a record ------------------------------------------------------------------------------------------

-- the tvb of a recorded layer; made: reassembled buffers already turned into a tvb (one data source each)
local function stream_tvb(e, seg_tvb, made)
  if e.buf == nil then return seg_tvb(e.off, e.n):tvb() end
  local t = made[e.buf]
  if t == nil then t = ByteArray.new(e.buf, true):tvb(e.source); made[e.buf] = t end
  return t(e.off, e.n):tvb()
end

-- The Info texts of our layers in this frame, joined with ", " as protodump joins them: one count per frame,
-- reset at the frame's first call (an SCTP packet calls the dissector once per DATA chunk, behind a column
-- fence, so each chunk's text goes after the ones before).
local info_frame, info_parts = -1, {}

local function stream_show(spec, e, t, pinfo, tree, conv, st)
  local info, T
  if e.kind == "pdu" then
    local ok, i, item = pcall(spec.pdu_fn, t, pinfo, tree, conv, e.index)
    if ok then info, T = i, item end
  else
    T = tree:add(spec.proto, t())
    if spec.opts.data then T:add(spec.opts.data, t()) end
    if e.msg and spec.opts.E then T:add_proto_expert_info(spec.opts.E[e.ekind], e.msg) end
    info = string.format("[Undecoded: %d bytes]", t:len())
  end
  if e.note and T and spec.opts.E then T:add_proto_expert_info(spec.opts.E["sequence"], e.note) end
  if T and #info_parts == 0 then rt.conversation_note(spec.name, pinfo, T, spec.opts.E) end   -- first layer
  pinfo.cols.protocol:set(spec.name)       -- only frames with a layer of ours (Python: Packet.protocol)
  if info ~= nil then
    info_parts[#info_parts + 1] = tostring(info)
    if #info_parts > 1 then pcall(function() pinfo.cols.info:clear_fence() end) end   -- SCTP's "DATA (TSN=n)"
    pinfo.cols.info:set(table.concat(info_parts, ", "))
  end
end

-- --- cutting one handover into PDUs (engine.streams.Cutter) -----------------------------------------------------
-- h = { buf = string (reassembled bytes) | nil (the segment tvb from seg_offset on), seg_offset, size, lost }

local function stream_cut(spec, h, seg_tvb, pinfo, tree, conv, st, rec)
  local src = h.buf and ByteArray.new(h.buf, true):tvb(spec.source) or seg_tvb
  local base = h.buf and 0 or h.seg_offset
  local size = h.size
  local note = nil
  local function len_at(pos)
    local ok, n = pcall(spec.len_fn, src, pinfo, base + pos, conv)
    if not ok or type(n) ~= "number" then return -1 end
    return n
  end
  local function emit(kind, pos, n, msg, ekind)
    local e = { kind = kind, off = base + pos, n = n, msg = msg, ekind = ekind }
    if h.buf then e.buf, e.source = h.buf, spec.source end
    if kind == "pdu" or msg == nil then e.note = note end
    note = nil
    if kind == "pdu" then rec.pdus = rec.pdus + 1; e.index = rec.first_pdu + rec.pdus end
    rec.entries[#rec.entries + 1] = e
    stream_show(spec, e, src(base + pos, n):tvb(), pinfo, tree, conv, st)
  end
  if st.stopped then emit("undecoded", 0, size); return end
  local pos = 0
  if h.lost or st.resyncing then
    if h.lost then note = "Previous segment(s) not captured: resynchronising" end
    local found
    local ok, r = pcall(function()
      if spec.opts.resync then
        local at = spec.opts.resync(src, pinfo, base, conv)
        return at and at - base
      end
      return rt.stream_default_resync(len_at, size)
    end)
    if ok and type(r) == "number" and r >= 0 and r <= size then found = r end
    if found == nil then
      st.resyncing = true
      emit("undecoded", 0, size, string.format(
        "Previous segment(s) not captured: no PDU start found in %d bytes, skipped", size), "sequence")
      return
    end
    st.resyncing = false
    if found > 0 then
      emit("undecoded", 0, found, string.format(
        "Previous segment(s) not captured: %d bytes skipped to resynchronise", found), "sequence")
    end
    pos = found
  end
  while pos < size do
    local n = len_at(pos)
    if n < 0 or n > STREAM_MAX_PDU or (n == 0 and size - pos > STREAM_MAX_PDU) then
      st.stopped = true
      local why = n > 0 and string.format("a PDU of %d bytes exceeds the limit of %d", n, STREAM_MAX_PDU)
        or "no PDU can start here"
      emit("undecoded", pos, size - pos,
        "Cannot frame the stream (" .. why .. "): the rest of this direction is not decoded", "malformed")
      return
    end
    if n == 0 or pos + n > size then
      return { pos = pos, need = n }                -- desegment: the PDU at pos needs more bytes
    end
    emit("pdu", pos, n)
    pos = pos + n
  end
end

-- the bytes of a handover from pos on, as a string
local function stream_rest(h, seg_tvb, pos)
  if h.buf then return string.sub(h.buf, pos + 1) end
  return seg_tvb:raw(h.seg_offset + pos, h.size - pos)
end

-- --- TCP: one direction's byte stream (reassembly.tcp.TcpDirection) ------------------------------------------

-- The handovers of one segment at stream offset `offset`, cut as they come (a cut may leave a pending PDU:
-- st.pending = { start, stop (nil: open), parts (strings), len, hole }: parts joined once, when complete).
local function stream_tcp_segment(spec, st, offset, tvb, pinfo, tree, conv, rec, synced)
  local size = tvb:len()
  if offset < st.nxt then                       -- a retransmission / late segment: never handed over
    if offset + size > st.nxt then st.nxt = offset + size end
    return
  end
  -- a gap, as TCP's analysis says: a retransmission that carried new bytes (never handed over) may have
  -- moved TCP's next expected sequence number past what this side saw (reassembly.tcp keeps the maximum)
  local lost = offset > st.nxt and F_TCP_LOST ~= nil and pcall(F_TCP_LOST) and F_TCP_LOST() ~= nil
  st.nxt = offset + size
  local function hand(h)
    if not st.started then
      st.started = true
      if not synced then h.lost = true end
    end
    local more = stream_cut(spec, h, tvb, pinfo, tree, conv, st, rec)
    if more then
      local start = h.offset + more.pos
      local rest = stream_rest(h, tvb, more.pos)
      st.pending = { start = start, stop = more.need > 0 and start + more.need or nil,
                     parts = { rest }, len = #rest, hole = false }
    end
  end
  local pos = 0
  local pend = st.pending
  if pend then
    if pend.stop == nil and offset == pend.start + pend.len then
      st.pending = nil
      pend.parts[#pend.parts + 1] = tvb:raw()
      hand({ buf = table.concat(pend.parts), size = pend.len + size, offset = pend.start, lost = false })
      return
    end
    if pend.stop and pend.start <= offset and offset < pend.stop then
      if not pend.hole then
        if offset == pend.start + pend.len then
          local n = math.min(size, pend.stop - offset)
          pend.parts[#pend.parts + 1] = tvb:raw(0, n)
          pend.len = pend.len + n
        else
          pend.hole = true                       -- a segment missing inside: this PDU never completes
        end
      end
      local complete = not pend.hole and pend.len == pend.stop - pend.start
      if not complete and offset + size <= pend.stop then return end
      st.pending = nil
      pos = pend.stop - offset
      if complete then
        hand({ buf = table.concat(pend.parts), size = pend.len, offset = pend.start, lost = false })
        if st.pending then                       -- the reassembled PDU asked for more: the rest joins it
          if pos < size then
            local p2 = st.pending
            local more = tvb:raw(pos)
            if p2.stop then more = string.sub(more, 1, p2.stop - (p2.start + p2.len)) end
            p2.parts[#p2.parts + 1] = more
            p2.len = p2.len + #more
          end
          return
        end
      end
      lost = false
    else
      st.pending = nil                           -- past it: abandoned
    end
  end
  if pos < size then hand({ seg_offset = pos, size = size - pos, offset = offset + pos, lost = lost }) end
end

-- Whether the conversation's handshake (SYN and SYN-ACK) was captured (Python: Connection.synced).
local function stream_synced()
  local v = last_value(F_TCP_COMPLETE)
  return v ~= nil and (tonumber(tostring(v)) or 0) % 4 == 3
end

-- --- SCTP: each message continues the byte stream of its stream id (reassembly.sctp.Stream) ------------------

local function stream_sctp_message(spec, st, tvb, pinfo, tree, conv, rec, ssn, ordered)
  local lost = false
  if ordered then
    local delta = (ssn - st.next_ssn) % 65536
    if delta >= 32768 then return end             -- late: its place in the stream is gone
    lost = delta > 0
    st.next_ssn = (ssn + 1) % 65536
  end
  if lost then st.carry = "" end
  local h
  if st.carry ~= "" then
    h = { buf = st.carry .. tvb:raw(), lost = lost }
    h.size = #h.buf
  else
    h = { seg_offset = 0, size = tvb:len(), lost = lost }
  end
  st.carry = ""
  local more = stream_cut(spec, h, tvb, pinfo, tree, conv, st, rec)
  if more then st.carry = stream_rest(h, tvb, more.pos) end
end

-- --- the dissector -------------------------------------------------------------------------------------------

-- The dissector of a stream protocol over TCP and SCTP.
--   len_fn(tvb, pinfo, offset, conv) -> n   the PDU at offset (the bytes from offset to the end of tvb are all
--                                             there is): > 0 its length, 0 need more, -1 cannot frame
--   pdu_fn(tvb, pinfo, tree, conv, index) -> info, T   dissects one PDU (the whole tvb), returns its Info text
--                                             and its layer item; index: the PDU's number within the frame
--                                             (1, 2, ...) for rt.once keys
--   opts = { data = F["<proto>.data"], E = E, resync = fn(tvb, pinfo, offset, conv) -> absolute pos | nil }
function rt.stream_dissector(proto, name, len_fn, pdu_fn, opts)
  local spec = { proto = proto, name = name, len_fn = len_fn, pdu_fn = pdu_fn, opts = opts or {} }
  return function(tvb, pinfo, tree)
    -- a segment an ICMP error quotes is not the stream's: it says no, and the stream's state is left alone
    -- (its sequence number is raw there; taken as the stream's, it would cut a hole in the direction)
    if pinfo.in_error_pkt then return 0 end
    local conv, dir = rt.conversation(name, pinfo)
    local sctp = pinfo.port_type == 1            -- PT_SCTP
    local key, seq, sid, ssn, unordered, index
    if sctp then
      local ok, all = pcall(function() return { F_SCTP_SID() } end)
      if ok and #all > 0 then index = #all end   -- this chunk's number among the packet's DATA chunks
      sid = last_value(F_SCTP_SID)
      ssn = last_value(F_SCTP_SSN)
      unordered = last_value(F_SCTP_U)
      key = dir .. "#" .. string.format("%d", tonumber(tostring(sid or 0)) or 0)
    else
      seq = last_value(F_TCP_SEQ)
      key = dir
      if seq ~= nil then index = 1 end
    end
    local st = stream_state(conv, key)
    if pinfo.number ~= info_frame or (index or 1) <= 1 then info_frame, info_parts = pinfo.number, {} end
    local blind = (sctp and ssn == nil) or (not sctp and seq == nil)
    if blind and not (pinfo.visited and st.recs[pinfo.number]) then return tvb:len() end   -- tree-less: later
    local rec, replay = stream_record(st, pinfo, index)
    if blind and not replay then return tvb:len() end
    if replay then
      local made = {}
      for _, e in ipairs(rec.entries) do
        stream_show(spec, e, stream_tvb(e, tvb, made), pinfo, tree, conv, st)
      end
      return tvb:len()
    end
    if sctp then
      spec.source = "Reassembled SCTP"
      stream_sctp_message(spec, st, tvb, pinfo, tree, conv, rec, tonumber(tostring(ssn)) or 0,
                          not (unordered == true or unordered == 1))
    else
      spec.source = "Reassembled TCP"
      -- tcp.seq is relative to the direction's first sequence number (1 = its first byte), modulo 2^32:
      -- unwrapped around the next expected offset (reassembly.tcp.TcpDirection.offset_of)
      local delta = ((tonumber(tostring(seq)) or 1) - 1 - st.nxt) % 4294967296
      if delta >= 2147483648 then delta = delta - 4294967296 end
      stream_tcp_segment(spec, st, st.nxt + delta, tvb, pinfo, tree, conv, rec, stream_synced())
    end
    return tvb:len()
  end
end

-- Register a stream protocol's dissector on its ports ("tcp.port" / "sctp.port"); tables missing in this
-- Wireshark are skipped.
function rt.stream_register(proto, tcp_ports, sctp_ports)
  for _, port in ipairs(tcp_ports or {}) do
    pcall(function() DissectorTable.get("tcp.port"):add(port, proto) end)
  end
  for _, port in ipairs(sctp_ports or {}) do
    pcall(function() DissectorTable.get("sctp.port"):add(port, proto) end)
  end
end

-- A heuristic for a stream protocol (Python: the protocol's heuristics["tcp"] / ["sctp"]): when match(tvb, pinfo)
-- says yes on a payload, the connection is claimed (pinfo.conversation, as Python keeps conn.proto) and dissected.
function rt.stream_heuristic(proto, list, match, dissector)
  local function heur(tvb, pinfo, tree)
    if pinfo.in_error_pkt then return false end        -- (a quoted segment: see rt.stream_dissector)
    local ok, yes = pcall(match, tvb, pinfo)
    if not ok or not yes then return false end
    pinfo.conversation = proto
    dissector(tvb, pinfo, tree)
    return true
  end
  pcall(function() proto:register_heuristic(list, heur) end)
end
