-- Chunk transfers (engine/blocks_chunks.py): pieces placed by offset into the transfer a Begin announced,
-- per conversation, bounded as Python bounds them; the whole buffer inflated with the cap of rt_inflate.lua.

-- Chunk reassembly: pieces by key, first copy of a byte wins; returns the whole buffer when complete.
local CHUNK_LIMIT, INFLATE_LIMIT, TRANSFER_LIMIT = LIMITS.CHUNK_LIMIT, LIMITS.INFLATE_LIMIT, LIMITS.TRANSFER_LIMIT
rt.CHUNK_LIMIT, rt.INFLATE_LIMIT = CHUNK_LIMIT, INFLATE_LIMIT

local function covered(pieces)
  local sorted = {}
  for i, p in ipairs(pieces) do sorted[i] = p end
  table.sort(sorted, function(a, b) return a[1] < b[1] end)
  local total, stop = 0, 0
  for _, p in ipairs(sorted) do
    local e = p[1] + #p[2]
    if e > stop then
      total = total + e - math.max(p[1], stop)
      stop = e
    end
  end
  return total
end

function rt.chunk_piece(c, item, begin_name, key, at, piece, total_field)
  local res, done, msg = rt.once(c, "chunk", function()
    return rt.chunk_step(c, begin_name, key, at, piece, total_field)
  end)
  if msg then rt.expert(c, item, "reassembly", msg) end
  return res, done
end

-- Place one piece: (whole transfer when complete, frame that completed it earlier, problem message).
function rt.chunk_step(c, begin_name, key, at, piece, total_field)
  local begin = c.conv.remember and c.conv.remember[begin_name] and c.conv.remember[begin_name].map[key]
  if not begin then
    return nil, nil, string.format("No %s for transmission %d", begin_name, key)
  end
  local total = begin[total_field]
  c.conv.transfers = c.conv.transfers or rt.btable()
  local t = c.conv.transfers.map[key]
  if not t or t.begin ~= begin then
    t = { begin = begin, pieces = {}, done = 0 }
    rt.bput(c.conv.transfers, key, t, TRANSFER_LIMIT)
  end
  if t.done ~= 0 then return nil, t.done end
  if total > CHUNK_LIMIT then
    return nil, nil, string.format("Transfer of %d bytes exceeds the limit of %d", total, CHUNK_LIMIT)
  end
  if at + #piece > total then
    return nil, nil, string.format("Block %d+%d lies beyond the transfer size %d", at, #piece, total)
  end
  t.pieces[#t.pieces + 1] = { at, piece, c.frame }
  if covered(t.pieces) < total then return nil end
  t.done = c.frame
  local buf = string.rep("\0", total)
  for i = #t.pieces, 1, -1 do
    local p = t.pieces[i]
    buf = buf:sub(1, p[1]) .. p[2] .. buf:sub(p[1] + #p[2] + 1)
  end
  local frames, seen = {}, {}
  for _, p in ipairs(t.pieces) do
    if not seen[p[3]] then seen[p[3]] = true; frames[#frames + 1] = p[3] end
  end
  table.sort(frames)
  t.pieces = {}                     -- done: keep no bytes (memory stays bounded)
  return { buf = buf, frames = frames, begin = begin }
end

-- zlib inflate of a tvb (rt.inflate_strict, lua/rt_inflate.lua); nil when corrupt, incomplete or over the limit.
function rt.inflate(tvb, name)
  return (rt.inflate_strict(tvb:raw(), INFLATE_LIMIT, name))
end
