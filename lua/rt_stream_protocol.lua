-- Stream protocols without length fields (the twin of engine/stream_protocol.py): a PDU's length from its
-- opcode, its direction and state earlier PDUs set; the opcode numbering recognised per connection; the restart
-- point after a gap. Called through the stream dissector of lua/rt_stream.lua.

-- "c2s" or "s2c" for a PDU sent from port sp to port dp: the side on a server port is the server; else the
-- lower port is (engine.stream_protocol.StreamProtocol.role)
function rt.stream_role(sp, dp, server_ports)
  if server_ports[sp] then return "s2c" end
  if server_ports[dp] then return "c2s" end
  return sp < dp and "s2c" or "c2s"
end

-- the packet table entry for an opcode: spec = { bodies, alternates, numberings }
function rt.stream_packet(spec, conv, numbering, role, code)
  local alt = spec.alternates[numbering .. "|" .. role .. "|" .. string.format("%d", code)]
  if alt and conv.flags and conv.flags[alt[1] .. ":" .. role] then role = alt[2] end
  return spec.bodies[numbering .. "/" .. role][code]
end

local function frames_cleanly(spec, conv, numbering, role, raw)
  local pos = 1
  while pos <= #raw do
    local p = rt.stream_packet(spec, conv, numbering, role, string.byte(raw, pos))
    if not p then return false end
    pos = pos + spec.header_size + p.size
  end
  return true
end

-- the numbering in force: the preference, else the one recognised on this connection (from the bytes of tvb
-- from offset on, at most spec.numbering_scan of them) once only one numbering frames them cleanly
function rt.stream_numbering(spec, conv, role, tvb, offset, pref)
  if pref ~= "auto" then conv.numbering = pref; return pref end
  if conv.numbering == nil then
    local raw = tvb:raw(offset, math.min(tvb:len() - offset, spec.numbering_scan))
    local fits = {}
    for _, n in ipairs(spec.numberings) do
      if frames_cleanly(spec, conv, n, role, raw) then fits[#fits + 1] = n end
    end
    if #fits == 1 then conv.numbering = fits[1] end
  end
  return conv.numbering or spec.numberings[1]
end

-- After a gap (StreamProtocol.resync): the first position from which known PDUs chain to exactly the end of
-- the data (at offset also to a PDU running past it), a closing PDU (spec.final) only last and not alone; nil:
-- none
function rt.stream_resync(spec, tvb, pinfo, offset, conv)
  local role = rt.stream_role(pinfo.src_port, pinfo.dst_port, spec.server_ports)
  local raw = tvb:raw(offset)
  local numbering = conv.numbering or spec.numberings[1]
  local size = math.min(#raw, spec.scan)
  local state = { [size] = "end" }
  for p = size - 1, 0, -1 do
    local pkt = rt.stream_packet(spec, conv, numbering, role, string.byte(raw, p + 1))
    state[p] = false
    if pkt then
      local after = p + spec.header_size + pkt.size
      if after > size then state[p] = "partial"
      elseif after == size then state[p] = "exact"
      elseif not spec.final[pkt.name] and state[after] then
        state[p] = state[after] == "partial" and "partial" or "exact"
      end
    end
  end
  if state[0] then return offset end
  for p = 1, size - 1 do
    if state[p] == "exact" then
      local first = rt.stream_packet(spec, conv, numbering, role, string.byte(raw, p + 1))
      if not spec.final[first.name] then return offset + p end
    end
  end
  return nil
end

-- The length of the PDU at offset (StreamProtocol.pdu_length): > 0, 0 need more, -1 no layout
function rt.stream_len(spec, tvb, pinfo, offset, conv)
  if offset >= tvb:len() then return 0 end
  local role = rt.stream_role(pinfo.src_port, pinfo.dst_port, spec.server_ports)
  local n = rt.stream_numbering(spec, conv, role, tvb, offset, spec.pref())
  local pkt = rt.stream_packet(spec, conv, n, role, tvb(offset, 1):uint())
  if pkt == nil then return -1 end
  return spec.header_size + pkt.size
end

-- The numbering and the packet a PDU was decoded with on the first pass, replayed when Wireshark dissects the
-- frame again (pinfo.visited: tshark -2, a GUI click): by then conv.flags and conv.numbering are as the end of the
-- first pass left them (an alternate would pick another layout: Rutentoy's 04 after the texture exchange). Kept
-- only for a PDU whose layout that state could change (an alternate for its opcode, or the numbering not yet
-- recognised), in a bounded table per connection (spec.layout_memory, the oldest evicted: then the live state).
-- Only the first pass stores (a later pass with no record, tshark -2 after a tree-less first pass, decodes in
-- order from live state, and must not evict what the first pass kept).
local function pdu_layout(spec, c, role, code)
  local key = string.format("%d#%d", c.frame, c.pdu)
  local kept = c.conv.layouts and c.conv.layouts.map[key]
  if kept and c.visited then return kept[1], kept[2] end
  local undecided = c.conv.numbering == nil
  local numbering = rt.stream_numbering(spec, c.conv, role, c.tvb, 0, spec.pref())
  local pkt = rt.stream_packet(spec, c.conv, numbering, role, code)
  if not c.visited and (undecided or spec.alternates[numbering .. "|" .. role .. "|" .. string.format("%d", code)]) then
    c.conv.layouts = c.conv.layouts or rt.btable()
    rt.bput(c.conv.layouts, key, { numbering, pkt }, spec.layout_memory)
  end
  return numbering, pkt
end

local function stream_decode(spec, c, T, role)
  local okh, eh = pcall(spec.header_fn, c, T)
  if not okh then
    if eh ~= rt.TRUNC then error(eh, 0) end
    return "Malformed (truncated header)"
  end
  local values = c.sc[1]
  local code = values[spec.type_field]
  local numbering, pkt = pdu_layout(spec, c, role, code)
  if pkt == nil then
    local name = spec.names[numbering] and spec.names[numbering][code]
    local what = name and string.format("Opcode 0x%02x (%s) has no layout", code, name)
      or string.format("Unknown opcode 0x%02x", code)
    rt.expert(c, T, "malformed", what .. ": the rest of this direction cannot be framed")
    if c.pos < c.stop then T:add(spec.data, c.tvb(c.pos, c.stop - c.pos)) end
    return string.format("Unknown opcode 0x%02x", code)
  end
  local sender = spec.sent_by[pkt.name]
  if sender and sender ~= role then
    rt.expert(c, T, "unexpected", pkt.label .. " is sent " ..
      (sender == "c2s" and "client to server" or "server to client") .. " only")
  end
  local okp, ep = pcall(pkt.fn, c, T)
  if okp and c.pos < c.stop then
    local rr = c.tvb(c.pos, c.stop - c.pos)
    local ti = T:add(spec.trailing, rr)
    if string.find(rr:raw(), "[^\0]") then
      rt.expert(c, ti, "trailing", string.format("%d trailing bytes are not zero padding", c.stop - c.pos))
    end
  elseif not okp and ep ~= rt.TRUNC then
    error(ep, 0)
  end
  T:set_text(spec.description .. ", " .. pkt.label)
  local text = pkt.label
  if pkt.info then text = text .. " " .. rt.template(pkt.info, values) end
  for _, n in ipairs(c.notes) do text = text .. " " .. n end
  return text
end

-- Dissect one PDU (the whole tvb; StreamProtocol.dissect): its Info text and its layer
function rt.stream_pdu(spec, tvb, pinfo, tree, conv, index)
  local T = tree:add(spec.proto, tvb())
  local c = { tvb = tvb, pos = 0, stop = tvb:len(), sc = { {} }, conv = conv, frame = pinfo.number, dir = "",
              E = spec.E, notes = {}, visited = pinfo.visited, pdu = index or 0 }
  local role = rt.stream_role(pinfo.src_port, pinfo.dst_port, spec.server_ports)
  c.sc[1]._role = role
  local ok, info = pcall(stream_decode, spec, c, T, role)
  if not ok then
    rt.expert(c, T, "malformed", "Dissector error: " .. tostring(info))
    info = "Dissector error"
  end
  return info, T
end
