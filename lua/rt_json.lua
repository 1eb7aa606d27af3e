-- JSON text as a subtree: the parser of engine/jsonscan.py byte for byte (0-based offsets), and JsonString's items.
local JSON_DEPTH, JSON_VALUES = 32, 1000
local function jfail(pos) error({ msg = string.format("invalid JSON at byte %d", pos) }, 0) end
local WS = { [32] = true, [9] = true, [10] = true, [13] = true }
local ESC = { [34] = true, [92] = true, [47] = true, [98] = true, [102] = true, [110] = true, [114] = true,
  [116] = true }

local function jparse(raw)
  local n, count = #raw, 0
  local function at(i) return string.byte(raw, i + 1) end
  local function ws(i) while i < n and WS[at(i)] do i = i + 1 end return i end
  local function isdigit(i) local b = at(i); return b ~= nil and b >= 48 and b <= 57 end
  local function digits(i) while i < n and isdigit(i) do i = i + 1 end return i end
  local function str(pos)
    local i = pos + 1
    while i < n do
      local ch = at(i)
      if ch == 34 then return i + 1 end
      if ch == 92 then
        if i + 1 < n and ESC[at(i + 1)] then i = i + 2
        elseif i + 1 < n and at(i + 1) == 117 and string.find(string.sub(raw, i + 3, i + 6), "^%x%x%x%x$") then
          i = i + 6
        else jfail(i) end
      elseif ch < 32 then jfail(i)
      else i = i + 1 end
    end
    jfail(n)
  end
  local function num(pos)
    local i = pos
    if at(i) == 45 then i = i + 1 end
    if i < n and at(i) == 48 then i = i + 1
    elseif i < n and at(i) >= 49 and at(i) <= 57 then i = digits(i)
    else jfail(i) end
    if i < n and at(i) == 46 then
      if not (i + 1 < n and isdigit(i + 1)) then jfail(i + 1) end
      i = digits(i + 1)
    end
    if i < n and (at(i) == 101 or at(i) == 69) then
      i = i + 1
      if i < n and (at(i) == 43 or at(i) == 45) then i = i + 1 end
      if not (i < n and isdigit(i)) then jfail(i) end
      i = digits(i)
    end
    return i
  end
  local value
  local function container(start, depth, close, is_object)
    local kids, pos = {}, ws(start + 1)
    local kind = is_object and "object" or "array"
    if pos < n and at(pos) == close then return { kind, start, pos + 1, kids }, pos + 1 end
    while true do
      local node, after
      if is_object then
        if pos >= n or at(pos) ~= 34 then jfail(pos) end
        local key_end = str(pos)
        local colon = ws(key_end)
        if colon >= n or at(colon) ~= 58 then jfail(colon) end
        node, after = value(ws(colon + 1), depth + 1)
        kids[#kids + 1] = { pos, key_end, node }
      else
        node, after = value(pos, depth + 1)
        kids[#kids + 1] = node
      end
      pos = ws(after)
      if pos < n and at(pos) == 44 then
        pos = ws(pos + 1)
      elseif pos < n and at(pos) == close then
        return { kind, start, pos + 1, kids }, pos + 1
      else
        jfail(pos)
      end
    end
  end
  value = function(pos, depth)
    count = count + 1
    if count > JSON_VALUES then error({ msg = string.format("more than %d JSON values", JSON_VALUES) }, 0) end
    if depth > JSON_DEPTH then error({ msg = string.format("JSON nested deeper than %d", JSON_DEPTH) }, 0) end
    if pos >= n then jfail(pos) end
    local ch = at(pos)
    if ch == 123 then return container(pos, depth, 125, true) end
    if ch == 91 then return container(pos, depth, 93, false) end
    if ch == 34 then local e = str(pos); return { "string", pos, e }, e end
    if ch == 45 or (ch >= 48 and ch <= 57) then local e = num(pos); return { "number", pos, e }, e end
    for _, word in ipairs({ "true", "false", "null" }) do
      if string.sub(raw, pos + 1, pos + #word) == word then return { word, pos, pos + #word }, pos + #word end
    end
    jfail(pos)
  end
  local node, pos = value(ws(0), 1)
  pos = ws(pos)
  if pos ~= n then jfail(pos) end
  return node
end
rt.json_parse = jparse

local function jadd(c, parent, node, raw, base, F)
  local kind, s, e, kids = node[1], node[2], node[3], node[4]
  if kind == "string" then
    return parent:add_packet_field(F.string, c.tvb(base + s + 1, e - s - 2), ENC_UTF_8)
  end
  local r = c.tvb(base + s, e - s)
  if kind == "number" then
    return parent:add(F.number, r, tonumber(string.sub(raw, s + 1, e)))
  end
  local it = parent:add(F[kind], r)
  if kind == "object" or kind == "array" then it:set_text(kind == "object" and "Object" or "Array") end
  if kind == "true" or kind == "false" or kind == "null" then it:set_text(kind) end
  for _, kid in ipairs(kids or {}) do
    if kind == "object" then
      local ks, ke, v = kid[1], kid[2], kid[3]
      local key = rt.utf8(string.sub(raw, ks + 2, ke - 1))
      local m = it:add(F.member, c.tvb(base + ks, v[3] - ks))
      m:set_text("Member: " .. key)
      m:add_packet_field(F.key, c.tvb(base + ks + 1, ke - ks - 2), ENC_UTF_8)
      jadd(c, m, v, raw, base, F)
    else
      jadd(c, it, kid, raw, base, F)
    end
  end
  return it
end

function rt.json(c, it, s, at, F, label)
  local ok, res = pcall(jparse, s)
  if not ok then
    if type(res) ~= "table" then error(res, 0) end
    rt.expert(c, it, "unexpected", label .. ": " .. res.msg)
    return
  end
  jadd(c, it, res, s, at, F)
end
