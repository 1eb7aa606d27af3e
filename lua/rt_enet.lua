-- ENet (libenet 1.3.x) for the generated plugin: the twin of dissectors/enet.py (heuristic) and
-- dissectors/enet_analysis.py (the datagram walk, checksum, conversation memory, acknowledgements, fragment
-- reassembly, hand-off). Same items in the same order, same texts, same limits. No bit operators (Lua 5.2 and 5.4).
do
  local floor = math.floor
  local SIZES = { [1] = 8, [2] = 48, [3] = 44, [4] = 8, [5] = 4, [6] = 6, [7] = 8, [8] = 24, [9] = 8, [10] = 12,
                  [11] = 16, [12] = 24 }
  local DATA_LENGTH_AT = { [6] = 4, [7] = 6, [8] = 6, [9] = 6, [12] = 6 }
  local CONNECTION = { [2] = true, [3] = true, [4] = true, [5] = true, [10] = true, [11] = true }
  local NAMES = { "ACKNOWLEDGE", "CONNECT", "VERIFY_CONNECT", "DISCONNECT", "PING", "SEND_RELIABLE",
                  "SEND_UNRELIABLE", "SEND_FRAGMENT", "SEND_UNSEQUENCED", "BANDWIDTH_LIMIT", "THROTTLE_CONFIGURE",
                  "SEND_UNRELIABLE_FRAGMENT" }
  local PAYLOAD = { [6] = true, [7] = true, [9] = true }
  local MTU_MAX, PEER_NONE = 4096, 4095
  local SENT_LIMIT, MESSAGE_LIMIT, MESSAGE_MAX = LIMITS.ENET_SENT_LIMIT, LIMITS.ENET_MESSAGE_LIMIT, LIMITS.ENET_MESSAGE_MAX
  local FRAGMENT_COUNT_MAX, FRAGMENT_LIMIT = LIMITS.ENET_FRAGMENT_COUNT_MAX, LIMITS.ENET_FRAGMENT_LIMIT
  local ACKED_IN_LIMIT = LIMITS.ENET_ACKED_IN_LIMIT   -- acknowledgements remembered for the second pass

  local function u16(s, i) return string.byte(s, i) * 256 + string.byte(s, i + 1) end

  -- libenet's receiver, as a check: commands of valid types, complete, exact data lengths, to the last byte
  local function command_walk(s, pos)
    local n, count = #s, 0
    while pos < n do
      local code = string.byte(s, pos + 1)
      local kind = code % 16
      local size = SIZES[kind]
      if size == nil or pos + size > n then return false end
      if (floor(code / 64) % 2 == 1 and kind ~= 9) or (code >= 128 and kind == 1) then return false end
      if (string.byte(s, pos + 2) == 255) ~= (CONNECTION[kind] == true) and kind ~= 1 then return false end
      if DATA_LENGTH_AT[kind] then
        size = size + u16(s, pos + DATA_LENGTH_AT[kind] + 1)
        if pos + size > n then return false end
      end
      pos = pos + size
      count = count + 1
    end
    return count > 0
  end

  -- the heuristic (dissectors/enet.py looks_like_enet)
  function rt.enet_looks(s)
    if #s < 2 then return false end
    local word = u16(s, 1)
    local at = word >= 32768 and 4 or 2
    for _, start in ipairs({ at, at + 4 }) do
      local body = s
      local ok = true
      if floor(word / 16384) % 2 == 1 then
        ok = false
        if rt.range_decompress and start < #s then
          local plain = rt.range_decompress(string.sub(s, start + 1), MTU_MAX - start)
          if plain then body = string.sub(s, 1, start) .. plain; ok = true end
        end
      end
      if ok and start < #body and command_walk(body, start) then
        if not (word % 4096 == PEER_NONE and string.byte(body, start + 1) % 16 ~= 2) then return true end
      end
    end
    return false
  end

  -- CRC-32 (zlib's) with arithmetic only: bytes xor-ed through a nibble table
  local X4 = {}
  for a = 0, 15 do
    for b = 0, 15 do
      local r, bit = 0, 1
      for _ = 1, 4 do
        if (floor(a / bit) + floor(b / bit)) % 2 == 1 then r = r + bit end
        bit = bit * 2
      end
      X4[a * 16 + b] = r
    end
  end
  local function xor8(a, b) return X4[floor(a / 16) * 16 + floor(b / 16)] * 16 + X4[(a % 16) * 16 + b % 16] end
  local function xor32(a, b)
    local r, m = 0, 1
    for _ = 1, 4 do
      r = r + xor8(a % 256, b % 256) * m
      a, b, m = floor(a / 256), floor(b / 256), m * 256
    end
    return r
  end
  local CRC = {}
  for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
      if c % 2 == 1 then c = xor32(3988292384, floor(c / 2)) else c = floor(c / 2) end
    end
    CRC[i] = c
  end
  function rt.crc32(s)
    local crc = 4294967295
    for i = 1, #s do
      crc = xor32(CRC[xor8(crc % 256, string.byte(s, i))], floor(crc / 256))
    end
    return 4294967295 - crc
  end

  local function be32(v)
    return string.char(floor(v / 16777216) % 256, floor(v / 65536) % 256, floor(v / 256) % 256, v % 256)
  end

  -- Reassembly at byte offsets (reassembly/offsets.py OffsetReassembly): first copy of a byte wins, complete
  -- when the pieces cover the total. Returns the whole buffer once, when complete.
  -- Pieces pending across every conversation share one byte budget (reassembly/budget.py; the plugin counts
  -- ENet's): taken when a piece is stored, given back when its message completes or is dropped (__gc).
  local PENDING_BUDGET, PIECE_OVERHEAD = 33554432, 160
  rt.pending_used = rt.pending_used or 0
  local held_mt = { __gc = function(r) rt.pending_used = rt.pending_used - r.held end }
  local function pending_fits(n) return rt.pending_used + n <= PENDING_BUDGET end
  local function pending_refused()
    return string.format("Pending reassembly exceeds the budget of %d bytes (protodump.reassembly_budget): "
      .. "piece not stored", PENDING_BUDGET)
  end

  function rt.offsets_new(total)
    return setmetatable({ total = total, pieces = {}, done = 0, spans = {}, covered = 0, held = 0 }, held_mt)
  end

  -- Bytes covered by the union of the pieces, kept up to date one piece at a time: r.spans holds the disjoint
  -- covered intervals in offset order.
  local function cover(r, a, b)
    local kept, merged_a, merged_b, placed = {}, a, b, false
    for _, sp in ipairs(r.spans) do
      if sp[2] < merged_a or sp[1] > merged_b then
        if not placed and sp[1] > merged_b then kept[#kept + 1] = { merged_a, merged_b }; placed = true end
        kept[#kept + 1] = sp
      else
        r.covered = r.covered - (sp[2] - sp[1])
        merged_a, merged_b = math.min(merged_a, sp[1]), math.max(merged_b, sp[2])
      end
    end
    if not placed then kept[#kept + 1] = { merged_a, merged_b } end
    r.covered = r.covered + (merged_b - merged_a)
    r.spans = kept
  end

  -- The usual case: pieces that do not overlap (exact duplicates aside): concatenated in offset order.
  local function assemble_disjoint(pieces)
    local order = {}
    for i, p in ipairs(pieces) do order[i] = { p[1], i, p[2] } end
    table.sort(order, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2]) end)
    local out, stop, last_at, last_len = {}, 0, -1, 0
    for _, o in ipairs(order) do
      if o[1] == last_at and #o[3] <= last_len then
        -- a later copy inside the first one: the first copy wins
      elseif o[1] < stop then
        return nil                      -- a real overlap: the general rule below
      else
        out[#out + 1] = o[3]
        stop, last_at, last_len = o[1] + #o[3], o[1], #o[3]
      end
    end
    return table.concat(out)
  end

  local function assemble(pieces)
    local fast = assemble_disjoint(pieces)
    if fast then return fast end
    local spans, segs = {}, {}         -- spans: covered intervals so far, sorted; segs: {offset, bytes}
    for _, p in ipairs(pieces) do      -- arrival order: earlier pieces keep their bytes
      local a, b, cur = p[1], p[1] + #p[2], p[1]
      local gaps = {}
      for _, sp in ipairs(spans) do
        if sp[2] > cur and sp[1] < b then
          if sp[1] > cur then gaps[#gaps + 1] = { cur, sp[1] } end
          if sp[2] > cur then cur = sp[2] end
        end
      end
      if cur < b then gaps[#gaps + 1] = { cur, b } end
      for _, g in ipairs(gaps) do
        segs[#segs + 1] = { g[1], string.sub(p[2], g[1] - a + 1, g[2] - a) }
        spans[#spans + 1] = { g[1], g[2] }
      end
      table.sort(spans, function(x, y) return x[1] < y[1] end)
    end
    table.sort(segs, function(x, y) return x[1] < y[1] end)
    local out = {}
    for i, sg in ipairs(segs) do out[i] = sg[2] end
    return table.concat(out)
  end

  function rt.offsets_add(r, at, piece, frame)
    if r.done ~= 0 then return nil end
    r.held = r.held + #piece + PIECE_OVERHEAD
    rt.pending_used = rt.pending_used + #piece + PIECE_OVERHEAD
    r.pieces[#r.pieces + 1] = { at, piece, frame }
    cover(r, at, at + #piece)
    if r.covered < r.total then return nil end
    r.done = frame
    local buf = assemble(r.pieces)
    local frames, seen = {}, {}
    for _, p in ipairs(r.pieces) do
      if not seen[p[3]] then seen[p[3]] = true; frames[#frames + 1] = p[3] end
    end
    table.sort(frames)
    r.frames, r.pieces = frames, {}
    rt.pending_used, r.held = rt.pending_used - r.held, 0
    return buf
  end

  -- --- the datagram ---------------------------------------------------------------------------------------------
  -- D: the protocol's pieces made by the generator: proto, F, E, header/sent_time/checksum/command functions,
  -- cmds[type] = { fn, label }, tables t_connect / t_port, checksum_on(), handoff_mode(), rtt.

  local function command_label(scope)
    local kind = scope.type
    local name = kind == nil and "Truncated" or NAMES[kind] or string.format("Invalid (%d)", kind)
    local text = "Command: " .. name
    if scope.channel ~= nil then
      text = text .. ", channel " .. (scope.channel == 255 and "none" or string.format("%d", scope.channel))
    end
    if scope.reliable_seq ~= nil then text = text .. string.format(", seq %d", scope.reliable_seq) end
    return text
  end

  local function gen(tree, f, range, value, text)
    local it = value == nil and tree:add(f, range) or tree:add(f, range, value)
    if text then it:set_text(text) end
    it:set_generated()
    return it
  end

  local function show_connection(D, c, T, connect)
    if connect == nil or connect.frame >= c.frame then return end
    local F, r = D.F, c.tvb(c.pos, 0)
    local node = gen(T, F["enet.connection"], r, nil, string.format("Connection (CONNECT in frame %d)", connect.frame))
    gen(node, F["enet.connection.frame"], r, connect.frame)
    gen(node, F["enet.connection.connect_data"], r, connect.data)
    gen(node, F["enet.connection.channel_count"], r, connect.channel_count)
    gen(node, F["enet.connection.mtu"], r, connect.mtu)
  end

  local function reverse(dir)
    local a, b = string.match(dir, "^(.*)>(.*)$")
    return b .. ">" .. a
  end

  local function port_of(endpoint) return tonumber(string.match(endpoint, ":(%d+)$")) end

  -- Give one message to the protocol above: by the CONNECT's data, then by UDP port (lowest first).
  local function hand_up(D, c, tvb, scope, connect)
    local mode = D.handoff_mode()
    if tvb:len() == 0 or mode == "off" then return end
    local d
    local chosen = D.payload_choice()
    if chosen ~= "" then         -- the preference names the protocol (tshark 4.0 has no Decode As for our tables)
      local ok, named = pcall(Dissector.get, chosen)
      if ok then d = named end
    end
    if d == nil and mode == "auto" and connect ~= nil then d = D.t_connect:get_dissector(connect.data) end
    if d == nil then
      local a, b = string.match(c.dir, "^(.*)>(.*)$")
      local pa, pb = port_of(a), port_of(b)
      local lo, hi = math.min(pa, pb), math.max(pa, pb)
      d = D.t_port:get_dissector(lo) or D.t_port:get_dissector(hi)
    end
    if d == nil then return end
    rt.meta = { channel = scope.channel, enet_command = NAMES[scope.type] }
    pcall(function() d:call(tvb, c.pinfo, c.root) end)
    rt.meta = nil
    c.handed = true
  end

  local function fragment_problem(count, number, total, offset, length)
    if count == 0 or count > FRAGMENT_COUNT_MAX then
      return string.format("Fragment count %d is outside 1..%d", count, FRAGMENT_COUNT_MAX)
    end
    if number >= count then
      return string.format("Fragment number %d is not below the fragment count %d", number, count)
    end
    if total > MESSAGE_MAX then return string.format("Total length %d exceeds the limit of %d", total, MESSAGE_MAX) end
    if total < count then
      return string.format("Total length %d is smaller than the fragment count %d", total, count)
    end
    if offset >= total or length > total - offset then
      return string.format("Fragment %d+%d lies beyond the total length %d", offset, length, total)
    end
    return nil
  end

  -- One fragment: (kind of result, value): "problem"/"mismatch" + message, "in" + frame, "whole" + {buf, frames}
  local function fragment_step(c, kind, scope)
    local count, number, total = scope.fragment_count, scope.fragment_number, scope.total_length
    local problem = fragment_problem(count, number, total, scope.fragment_offset, #scope.data)
    if problem then return "problem", problem end
    if count > FRAGMENT_LIMIT then
      return "mismatch", string.format("Not reassembled: %d fragments exceed the limit of %d", count, FRAGMENT_LIMIT)
    end
    local key = string.format("%s|%d|%d", c.dir, scope.channel, scope.start_seq)
    if kind == 12 then key = key .. string.format("|%d", scope.reliable_seq) end
    c.conv.enet_messages = c.conv.enet_messages or rt.btable()
    local messages = c.conv.enet_messages
    local entry = messages.map[key]
    if entry ~= nil and (entry.count ~= count or entry.total ~= total) then
      if entry.r.done == 0 then
        return "mismatch", string.format("Fragment count %d / total %d differ from the message's %d / %d",
          count, total, entry.count, entry.total)
      end
      entry = nil
    end
    local cost = #scope.data + PIECE_OVERHEAD
    if entry == nil then
      if not pending_fits(cost) then return "mismatch", pending_refused() end
      entry = { r = rt.offsets_new(total), count = count, total = total, numbers = {} }
      rt.bput(messages, key, entry, MESSAGE_LIMIT)
    end
    if entry.r.done ~= 0 then return "in", entry.r.done end
    if entry.numbers[number] then return nil end      -- a fragment number seen before: ignored, as libenet does
    if not pending_fits(cost) then return "mismatch", pending_refused() end
    entry.numbers[number] = true
    local whole = rt.offsets_add(entry.r, scope.fragment_offset, scope.data, c.frame)
    if whole then return "whole", { buf = whole, frames = entry.r.frames } end
    return nil
  end

  local function show_fragment(D, c, item, kind, scope, idx, connect)
    local F = D.F
    local what, v = rt.once(c, "enet_frag" .. idx, function() return fragment_step(c, kind, scope) end)
    if what == "problem" then rt.expert(c, item, "malformed", v)
    elseif what == "mismatch" then rt.expert(c, item, "reassembly", v)
    elseif what == "in" then
      gen(item, F["enet.reassembled_in"], c.cmd_range, v, string.format("Reassembled in frame %d", v))
    elseif what == "whole" then
      local parts = {}
      for i, fr in ipairs(v.frames) do parts[i] = string.format("%d", fr) end
      local node = gen(item, F["enet.reassembled"], c.cmd_range, nil,
        string.format("Reassembled from frames %s (%d bytes)", table.concat(parts, ", "), #v.buf))
      for _, fr in ipairs(v.frames) do gen(node, F["enet.reassembled.frame"], c.cmd_range, fr) end
      gen(node, F["enet.reassembled.length"], c.cmd_range, #v.buf)
      c.notes[#c.notes + 1] = string.format("[%d bytes reassembled]", #v.buf)
      local tvb = ByteArray.new(v.buf, true):tvb("Reassembled ENet")
      hand_up(D, c, tvb, scope, connect)
    end
  end

  local function analyse(D, c, s, item, kind, scope, idx, connect)
    local F, values = D.F, c.sc[1]
    local key = "enet_cmd" .. idx
    local acked = rt.once(c, key, function()
      if kind == 4 then rt.end_conversation(c.pinfo) end     -- DISCONNECT (engine/lifetime.py)
      if kind == 2 then
        c.conv.enet_connect = { frame = c.frame, data = scope.data, channel_count = scope.channel_count,
                                mtu = scope.mtu, connect_id = scope.connect_id }
      end
      if scope.acknowledge == 1 and values.sent_time ~= nil then
        c.conv.enet_sent = c.conv.enet_sent or rt.btable()
        rt.bput(c.conv.enet_sent, string.format("%s|%d|%d|%d", c.dir, scope.channel, scope.reliable_seq,
          values.sent_time), { c.frame, c.time }, SENT_LIMIT)
      end
      if kind == 1 and c.conv.enet_sent then
        local sent = c.conv.enet_sent.map[string.format("%s|%d|%d|%d", reverse(c.dir), scope.channel,
          scope.received_reliable_seq, scope.received_sent_time)]
        if sent then      -- the reverse link, shown when the sent frame is dissected again (tshark -2, a click)
          c.conv.enet_acked_in = c.conv.enet_acked_in or rt.btable()
          rt.bput(c.conv.enet_acked_in, string.format("%d|%d|%d", sent[1], scope.channel,
            scope.received_reliable_seq), c.frame, ACKED_IN_LIMIT)
        end
        return sent
      end
      return nil
    end)
    if acked then
      gen(item, F["enet.acknowledge.frame"], c.cmd_range, acked[1], string.format("Acknowledges frame %d", acked[1]))
      if D.rtt and acked[2] ~= nil then
        local rtt = (c.time - acked[2]) * 1000.0
        gen(item, F["enet.acknowledge.rtt"], c.cmd_range, rtt, string.format("Round-trip time: %.3f ms", rtt))
      end
    end
    if c.visited and scope.acknowledge == 1 and c.conv.enet_acked_in then
      local fr = c.conv.enet_acked_in.map[string.format("%d|%d|%d", c.frame, scope.channel, scope.reliable_seq)]
      if fr then gen(item, F["enet.acknowledged_in"], c.cmd_range, fr, string.format("Acknowledged in frame %d", fr)) end
    end
    if PAYLOAD[kind] then
      local n = #scope.data
      if n > 0 then hand_up(D, c, s.tvb(s.pos - n, n):tvb(), scope, connect) end
    elseif kind == 8 or kind == 12 then
      show_fragment(D, c, item, kind, scope, idx, connect)
    end
  end

  local function walk_commands(D, c, T, s, connect)
    local F, names, idx = D.F, {}, 0
    while s.pos < s.stop do
      local at = s.pos
      local item = T:add(F["enet.command"], s.tvb(at, 0))
      c.cmd_range = s.tvb(at, 0)
      local scope = {}
      s.sc[#s.sc + 1] = scope
      local stop = true
      idx = idx + 1
      local ok, err = pcall(function()
        D.command(s, item)
        local kind = scope.type
        local cmd = D.cmds[kind]
        if cmd == nil then
          rt.expert(c, item, "malformed", string.format("Invalid command type %d: the receiver stops here", kind))
          item:add(F["enet.data"], s.tvb(s.pos, s.stop - s.pos))
          s.pos = s.stop
        else
          names[#names + 1] = cmd.label
          cmd.fn(s, item)
          analyse(D, c, s, item, kind, scope, idx, connect)
          stop = false
        end
      end)
      rt.pop(s)
      item:set_len(s.pos - at)
      item:set_text(command_label(scope))
      if not ok and err ~= rt.TRUNC then error(err, 0) end
      if stop then break end
    end
    return names
  end

  local function check_crc(D, c, T, values, head, commands, connect)
    local status = 2
    if commands ~= nil and (values.peer_id == PEER_NONE or connect ~= nil) then
      local cid = values.peer_id == PEER_NONE and 0 or connect.connect_id
      local crc = rt.crc32(string.sub(head, 1, #head - 4) .. be32(cid) .. commands)
      status = crc == values.checksum and 1 or 0
    end
    gen(T, D.F["enet.checksum.status"], c.tvb(c.pos - 4, 4), status)
    if status == 0 then rt.expert(c, T, "checksum", "Bad checksum") end
  end

  local function body(D, c, T)
    local F, values = D.F, c.sc[1]
    local okh, eh = pcall(function()
      D.header(c, T)
      if values.sent_time_flag == 1 then D.sent_time(c, T) end
      if D.checksum_on() then D.checksum(c, T) end
    end)
    if not okh then
      if eh ~= rt.TRUNC then error(eh, 0) end
      return "Malformed (truncated header)"
    end
    local head_end = c.pos
    local connect = rt.once(c, "enet_conn", function() return c.conv.enet_connect end)
    local plain, coded
    if values.compressed == 1 then
      coded = c.tvb:raw(c.pos, c.stop - c.pos)
      if #coded > 0 and rt.range_decompress then plain = rt.range_decompress(coded, MTU_MAX - head_end) end
    else
      plain = c.stop > c.pos and c.tvb:raw(c.pos, c.stop - c.pos) or ""
    end
    if D.checksum_on() then
      check_crc(D, c, T, values, c.tvb:raw(0, head_end), plain, connect)
    end
    show_connection(D, c, T, connect)
    local s = { tvb = c.tvb, pos = c.pos, stop = c.stop, sc = { {} }, conv = c.conv, frame = c.frame, dir = c.dir,
                E = c.E, notes = c.notes, visited = c.visited }
    if coded ~= nil then
      local r = c.tvb(c.pos, c.stop - c.pos)
      local it = T:add(F["enet.compressed_data"], r)
      c.pos = c.stop
      if plain == nil then
        rt.expert(c, it, "malformed", "Range-coded data does not decompress")
        return "Malformed (range coder)"
      end
      local dtvb = ByteArray.new(plain, true):tvb("Decompressed ENet")
      gen(T, F["enet.decompressed_length"], r, #plain)
      gen(T, F["enet.compression_ratio"], r, #plain / #coded)
      c.notes[#c.notes + 1] = string.format("[range coder %d\226\134\146%d bytes]", #coded, #plain)
      s.tvb, s.pos, s.stop = dtvb, 0, dtvb:len()
    end
    local names = walk_commands(D, c, T, s, connect)
    local text = #names > 0 and table.concat(names, ", ") or "No command"
    for _, n in ipairs(c.notes) do text = text .. " " .. n end
    return text
  end

  function rt.enet_dissect(D, tvb, pinfo, tree)
    pinfo.cols.protocol:set("enet")
    local conv, dir = rt.conversation("enet", pinfo)
    local T = tree:add(D.proto, tvb())
    local c = { tvb = tvb, pos = 0, stop = tvb:len(), sc = { {} }, conv = conv, frame = pinfo.number, dir = dir,
                E = D.E, notes = {}, visited = pinfo.visited, time = pinfo.abs_ts, pinfo = pinfo, root = tree }
    local ok, info = pcall(body, D, c, T)
    if not ok then
      rt.expert(c, T, "malformed", "Dissector error: " .. tostring(info))
    elseif not c.handed then
      pinfo.cols.info:set(info)
    end
    rt.conversation_note("enet", pinfo, T, D.E)
    return tvb:len()
  end
end
