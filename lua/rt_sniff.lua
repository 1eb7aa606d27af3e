-- What a buffer holds, from its first bytes (engine/sniff.py): image formats with their dimensions, glTF.
local function be(s, i, n) local v = 0; for k = 1, n do v = v * 256 + string.byte(s, i + k) end return v end
local function le(s, i, n) local v = 0; for k = n, 1, -1 do v = v * 256 + string.byte(s, i + k) end return v end
local function starts(s, p, at) return string.sub(s, (at or 0) + 1, (at or 0) + #p) == p end

local function jpeg_size(b)
  local pos, n, steps = 2, #b, 0
  while pos + 4 <= n and steps < 1000 do
    steps = steps + 1
    if string.byte(b, pos + 1) ~= 0xFF then return nil end
    local m = string.byte(b, pos + 2)
    if m == 0xFF then pos = pos + 1
    elseif m == 0x01 or (m >= 0xD0 and m <= 0xD9) then pos = pos + 2
    elseif m >= 0xC0 and m <= 0xCF and m ~= 0xC4 and m ~= 0xC8 and m ~= 0xCC then
      if pos + 9 <= n then return be(b, pos + 7, 2), be(b, pos + 5, 2) end
      return nil
    else pos = pos + 2 + be(b, pos + 2, 2) end
  end
  return nil
end

local function webp(b)
  local n, chunk = #b, string.sub(b, 13, 16)
  if chunk == "VP8 " and n >= 30 then return "WebP", le(b, 26, 2) % 16384, le(b, 28, 2) % 16384 end
  if chunk == "VP8L" and n >= 25 then
    local b0, b1, b2, b3 = string.byte(b, 22, 25)
    return "WebP", 1 + (b1 % 64) * 256 + b0, 1 + (b3 % 16) * 1024 + b2 * 4 + math.floor(b1 / 64)
  end
  if chunk == "VP8X" and n >= 30 then return "WebP", 1 + le(b, 24, 3), 1 + le(b, 27, 3) end
  return "WebP"
end

-- Formats whose header holds the dimensions at fixed places (engine/sniff.py HEADERS).
local HEADERS = {
  { "PNG", "\137PNG\r\n\26\n", 16, 20, 4, be },
  { "GIF", "GIF87a", 6, 8, 2, le }, { "GIF", "GIF89a", 6, 8, 2, le },
  { "QOI", "qoif", 4, 8, 4, be },
  { "DDS", "DDS ", 16, 12, 4, le },
  { "KTX2", "\171KTX 20\187\r\n\26\n", 20, 24, 4, le },
}

function rt.sniff(b)
  local n = #b
  for _, h in ipairs(HEADERS) do
    if starts(b, h[2]) then
      if n < math.max(h[3], h[4]) + h[5] then return h[1] end
      return h[1], h[6](b, h[3], h[5]), h[6](b, h[4], h[5])
    end
  end
  if starts(b, "\255\216\255") then return "JPEG", jpeg_size(b) end
  if starts(b, "BM") and n >= 26 and le(b, 14, 4) >= 12 then
    local w, h = le(b, 18, 4), le(b, 22, 4)
    if w >= 2147483648 then w = 4294967296 - w end
    if h >= 2147483648 then h = 4294967296 - h end
    return "BMP", w, h
  end
  if starts(b, "RIFF") and string.sub(b, 9, 12) == "WEBP" then return webp(b) end
  if starts(b, "glTF") then return "glTF binary" end
  return nil
end
