-- Strict, bounded zlib inflate for the plugin: the twin of engine/inflate.py (Python's zlib with a
-- max_length; deflate_walk there is this file's deflate_walk, line for line). Wireshark's tvb:uncompress inflates without a cap (a 10 MB bomb becomes 10 GiB before any check)
-- and returns what it got from a stream with no final block or a bad Adler-32, which Python rejects. So a stream
-- is first walked here in Lua (RFC 1950/1951: header, blocks, Huffman codes; symbols are decoded, bytes are only
-- counted) and given up as soon as its output passes the limit or it breaks a rule zlib enforces; only then does
-- Wireshark's C inflate make the bytes, and the Adler-32 is checked. No bit operators (Lua 5.2 and 5.4): bits
-- are taken from a number holding at most a few bytes, and Huffman codes of up to 9 bits are decoded by one
-- table look-up (longer ones bit by bit, as puff.c does).
--
-- The same walk serves permessage-deflate (lua/rt_websocket.lua): raw deflate with a history, where running out
-- of input mid-stream is no error (zlib's Z_SYNC_FLUSH inflate returns what it decoded so far) but a state the
-- caller must resume from.
do
  local byte, POW2 = string.byte, {}
  for i = 0, 31 do POW2[i] = 2 ^ i end
  local FAST = 9                                             -- bits of the look-up tables
  local FAST_SIZE = POW2[FAST]

  local LBASE = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
                  163, 195, 227, 258 }
  local LEXTRA = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 }
  local DBASE = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049,
                  3073, 4097, 6145, 8193, 12289, 16385, 24577 }
  local DEXTRA = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 }
  local ORDER = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 }

  local function fail(msg) error({ inflate = msg }, 0) end
  local EOF = { eof = true }                                 -- input ran out (resumable walks only)

  -- canonical Huffman code from lengths[0..n-1] (puff.c's count/symbol form, plus a table of the codes of up to
  -- FAST bits indexed by their bits as they come off the stream); zlib's rules: no over-subscribed code, no
  -- incomplete one except a single code of length 1 (lens/dists)
  local function build(lengths, n, kind)
    local count, offs, symbol = {}, {}, {}
    for len = 0, 15 do count[len] = 0 end
    for s = 0, n - 1 do count[lengths[s] or 0] = count[lengths[s] or 0] + 1 end
    local max = 0
    for len = 1, 15 do if count[len] > 0 then max = len end end
    local left = 1
    for len = 1, 15 do
      left = left * 2 - count[len]
      if left < 0 then fail("invalid " .. kind .. " code (over-subscribed)") end
    end
    if max > 0 and left > 0 and (kind == "code lengths" or max ~= 1) then
      fail("invalid " .. kind .. " code (incomplete)")
    end
    offs[1] = 0
    for len = 1, 14 do offs[len + 1] = offs[len] + count[len] end
    for s = 0, n - 1 do
      local len = lengths[s] or 0
      if len ~= 0 then symbol[offs[len]] = s; offs[len] = offs[len] + 1 end
    end
    -- the fast table: code c of length len (sent first bit first) sits at its bit-reversed value, repeated
    local fsym, flen, code, nextc = {}, {}, 0, {}
    count[0] = 0
    for len = 1, 15 do code = (code + count[len - 1]) * 2; nextc[len] = code end
    for s = 0, n - 1 do
      local len = lengths[s] or 0
      if len ~= 0 then
        local c = nextc[len]
        nextc[len] = c + 1
        if len <= FAST then
          local r = 0
          for _ = 1, len do local b = c % 2; r = r * 2 + b; c = (c - b) / 2 end
          for k = r, FAST_SIZE - 1, POW2[len] do fsym[k], flen[k] = s, len end
        end
      end
    end
    return { count = count, symbol = symbol, fsym = fsym, flen = flen }
  end

  local FIXED_L, FIXED_D
  do
    local l, d = {}, {}
    for s = 0, 143 do l[s] = 8 end
    for s = 144, 255 do l[s] = 9 end
    for s = 256, 279 do l[s] = 7 end
    for s = 280, 287 do l[s] = 8 end
    for s = 0, 31 do d[s] = 5 end                           -- 30 and 31 complete the code, never valid
    FIXED_L, FIXED_D = build(l, 288, "literal/length"), build(d, 32, "distance")
  end

  -- Walk the deflate data of `s` from byte `at` (1-based); error({inflate = why}) on a rule broken or more than
  -- `limit` bytes of output. `history`: bytes of output before this data a distance may reach (at most `wsize`).
  -- Returns the output size, the position of the first byte after the stream (after its final block), "final";
  -- with `resumable`, input running out is no error: then it returns the output so far, nil, "eof", and whether
  -- the data ended cleanly between two blocks on a byte boundary (a new walk can start at the next byte).
  local function deflate_walk(s, at, limit, history, wsize, resumable)
    local n = #s
    local pos, buf, nb, out = at, 0, 0, 0
    local at_header = false
    local function short()
      if resumable then error(EOF, 0) end
      fail("stream ends early")
    end
    local function fill(k)                                  -- at least k bits in buf, or short()
      while nb < k do
        if pos > n then short() end
        buf = buf + byte(s, pos) * POW2[nb]; pos = pos + 1; nb = nb + 8
      end
    end
    local function bits(k)
      if nb < k then fill(k) end
      local p = POW2[k]
      local v = buf % p
      buf, nb = (buf - v) / p, nb - k
      return v
    end
    local function decode(h)
      while nb < FAST and pos <= n do
        buf = buf + byte(s, pos) * POW2[nb]; pos = pos + 1; nb = nb + 8
      end
      local k = buf % FAST_SIZE
      local len = h.flen[k]
      if len and len <= nb then
        local p = POW2[len]
        buf, nb = (buf - buf % p) / p, nb - len
        return h.fsym[k]
      end
      local code, first, index = 0, 0, 0                    -- a longer code (or too few bits): puff.c's way
      local count, symbol = h.count, h.symbol
      for l = 1, 15 do
        code = code + bits(1)
        local c = count[l]
        if code - c < first then return symbol[index + code - first] end
        index = index + c
        first = (first + c) * 2
        code = code * 2
      end
      fail("invalid code")
    end

    local function blocks()
      local final = 0
      repeat
        at_header = true
        local head = bits(3)          -- all three at once: input running out here has consumed none of them
        at_header = false
        final = head % 2
        local btype = (head - final) / 2
        if btype == 0 then
          local drop = nb % 8                               -- to a byte boundary; whole bytes read ahead go back
          if drop > 0 then bits(drop) end
          pos, buf, nb = pos - nb / 8, 0, 0
          if pos + 3 > n then short() end
          local a, b, c, d = byte(s, pos, pos + 3)
          local len, nlen = a + b * 256, c + d * 256
          if len + nlen ~= 65535 then fail("invalid stored block lengths") end
          pos = pos + 4
          if pos + len > n + 1 then
            if resumable then out = out + (n + 1 - pos) end
            short()
          end
          pos = pos + len
          out = out + len
          if out > limit then fail("over the limit") end
        elseif btype == 3 then
          fail("invalid block type")
        else
          local lit, dist = FIXED_L, FIXED_D
          if btype == 2 then
            local nlen, ndist, ncode = bits(5) + 257, bits(5) + 1, bits(4) + 4
            if nlen > 286 or ndist > 30 then fail("too many length or distance symbols") end
            local cl = {}
            for i = 1, ncode do cl[ORDER[i]] = bits(3) end
            local lencode = build(cl, 19, "code lengths")
            local lengths, i = {}, 0
            while i < nlen + ndist do
              local sym = decode(lencode)
              if sym < 16 then
                lengths[i] = sym; i = i + 1
              else
                local value, rep = 0, 0
                if sym == 16 then
                  if i == 0 then fail("invalid bit length repeat") end
                  value, rep = lengths[i - 1], 3 + bits(2)
                elseif sym == 17 then rep = 3 + bits(3)
                else rep = 11 + bits(7) end
                if i + rep > nlen + ndist then fail("invalid bit length repeat") end
                for _ = 1, rep do lengths[i] = value; i = i + 1 end
              end
            end
            if (lengths[256] or 0) == 0 then fail("invalid code -- missing end-of-block") end
            local ll, dl = {}, {}
            for k = 0, nlen - 1 do ll[k] = lengths[k] end
            for k = 0, ndist - 1 do dl[k] = lengths[nlen + k] end
            lit, dist = build(ll, nlen, "literal/length"), build(dl, ndist, "distance")
          end
          local reach = history < wsize and history or wsize
          local lflen, lfsym = lit.flen, lit.fsym
          while true do
            while nb < FAST and pos <= n do                   -- decode(lit)'s fast path, inlined
              buf = buf + byte(s, pos) * POW2[nb]; pos = pos + 1; nb = nb + 8
            end
            local k = buf % FAST_SIZE
            local sym, len = lfsym[k], lflen[k]
            if len and len <= nb then
              local p = POW2[len]
              buf, nb = (buf - buf % p) / p, nb - len
            else
              sym = decode(lit)
            end
            if sym < 256 then
              out = out + 1
            elseif sym == 256 then
              break
            else
              sym = sym - 257
              if sym >= 29 then fail("invalid literal/length code") end
              local len = LBASE[sym + 1]
              local x = LEXTRA[sym + 1]
              if x > 0 then len = len + bits(x) end
              local d = decode(dist)
              if d >= 30 then fail("invalid distance code") end
              local back = DBASE[d + 1]
              x = DEXTRA[d + 1]
              if x > 0 then back = back + bits(x) end
              if back > out + reach or back > wsize then fail("invalid distance too far back") end
              out = out + len
            end
            if out > limit then fail("over the limit") end
          end
        end
      until final == 1
    end

    local ok, err = pcall(blocks)
    if not ok then
      if err ~= EOF then error(err, 0) end
      return out, nil, "eof", at_header and nb == 0 and pos > n
    end
    return out, pos - (nb - nb % 8) / 8, "final"
  end

  -- Walk one zlib stream of `s`; error({inflate = why}) on a rule broken or more than `limit` bytes of output.
  -- Returns the output size and the position (1-based) of the Adler-32.
  local function walk(s, limit)
    local n = #s
    if n < 2 then fail("truncated header") end
    local cmf, flg = byte(s, 1, 2)
    if (cmf * 256 + flg) % 31 ~= 0 then fail("incorrect header check") end
    if cmf % 16 ~= 8 then fail("unknown compression method") end
    local cinfo = (cmf - cmf % 16) / 16
    if cinfo > 7 then fail("invalid window size") end
    if flg % 64 >= 32 then fail("needs a preset dictionary") end
    local out, pos = deflate_walk(s, 3, limit, 0, POW2[cinfo + 8], false)
    if pos + 3 > n then fail("stream ends early (no Adler-32)") end
    return out, pos
  end

  local function adler32(s)
    local a, b, n, i = 1, 0, #s, 1
    while i <= n do
      local j = i + 3999 < n and i + 3999 or n
      local t = { byte(s, i, j) }
      for k = 1, #t do a = a + t[k]; b = b + a end
      a, b = a % 65521, b % 65521
      i = j + 1
    end
    return b * 65536 + a
  end

  -- A tvb of the inflated bytes of `s` (a Lua string), or nil and why: corrupt, incomplete, a bad Adler-32, or
  -- more than `limit` bytes (found out after at most `limit` bytes' worth of symbols, never by inflating more).
  -- A valid stream of nothing is an empty tvb (as Python's zlib gives b"").
  function rt.inflate_strict(s, limit, name)
    local ok, size, at = pcall(walk, s, limit)
    if not ok then
      if type(size) == "table" then return nil, size.inflate end
      return nil, tostring(size)
    end
    local a, b, c, d = byte(s, at, at + 3)
    local check = ((a * 256 + b) * 256 + c) * 256 + d
    if size == 0 then                 -- tvb:uncompress makes no empty tvb
      if check ~= 1 then return nil, "incorrect data check" end
      return ByteArray.new("", true):tvb(name), nil
    end
    local stream = ByteArray.new(string.sub(s, 1, at + 3), true):tvb(name .. " (zlib)")
    local got, r = pcall(function() return stream:range(0):uncompress(name) end)
    if not got then got, r = pcall(function() return stream:range(0):uncompress_zlib(name) end) end
    if not got or r == nil or r:len() ~= size then return nil, "does not inflate" end
    if adler32(r:raw()) ~= check then return nil, "incorrect data check" end
    return r:tvb(), nil
  end
  rt.inflate_walk, rt.deflate_walk, rt.adler32 = walk, deflate_walk, adler32
end
