-- Channel protocols (engine/channel_protocol.py): type-coded messages over a message transport with channels
-- (ENet) or over a byte stream; the dissector itself is generated (ChannelProtocol.emit_lua).

-- The "tcp" heuristic (ChannelProtocol.starts_stream): the stream starts with packet `code`, whole, holding
-- printable text from `text_at` to its last byte, a NUL.
function rt.stream_start(tvb, len_fn, code, text_at)
  local size = tvb:len()
  if size < text_at + 2 or tvb(0, 1):uint() ~= code then return false end
  local n = len_fn(tvb, 0)
  if n <= text_at + 1 or n > size or tvb(n - 1, 1):uint() ~= 0 then return false end
  return string.find(tvb:raw(text_at, n - 1 - text_at), "^[\32-\126]+$") ~= nil
end

-- The n-th layer of this protocol in this frame (several messages per ENet datagram): keys the state replayed on
-- re-dissection. The first pass counts the layers of each frame; a later pass (tshark -2, a GUI click, even on the
-- same frame twice in a row) starts again at 1 once it has seen them all.
function rt.layer_index(c)
  local conv = c.conv
  conv.layers_in = conv.layers_in or {}
  if conv.layer_frame ~= c.frame or (c.visited and conv.layer_n >= (conv.layers_in[c.frame] or 1)) then
    conv.layer_frame, conv.layer_n = c.frame, 0
  end
  conv.layer_n = conv.layer_n + 1
  if not c.visited then conv.layers_in[c.frame] = conv.layer_n end
  return conv.layer_n
end
