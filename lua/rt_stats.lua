-- Game statistics inside Wireshark (the twin of analysis/stats_game.py and its text in output/stats_out.py):
-- `tshark -z <proto>,types` and `-z <proto>,seq` print what protodump prints, byte for byte, and the GUI gets a
-- Statistics menu entry per statistic. A Listener on the frame tap (filter: the protocol) reads the layers back
-- through field extractors: the protocol's layer items, its type field(s), the expert messages.
-- (Several -z statistics: tshark draws them in the reverse order of the command line.)

local EQ80 = string.rep("=", 80)

local function lpad(s, n) s = tostring(s); return string.rep(" ", n - #s) .. s end
local function rpad(s, n) s = tostring(s); return s .. string.rep(" ", n - #s) end
-- Python's f"{s:<n}" counts characters, not bytes
local function rpad_chars(s, n)
  local len = 0
  for _ in string.gmatch(s, "[^\128-\191]") do len = len + 1 end
  return s .. string.rep(" ", n - len)
end

local function stat_fields(names)
  local out = {}
  for i, name in ipairs(names) do
    local ok, f = pcall(Field.new, name)
    out[i] = ok and f or false
  end
  return out
end

local values = rt.field_values

-- The conversation of a packet (client: the source of its first packet) and the packet's direction.
local function stat_conversation(st, pinfo)
  local a = tostring(pinfo.src) .. ":" .. string.format("%d", pinfo.src_port)
  local b = tostring(pinfo.dst) .. ":" .. string.format("%d", pinfo.dst_port)
  local key = a < b and (a .. "|" .. b) or (b .. "|" .. a)
  local conv = st.convs[key]
  if conv == nil then
    conv = { client = a, server = b, c2s = { order = {}, map = {} }, s2c = { order = {}, map = {} } }
    st.convs[key] = conv
    st.order[#st.order + 1] = conv
  end
  return conv, (a == conv.client) and "c2s" or "s2c"
end

-- The protocol's layers in this frame and the counters of the frame's direction (nil: no layer).
local function stat_frame(st, pinfo)
  local layers = values(st.f_layer)
  if #layers == 0 then return nil end
  local conv, dir = stat_conversation(st, pinfo)
  return layers, conv[dir]
end

-- "Name (value)" of a type item, as protodump labels it (value names, decimal value).
local function type_label(fi)
  local shown = tostring(fi.display or "")
  local name = shown:match("^(.*) %(") or shown
  if name == "" then name = "Unknown" end
  return string.format("%s (%s)", name, tostring(fi.value))
end

local function contains(layer, item)
  local ok, same = pcall(function() return layer.source == item.source end)
  return ok and same and item.offset >= layer.offset and item.offset < layer.offset + math.max(layer.len, 1)
end

-- message types: per layer, every item of the most specific type field present; the layer's bytes count once
local function types_packet(st, pinfo)
  local layers, counts = stat_frame(st, pinfo)
  if layers == nil then return end
  local found = {}
  for k = 1, #layers do found[k] = {} end
  for t, f in ipairs(st.f_types) do
    for _, item in ipairs(values(f)) do
      local owner = #layers
      for k, layer in ipairs(layers) do
        if contains(layer, item) then owner = k end
      end
      found[owner][t] = found[owner][t] or {}
      table.insert(found[owner][t], item)
    end
  end
  for k, layer in ipairs(layers) do
    local labels = nil
    for t = #st.f_types, 1, -1 do
      if found[k][t] then
        labels = {}
        for _, item in ipairs(found[k][t]) do labels[#labels + 1] = type_label(item) end
        break
      end
    end
    labels = labels or { "[no type: malformed]" }
    for n, label in ipairs(labels) do
      local c = counts.map[label]
      if c == nil then c = { 0, 0 }; counts.map[label] = c; counts.order[#counts.order + 1] = label end
      c[1] = c[1] + 1
      if n == 1 then c[2] = c[2] + layer.len end
    end
  end
end

local function types_text(st)
  local lines = { EQ80, string.format("%s message types (bytes: %s message bytes)", st.proto, st.proto) }
  for _, conv in ipairs(st.order) do
    lines[#lines + 1] = string.format("Client %s <-> server %s", conv.client, conv.server)
    lines[#lines + 1] = rpad("Type", 28) .. " " .. lpad("C->S packets", 12) .. " " .. lpad("C->S bytes", 12) .. " "
                        .. lpad("S->C packets", 12) .. " " .. lpad("S->C bytes", 12)
    local rows, index = {}, {}
    for _, dir in ipairs({ "c2s", "s2c" }) do
      for _, label in ipairs(conv[dir].order) do
        local r = index[label]
        if r == nil then
          r = { label = label, c2s = { 0, 0 }, s2c = { 0, 0 }, at = #rows + 1 }
          index[label] = r
          rows[#rows + 1] = r
        end
        r[dir] = conv[dir].map[label]
      end
    end
    table.sort(rows, function(x, y)        -- most packets first, ties in first-seen order (a stable sort)
      local nx, ny = x.c2s[1] + x.s2c[1], y.c2s[1] + y.s2c[1]
      if nx ~= ny then return nx > ny end
      return x.at < y.at
    end)
    for _, r in ipairs(rows) do
      lines[#lines + 1] = rpad_chars(r.label, 28) .. " " .. lpad(r.c2s[1], 12) .. " " .. lpad(r.c2s[2], 12) .. " "
                          .. lpad(r.s2c[1], 12) .. " " .. lpad(r.s2c[2], 12)
    end
  end
  lines[#lines + 1] = EQ80
  return table.concat(lines, "\n") .. "\n"
end

-- sequence analysis: packets per direction, and the notes of the <proto>.sequence expert infos
local function seq_note(message)
  if message:sub(1, 17) == "Duplicate of seq " then return "duplicate", 1 end
  if message:sub(1, 14) == "Out of order: " then return "out_of_order", 1 end
  local n = message:match("^(%d+) lost before seq ")
  if n then return "lost", tonumber(n) end
  return nil
end

local function seq_packet(st, pinfo)
  local layers, s = stat_frame(st, pinfo)
  if layers == nil then return end
  if s.packets == nil then s.packets, s.lost, s.duplicate, s.out_of_order = 0, 0, 0, 0 end
  s.packets = s.packets + 1
  -- the expert messages of the frame that are sequence notes (expert abbrevs are no fields for an extractor; only
  -- <proto>.sequence writes these texts)
  for _, msg in ipairs(values(st.f_message)) do
    local kind, n = seq_note(tostring(msg.value))
    if kind then s[kind] = s[kind] + n end
  end
end

local function seq_text(st)
  local lines = { EQ80, string.format("%s sequence analysis (from %s.sequence expert infos)", st.proto, st.proto),
                  rpad("Source", 22) .. " " .. rpad("Destination", 22) .. " " .. lpad("Packets", 8) .. " " ..
                  lpad("Lost", 8) .. " " .. lpad("Duplicate", 9) .. " " .. lpad("Reordered", 9) }
  for _, conv in ipairs(st.order) do
    for _, d in ipairs({ { "c2s", conv.client, conv.server }, { "s2c", conv.server, conv.client } }) do
      local s = conv[d[1]]
      if s.packets then
        lines[#lines + 1] = rpad(d[2], 22) .. " " .. rpad(d[3], 22) .. " " .. lpad(s.packets, 8) .. " " ..
                            lpad(s.lost, 8) .. " " .. lpad(s.duplicate, 9) .. " " .. lpad(s.out_of_order, 9)
      end
    end
  end
  lines[#lines + 1] = EQ80
  return table.concat(lines, "\n") .. "\n"
end

-- One statistic: `-z <name>` in tshark (printed at the end, as protodump prints it), and a Statistics menu
-- entry in the GUI (a text window, refreshed by retapping).
local function stat_register(name, st, packet, text)
  local function listen(show)
    st.convs, st.order = {}, {}
    local ok, l = pcall(Listener.new, "frame", st.proto)
    if not ok then return end
    function l.packet(pinfo) pcall(packet, st, pinfo) end
    function l.draw() show(text(st)) end
    function l.reset() st.convs, st.order = {}, {} end
    return l
  end
  pcall(register_stat_cmd_arg, name, function() listen(function(t) io.write(t) end) end)
  if gui_enabled and gui_enabled() then
    pcall(register_menu, "protodump/" .. name, function()
      local win = TextWindow.new("protodump: " .. name)
      local l = listen(function(t) win:set(t) end)
      win:set_atclose(function() if l then l:remove() end end)
      retap_packets()
    end, MENU_STAT_GENERIC)
  end
end

-- Register `-z <proto>,types` (type_abbrevs: the type fields, least to most specific) and, when `sequence`,
-- `-z <proto>,seq`.
function rt.game_stats(proto, type_abbrevs, sequence)
  local st = { proto = proto, convs = {}, order = {} }
  local f = stat_fields({ proto, (table.unpack or unpack)(type_abbrevs) })
  st.f_layer = f[1]
  st.f_types = {}
  for i = 2, #f do st.f_types[#st.f_types + 1] = f[i] end
  stat_register(proto .. ",types", st, types_packet, types_text)
  if sequence then
    local sq = { proto = proto, convs = {}, order = {}, f_layer = f[1] }
    sq.f_message = stat_fields({ "_ws.expert.message" })[1]
    stat_register(proto .. ",seq", sq, seq_packet, seq_text)
  end
end
