-- Message protocols (engine/message_protocol.py): the connection heuristic, a first message whose fields are
-- well formed (the twin of message_protocol.well_formed), remembered per conversation.

function rt.well_formed(raw, pos, shape)
  for _, step in ipairs(shape) do
    local kind, arg = step[1], step[2]
    if kind == "fixed" then
      pos = pos + arg
      if pos > #raw then return false end
    else
      local nul = string.find(raw, "\0", pos + 1, true)
      if not nul then return false end
      local s = string.sub(raw, pos + 1, nul - 1)
      if rt.utf8(s) ~= s then return false end
      if kind == "uuid" and not rt.is_uuid(s) then return false end
      if kind == "enum" and not arg[s] then return false end
      if kind == "json" and not pcall(rt.json_parse, s) then return false end
      pos = nul
    end
  end
  return pos == #raw
end

-- The connection heuristic (engine/message_protocol.py): taken from its first well-formed `code` packet on; the
-- answer for each message is kept for re-dissection (a later AUTH must not take earlier frames on a second pass).
function rt.taken(c, tvb, code, shape)
  return rt.msg_once(c, "heuristic", function()
    if c.conv.heuristic then return true end
    if not rt.first_message(tvb, code, shape) then return false end
    c.conv.heuristic = true
    return true
  end)
end

-- The first-message check: type byte `code`, then the packet's fields exactly.
function rt.first_message(tvb, code, shape)
  local ok, res = pcall(function()
    if tvb:len() < 1 or tvb(0, 1):uint() ~= code then return false end
    return rt.well_formed(tvb:raw(0, tvb:len()), 1, shape)
  end)
  return ok and res
end
