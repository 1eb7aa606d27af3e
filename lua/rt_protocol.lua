-- Datagram protocols (engine/protocol.py): sequence analysis per direction and the spec revision a packet fits,
-- decided on the first pass and replayed (rt.once); the dissector itself is generated (lua_backend.emit_dissect).

-- Sequence analysis per direction: lost (a gap), duplicate (seen before), out of order (behind, not seen).
function rt.sequence(c, item, seq, bits)
  local msg = rt.once(c, "seq", function() return rt.sequence_step(c, seq, bits) end)
  if msg then rt.expert(c, item, "sequence", msg) end
end

-- The sequence note for this packet (or nil), updating the direction's state.
function rt.sequence_step(c, seq, bits)
  local modulo = 2 ^ bits
  c.conv.seq = c.conv.seq or {}
  local st = c.conv.seq[c.dir]
  if not st then st = { seen = {} }; c.conv.seq[c.dir] = st end
  local last = st.last
  if last ~= nil then
    local delta = (seq - last) % modulo
    if delta == 0 or (delta >= modulo / 2 and st.seen[seq] ~= nil) then
      local was = st.seen[seq]
      return string.format("Duplicate of seq %d (frame %s)", seq, was and string.format("%d", was) or "?")
    end
    local msg
    if delta >= modulo / 2 then
      msg = string.format("Out of order: seq %d after seq %d", seq, last)
    elseif delta > 1 then
      msg = string.format("%d lost before seq %d", delta - 1, seq)
      st.last = seq
    else
      st.last = seq
    end
    rt.saw(st, seq, c.frame, modulo)
    return msg
  end
  st.last = seq
  rt.saw(st, seq, c.frame, modulo)
  return nil
end

-- Remember a sequence number; keep only the window behind the last one (as engine.protocol does).
local SEEN_WINDOW = 2048
function rt.saw(st, seq, frame, modulo)
  if st.seen[seq] == nil then st.n = (st.n or 0) + 1 end
  st.seen[seq] = frame
  if st.n > 2 * SEEN_WINDOW then
    local kept, n = {}, 0
    for s, f in pairs(st.seen) do
      if (st.last - s) % modulo < SEEN_WINDOW then kept[s] = f; n = n + 1 end
    end
    st.seen, st.n = kept, n
  end
end

-- The revision a (type, length) fits: rules[rev][code] = {min, max, step}
function rt.pick_revision(c, revisions, rules, code, length, pref)
  if pref ~= "auto" then return pref end
  return rt.once(c, "revision", function() return rt.fit_revision(c, revisions, rules, code, length) end)
end

function rt.fit_revision(c, revisions, rules, code, length)
  local fits = {}
  for _, rev in ipairs(revisions) do
    local r = rules[rev][code]
    if r and length >= r[1] and length <= r[2] and
        ((r[3] == 0 and length == r[1]) or (r[3] ~= 0 and (length - r[1]) % r[3] == 0)) then
      fits[#fits + 1] = rev
    end
  end
  if #fits == 1 then c.conv.revision = fits[1]; return fits[1] end
  return c.conv.revision or revisions[1]
end
