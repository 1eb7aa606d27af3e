-- libenet's range coder decoder (compress.c): the twin of engine/rangecoder.py, bit-exact with libenet,
-- including its failures (nil + message where libenet returns 0). Lua 5.2 numbers are doubles: every C integer
-- width (uint32 coder state, uint16 totals, uint8 values and counts) is emulated with % and math.floor, and no
-- intermediate value reaches 2^53. Symbols are numbered from 1 here (the root context is 1; 0 means none).
do
  local floor, byte, char, concat = math.floor, string.byte, string.char, table.concat
  local SYMBOLS = 4096                 -- symbols in ENetRangeCoder; the model restarts when nearly all are used
  local TOP, BOTTOM, M32 = 16777216, 65536, 4294967296
  local RESCALE_TOTAL = 65536 - 256    -- ENET_RANGE_CODER_BOTTOM - 0x100
  local SUB_DELTA, SUB_ESC_DELTA, SUB_LIMIT = 2, 5, 251     -- subcontexts (orders 1 and 2), minimum 0
  local ROOT_DELTA, ROOT_LIMIT = 3, 250                     -- the order-0 context, minimum 1

  -- m: parallel arrays, one per ENetSymbol member, plus m.next (the next free symbol).
  local function create(m, v, cnt)
    local s = m.next
    m.next = s + 1
    m.value[s] = v; m.count[s] = cnt; m.under[s] = cnt
    m.left[s] = 0; m.right[s] = 0; m.symbols[s] = 0; m.escapes[s] = 0; m.total[s] = 0; m.parent[s] = 1
    return s
  end

  local function restart(m)
    m.next = 1
    create(m, 0, 0)
    m.escapes[1] = 1
    m.total[1] = 1 + 256
  end

  -- ENET_CONTEXT_RESCALE: halve counts (rounding up) and escapes; under = own count + the left subtree's counts,
  -- total = all counts (mod 2^16). libenet recurses; garbage can make trees deep, so walk with a stack.
  local function rescale(m, ctx, minimum)
    local total, root = 0, m.symbols[ctx]
    if root ~= 0 then
      local counts, lefts, rights, unders = m.count, m.left, m.right, m.under
      local order, stack, sp, no, sums = {}, { root }, 1, 0, {}
      while sp > 0 do
        local node = stack[sp]; stack[sp] = nil; sp = sp - 1
        no = no + 1; order[no] = node
        counts[node] = counts[node] - floor(counts[node] / 2)
        if lefts[node] ~= 0 then sp = sp + 1; stack[sp] = lefts[node] end
        if rights[node] ~= 0 then sp = sp + 1; stack[sp] = rights[node] end
      end
      for i = no, 1, -1 do           -- children before parents
        local node = order[i]
        local l, r = lefts[node], rights[node]
        local ls = l ~= 0 and sums[l] or 0
        local rs = r ~= 0 and sums[r] or 0
        unders[node] = (counts[node] + ls) % 65536
        sums[node] = (counts[node] + ls + rs) % 65536
      end
      total = sums[root]
    end
    local e = m.escapes[ctx]
    e = e - floor(e / 2)
    m.escapes[ctx] = e
    m.total[ctx] = (total + e + 256 * minimum) % 65536
  end

  -- enet_range_coder_decompress: the bytes, or nil and why. Model updates are inlined (as libenet's macros are);
  -- the model's uint16/uint8 members never wrap (see engine/rangecoder.py), the coder state and code do.
  local function decode(s, limit)
    local n = #s
    if n <= 0 then return nil, "no compressed data" end
    local m = { value = {}, count = {}, under = {}, left = {}, right = {}, symbols = {}, escapes = {}, total = {},
                parent = {}, next = 1 }
    restart(m)
    local values, counts, unders, lefts, rights = m.value, m.count, m.under, m.left, m.right
    local symbols, escapes, totals, parents = m.symbols, m.escapes, m.total, m.parent
    local nxt = m.next
    -- ENET_RANGE_CODER_SEED. `code` is libenet's decodeCode minus decodeLow (mod 2^32), the number READ divides.
    local b1, b2, b3, b4 = byte(s, 1, 4)
    local code = (b1 or 0) * 16777216 + (b2 or 0) * 65536 + (b3 or 0) * 256 + (b4 or 0)
    local pos = 5
    local low, rng = 0, M32 - 1
    local out, nout = {}, 0
    local predicted, order = 1, 0

    while true do
      -- Escape down from the order-2/1 contexts until one holds the symbol; an escape from the order-0 context
      -- (symbol 1) ends the data.
      local sub, value, node = predicted, 0, 0
      while true do
        local e, total = escapes[sub], totals[sub]
        if sub ~= 1 and (e <= 0 or e >= total) then
          sub = parents[sub]
        else
          -- ENET_RANGE_CODER_NORMALIZE of the previous DECODE, here before the READ that needs it (the seed needs
          -- none); a range >= 2^24 without a carry out of low + range settles it at once.
          while rng < TOP or low + rng >= M32 do
            if floor(low / TOP) ~= floor(((low + rng) % M32) / TOP) then
              if rng >= BOTTOM then break end
              rng = (BOTTOM - low % BOTTOM) % BOTTOM
            end
            code = (code % TOP) * 256 + (byte(s, pos) or 0)
            pos = pos + 1
            rng = (rng % TOP) * 256
            low = (low % TOP) * 256
            if rng == 0 then return nil, "range collapsed to 0 (libenet would loop forever)" end
          end
          rng = floor(rng / total)                                  -- ENET_RANGE_CODER_READ
          local c = floor(code / rng)
          if c >= 65536 then c = c % 65536 end
          if c < e then                         -- ENET_RANGE_CODER_DECODE(0, escapes, total)
            if sub == 1 then
              if nout == 0 then return nil, "no data before the end symbol" end
              local parts = {}
              for i = 1, nout, 4096 do
                parts[#parts + 1] = char(table.unpack(out, i, math.min(i + 4095, nout)))
              end
              return concat(parts)
            end
            rng = rng * e                       -- count <= total: no wrap
            sub = parents[sub]
          else
            local under, cnt
            if sub ~= 1 then                    -- ENET_CONTEXT_TRY_DECODE: a symbol not in the tree is an error
              under, node = e, symbols[sub]     -- from the escapes: after - before is the symbol's place
              if node == 0 then return nil, "symbol missing from an empty context" end
              local u, after
              while true do
                u = unders[node]
                after = under + u
                if c >= after then
                  under = after
                  node = rights[node]
                else
                  cnt = counts[node]
                  if c >= after - cnt then break end
                  unders[node] = u + SUB_DELTA
                  node = lefts[node]
                end
                if node == 0 then return nil, "symbol missing from a context" end
              end
              value = values[node]
              unders[node] = u + SUB_DELTA
              counts[node] = cnt + SUB_DELTA
              under = after - cnt
              local t = total + SUB_DELTA
              totals[sub] = t
              if cnt > SUB_LIMIT or t > RESCALE_TOTAL then rescale(m, sub, 0) end
            else                                -- ENET_CONTEXT_ROOT_DECODE: a value not in the tree is new
              c = c - e
              under, cnt, node = 0, 1, symbols[1]
              if node == 0 then
                value, under = c % 256, c
                symbols[1] = nxt
              else
                while true do
                  local u, v = unders[node], values[node]
                  local after = under + u + v + 1
                  if c >= after then
                    under = under + u
                    local child = rights[node]
                    if child == 0 then
                      value, under = (v + 1 + c - after) % 256, c
                      rights[node] = nxt; node = 0
                      break
                    end
                    node = child
                  else
                    local before = counts[node] + 1
                    unders[node] = u + ROOT_DELTA
                    if c < after - before then
                      local child = lefts[node]
                      if child == 0 then
                        value, under = (v - after + before + c) % 256, c
                        lefts[node] = nxt; node = 0
                        break
                      end
                      node = child
                    else
                      value, cnt = v, before
                      under = after - before
                      counts[node] = before - 1 + ROOT_DELTA
                      break
                    end
                  end
                end
              end
              if node == 0 then                 -- ENET_SYMBOL_CREATE
                node, nxt = nxt, nxt + 1
                values[node] = value; counts[node] = ROOT_DELTA; unders[node] = ROOT_DELTA
                lefts[node] = 0; rights[node] = 0; symbols[node] = 0; escapes[node] = 0; totals[node] = 0
                parents[node] = 1
              end
              under = under + e
              local t = total + ROOT_DELTA
              totals[1] = t
              if cnt > ROOT_LIMIT or t > RESCALE_TOTAL then rescale(m, 1, 1) end
            end
            -- ENET_RANGE_CODER_DECODE(under, cnt, total): the coder state wraps only on garbage
            local x = under * rng
            low = low + x
            if low >= M32 then low = low % M32 end
            code = code - x
            if code < 0 then code = code % M32 end
            rng = rng * cnt                     -- cnt <= total: no wrap
            break
          end
        end
      end
      local bottom = node

      -- patchContexts: teach the contexts we escaped from (ENET_CONTEXT_ENCODE, minimum 0); each one's symbol
      -- becomes the context of the next order: `link` is where its index goes (0: `predicted`).
      local link, patch = 0, predicted
      while patch ~= sub do
        local pc = 0
        node = symbols[patch]
        if node == 0 then
          symbols[patch] = nxt
        else
          while true do
            local v = values[node]
            if value < v then
              unders[node] = unders[node] + SUB_DELTA
              if lefts[node] == 0 then lefts[node] = nxt; node = 0; break end
              node = lefts[node]
            elseif value > v then
              if rights[node] == 0 then rights[node] = nxt; node = 0; break end
              node = rights[node]
            else
              pc = counts[node]
              unders[node] = unders[node] + SUB_DELTA
              counts[node] = pc + SUB_DELTA
              break
            end
          end
        end
        if node == 0 then
          node, nxt = nxt, nxt + 1
          values[node] = value; counts[node] = SUB_DELTA; unders[node] = SUB_DELTA
          lefts[node] = 0; rights[node] = 0; symbols[node] = 0; escapes[node] = 0; totals[node] = 0
          parents[node] = 1
        end
        if link == 0 then predicted = node else parents[link] = node end
        link = node
        local t
        if pc <= 0 then
          escapes[patch] = escapes[patch] + SUB_ESC_DELTA
          t = totals[patch] + SUB_ESC_DELTA + SUB_DELTA
        else
          t = totals[patch] + SUB_DELTA
        end
        totals[patch] = t
        if pc > SUB_LIMIT or t > RESCALE_TOTAL then rescale(m, patch, 0) end
        patch = parents[patch]
      end
      if link == 0 then predicted = bottom else parents[link] = bottom end

      if nout >= limit then return nil, string.format("decompressed data longer than %d bytes", limit) end
      nout = nout + 1
      out[nout] = value
      if order >= 2 then predicted = parents[predicted] else order = order + 1 end
      if nxt - 1 >= SYMBOLS - 2 then          -- ENET_RANGE_CODER_FREE_SYMBOLS
        restart(m)
        nxt = m.next
        predicted, order = 1, 0
      end
    end
  end

  -- Decompress one ENet datagram's payload: the bytes, or nil and why (never raises, always ends; output is at
  -- most `limit` bytes, more is an error as in libenet).
  function rt.range_decompress(s, limit)
    if type(s) ~= "string" or type(limit) ~= "number" or limit ~= limit then return nil, "bad arguments" end
    local ok, res, err = pcall(decode, s, limit)
    if not ok then return nil, "range decoder error: " .. tostring(res) end
    return res, err
  end
end
