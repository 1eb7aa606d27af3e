-- Strict, bounded zlib inflate for the plugin: the twin of engine/blocks.py _inflate (Python's zlib with a
-- max_length). Wireshark's tvb:uncompress inflates without a cap (a 10 MB bomb becomes 10 GiB before any check)
-- and returns what it got from a stream with no final block or a bad Adler-32, which Python rejects. So a stream
-- is first walked here in Lua (RFC 1950/1951: header, blocks, Huffman codes; symbols are decoded, bytes are only
-- counted) and given up as soon as its output passes the limit or it breaks a rule zlib enforces; only then does
-- Wireshark's C inflate make the bytes, and the Adler-32 is checked. No bit operators (Lua 5.2 and 5.4).
do
  local byte, POW2 = string.byte, {}
  for i = 0, 31 do POW2[i] = 2 ^ i end

  local LBASE = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
                  163, 195, 227, 258 }
  local LEXTRA = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 }
  local DBASE = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049,
                  3073, 4097, 6145, 8193, 12289, 16385, 24577 }
  local DEXTRA = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 }
  local ORDER = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 }

  local function fail(msg) error({ inflate = msg }, 0) end

  -- canonical Huffman code from lengths[0..n-1] (puff.c's count/symbol form); zlib's rules: no over-subscribed
  -- code, no incomplete one except a single code of length 1 (lens/dists)
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
    return { count = count, symbol = symbol }
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
    local window = POW2[cinfo + 8]
    local pos, cur, nb, out = 3, 0, 0, 0

    local function bit()
      if nb == 0 then
        if pos > n then fail("stream ends early") end
        cur = byte(s, pos); pos = pos + 1; nb = 8
      end
      local b = cur % 2
      cur = (cur - b) / 2
      nb = nb - 1
      return b
    end
    local function bits(count)
      local v = 0
      for i = 0, count - 1 do v = v + bit() * POW2[i] end
      return v
    end
    local function decode(h)
      local code, first, index = 0, 0, 0
      local count, symbol = h.count, h.symbol
      for len = 1, 15 do
        code = code + bit()
        local c = count[len]
        if code - c < first then return symbol[index + code - first] end
        index = index + c
        first = (first + c) * 2
        code = code * 2
      end
      fail("invalid code")
    end

    local final = 0
    repeat
      final = bit()
      local btype = bits(2)
      if btype == 0 then
        cur, nb = 0, 0                                     -- to a byte boundary
        if pos + 3 > n then fail("stream ends early") end
        local a, b, c, d = byte(s, pos, pos + 3)
        local len, nlen = a + b * 256, c + d * 256
        if len + nlen ~= 65535 then fail("invalid stored block lengths") end
        pos = pos + 4 + len
        if pos > n + 1 then fail("stream ends early") end
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
        while true do
          local sym = decode(lit)
          if sym < 256 then
            out = out + 1
          elseif sym == 256 then
            break
          else
            sym = sym - 257
            if sym >= 29 then fail("invalid literal/length code") end
            local len = LBASE[sym + 1] + bits(LEXTRA[sym + 1])
            local d = decode(dist)
            if d >= 30 then fail("invalid distance code") end
            local back = DBASE[d + 1] + bits(DEXTRA[d + 1])
            if back > out or back > window then fail("invalid distance too far back") end
            out = out + len
          end
          if out > limit then fail("over the limit") end
        end
      end
    until final == 1
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
  function rt.inflate_strict(s, limit, name)
    local ok, size, at = pcall(walk, s, limit)
    if not ok then
      if type(size) == "table" then return nil, size.inflate end
      return nil, tostring(size)
    end
    local stream = ByteArray.new(string.sub(s, 1, at + 3), true):tvb(name .. " (zlib)")
    local got, r = pcall(function() return stream:range(0):uncompress(name) end)
    if not got then got, r = pcall(function() return stream:range(0):uncompress_zlib(name) end) end
    -- Wireshark makes no empty tvb: an empty file is left to the caller's "does not inflate", as before
    if size == 0 or not got or r == nil or r:len() ~= size then return nil, "does not inflate" end
    local a, b, c, d = byte(s, at, at + 3)
    if adler32(r:raw()) ~= ((a * 256 + b) * 256 + c) * 256 + d then return nil, "incorrect data check" end
    return r:tvb(), nil
  end
  rt.inflate_walk, rt.adler32 = walk, adler32
end
