"""Building blocks for text protocols (Freeblox and any protocol made of NUL-ended strings): a validated UUID
string, a JSON string parsed into a subtree, an enum string, a "key:value" string split in two, the rest of a
message as a buffer whose format is sniffed, and small per-conversation memories (who is the client; names by
UUID). Each is implemented once here and once in lua/rt_text.lua (JSON: engine/jsonscan.py and lua/rt_json.lua;
formats: engine/sniff.py and lua/rt_sniff.lua); `emit_lua` writes the call for the plugin.
"""
from __future__ import annotations

import re

from .context import bounded_put, reverse_direction
from .fields import Field
from .jsonscan import JsonError, JsonParser
from .lua_literals import lua_str
from .sniff import SNIFF_LIMIT, sniff
from .strings import wire_string
from .tree import Item

TEXT_LIMIT = 1 << 20          # size rule only: a string runs to the end of its message at most
NAMES_LIMIT = 4096            # remembered names per conversation (the oldest is forgotten)

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def valid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def is_uuid(value: str) -> bool:
    """The canonical 8-4-4-4-12 hex form (RFC 9562; hex digits of either case)."""
    return UUID_RE.fullmatch(value) is not None


# --- NUL-ended strings ---------------------------------------------------------------------------------------------


class StringNT(Field):
    """A StringNT: UTF-8 up to the first NUL, which it consumes. No NUL before the end of the message: the string
    runs to the end (Malformed); invalid UTF-8: a warning. Subclasses check the value further (`check`)."""

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "string")

    def decode(self, ctx, parent):
        ctx.need(1, self.label, parent)
        start, end = ctx.pos, ctx.end
        nul = ctx.data.find(b"\0", start, end)
        stop = nul if nul >= 0 else end
        raw = ctx.data[start:stop]
        value = wire_string(raw)
        item = parent.add(Item(self.info, value, start, stop - start + (nul >= 0), None, False, ctx.source))
        ctx.scopes[-1][self.name] = value
        ctx.pos = stop + (nul >= 0)
        if nul < 0:
            ctx.expert(item, "malformed", f"{self.label}: no terminating NUL")
        elif not valid_utf8(raw):
            ctx.expert(item, "unexpected", f"{self.label}: invalid UTF-8")
        else:
            self.check(ctx, item, raw, value)

    def check(self, ctx, item: Item, raw: bytes, value: str) -> None:
        """Further checks of a well-formed string (UUID form, enum values, JSON)."""

    def encode(self, values, out):
        value = values.get(self.name, "")
        out += (value.encode() if isinstance(value, str) else bytes(value)) + b"\0"

    def default(self):
        return ""

    def size_rule(self):
        return (1, TEXT_LIMIT, 1)

    # Lua: rt.text(c, T, field, label) adds the item, consumes the string and returns value, item, raw bytes and
    # whether it is well formed; `lua_check` adds the subclass's check.
    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with w.block("do"):
            w(f"local v, it, s, ok, at = rt.text(c, T, F[{lua_str(self.abbrev)}], {lua_str(self.label)})")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = v")
            self.lua_check(gen)
            if shown:
                w(f"{shown} = v")

    def lua_check(self, gen) -> None:
        pass


class UuidString(StringNT):
    """A StringNT that should hold a canonical UUID (warning if not)."""

    def check(self, ctx, item, raw, value):
        if not is_uuid(value):
            ctx.expert(item, "unexpected", f"{self.label} is not a canonical UUID")

    def default(self):
        return "00000000-0000-0000-0000-000000000000"

    def lua_check(self, gen):
        gen.w(f"if ok and not rt.is_uuid(v) then rt.expert(c, it, \"unexpected\", "
              f"{lua_str(self.label + ' is not a canonical UUID')}) end")


class EnumString(StringNT):
    """A StringNT naming one of `values` (warning for others)."""

    def __init__(self, name, label, values: tuple[str, ...]):
        super().__init__(name, label)
        self.values = tuple(values)

    def check(self, ctx, item, raw, value):
        if value not in self.values:
            ctx.expert(item, "unexpected", f"Unknown {self.label} \"{value}\"")

    def default(self):
        return self.values[0]

    def lua_check(self, gen):
        allowed = ", ".join(f"[{lua_str(v)}] = true" for v in self.values)
        gen.w(f"if ok and not ({{ {allowed} }})[v] then rt.expert(c, it, \"unexpected\", "
              f"{lua_str('Unknown ' + self.label + ' ')} .. '\"' .. v .. '\"') end")


class SplitString(StringNT):
    """A StringNT holding two parts around the first `sep` ("uuid:name"): each part shown as its own field
    under the string; `uuid_first`: the first part should be a canonical UUID. No separator: a warning."""

    def __init__(self, name, label, *, sep: str, parts: tuple[tuple[str, str], tuple[str, str]],
                 uuid_first: bool = False):
        super().__init__(name, label)
        self.sep, self.parts, self.uuid_first = sep, parts, uuid_first

    def register(self, b):
        super().register(b)
        self.part_infos = [b.field(f"{self.abbrev}.{n}", lab, "string") for n, lab in self.parts]

    def check(self, ctx, item, raw, value):
        cut = raw.find(self.sep.encode())
        if cut < 0:
            ctx.expert(item, "unexpected", f"{self.label}: no \"{self.sep}\" separator")
            return
        spans = ((item.offset, raw[:cut]), (item.offset + cut + len(self.sep), raw[cut + len(self.sep):]))
        for (name, label), info, (at, part) in zip(self.parts, self.part_infos, spans):
            text = wire_string(part)
            ctx.scopes[-1][name] = text
            sub = item.add(Item(info, text, at, len(part), None, False, ctx.source))
            if self.uuid_first and name == self.parts[0][0] and not is_uuid(text):
                ctx.expert(sub, "unexpected", f"{label} is not a canonical UUID")

    def encode(self, values, out):
        first, second = (values.get(n, "") for n, _ in self.parts)
        out += f"{first}{self.sep}{second}".encode() + b"\0"

    def infos(self):
        yield self.info
        yield from self.part_infos

    def lua_check(self, gen):
        (n1, l1), (n2, _) = self.parts
        f1, f2 = (lua_str(i.abbrev) for i in self.part_infos)
        not_uuid = lua_str(f"{l1} is not a canonical UUID") if self.uuid_first else "nil"
        no_sep = lua_str(f"{self.label}: no \"{self.sep}\" separator")
        gen.w(f"if ok then rt.split(c, it, s, at, {lua_str(self.sep)}, F[{f1}], F[{f2}], {lua_str(n1)}, "
              f"{lua_str(n2)}, {not_uuid}, {no_sep}) end")


# --- JSON --------------------------------------------------------------------------------------------------------

JSON_KINDS = ("object", "array", "member", "key", "string", "number", "true", "false", "null")


class JsonString(StringNT):
    """A StringNT holding JSON: parsed into a subtree (objects, members with their keys, arrays, values), like
    Wireshark's json dissector. Not JSON: a warning saying where it stops parsing. The JSON fields are shared
    by the protocol (`<proto>.json.*`)."""

    def register(self, b):
        super().register(b)
        names = {"object": "Object", "array": "Array", "member": "Member", "key": "Key", "string": "String value",
                 "number": "Number value", "true": "True value", "false": "False value", "null": "Null value"}
        types = {"key": "string", "string": "string", "number": "double"}
        top = f"{b.proto}.json"
        self.json_infos = {k: b.field(f"{top}.{k if k in ('object', 'array', 'member', 'key') else 'value.' + k}",
                                      names[k], types.get(k, "none")) for k in JSON_KINDS}

    def check(self, ctx, item, raw, value):
        try:
            node = JsonParser(raw).parse()
        except JsonError as exc:
            ctx.expert(item, "unexpected", f"{self.label}: {exc.message}")
            return
        self.add_node(item, node, raw, item.offset, ctx.source)

    def add_node(self, parent: Item, node, raw: bytes, base: int, source: int) -> Item:
        kind, start, end, kids = node
        info = self.json_infos[kind]
        if kind == "string":
            return parent.add(Item(info, wire_string(raw[start + 1:end - 1]), base + start + 1, end - start - 2,
                                   None, False, source))
        if kind == "number":
            return parent.add(Item(info, float(raw[start:end]), base + start, end - start, None, False, source))
        label = {"object": "Object", "array": "Array"}.get(kind, kind)
        item = parent.add(Item(info, None, base + start, end - start, label, False, source))
        for kid in kids or ():
            if kind == "object":
                ks, ke, value = kid
                key = wire_string(raw[ks + 1:ke - 1])
                member = item.add(Item(self.json_infos["member"], None, base + ks, value[2] - ks, f"Member: {key}",
                                       False, source))
                member.add(Item(self.json_infos["key"], key, base + ks + 1, ke - ks - 2, None, False, source))
                self.add_node(member, value, raw, base, source)
            else:
                self.add_node(item, kid, raw, base, source)
        return item

    def infos(self):
        yield self.info
        yield from self.json_infos.values()

    def lua_check(self, gen):
        fields = ", ".join(f"[{lua_str(k)}] = F[{lua_str(i.abbrev)}]" for k, i in self.json_infos.items())
        gen.w(f"if ok then rt.json(c, it, s, at, {{ {fields} }}, {lua_str(self.label)}) end")


# --- the rest of a message -----------------------------------------------------------------------------------------


class Rest(Field):
    """The rest of the message as a buffer (nothing frames it but the message's end): its size, and its format
    with the image dimensions when the first bytes say (PNG, JPEG, GIF, BMP, WebP, QOI, DDS, KTX2; glTF binary).
    The scope gets `<name>` (the bytes), `<name>_size` and `<name>_format`."""

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "bytes")
        self.size_info = b.field(self.abbrev + ".size", "Size", "uint32")
        self.format_info = b.field(self.abbrev + ".format", "Format", "string")
        self.width_info = b.field(self.abbrev + ".width", "Width", "uint32")
        self.height_info = b.field(self.abbrev + ".height", "Height", "uint32")

    def decode(self, ctx, parent):
        start, n = ctx.pos, ctx.end - ctx.pos
        data = ctx.data[start:ctx.end]
        item = parent.add(Item(self.info, data, start, n, None, False, ctx.source))
        scope = ctx.scopes[-1]
        scope[self.name], scope[self.name + "_size"] = data, n
        item.add(Item(self.size_info, n, start, n, None, True, ctx.source))
        found = sniff(data[:SNIFF_LIMIT])
        scope[self.name + "_format"] = found[0] if found else "unknown format"
        if found:
            fmt, width, height = found
            item.add(Item(self.format_info, fmt, start, n, None, True, ctx.source))
            if width is not None:
                item.add(Item(self.width_info, width, start, n, None, True, ctx.source))
                item.add(Item(self.height_info, height, start, n, None, True, ctx.source))
        ctx.pos = ctx.end

    def encode(self, values, out):
        out += values.get(self.name, b"")

    def default(self):
        return b""

    def size_rule(self):
        return (0, TEXT_LIMIT, 1)

    def infos(self):
        yield from (self.info, self.size_info, self.format_info, self.width_info, self.height_info)

    def emit_lua(self, gen, shown, raw):
        fields = ", ".join(lua_str(i.abbrev) for i in (self.info, self.size_info, self.format_info,
                                                        self.width_info, self.height_info))
        gen.w(f"rt.rest(c, T, {lua_str(self.name)}, F, {{ {fields} }})")


# --- per-conversation memories -----------------------------------------------------------------------------------


class Sender(Field):
    """Zero-width: this packet goes from `side` ("client" or "server"). The roles are learned from the first
    packet of the conversation that only one side sends; later packets sent the wrong way get a warning.
    Shows the sender as a generated `<proto>.sender`."""

    keeps_state = True

    size = 0

    def __init__(self, side: str):
        super().__init__("sender", "Sender")
        self.side = side

    def bind(self, b, prefix):
        bound = super().bind(b, prefix)
        bound.abbrev = f"{b.proto}.sender"
        bound.info = b.field(bound.abbrev, "Sender", "string")
        return bound

    def decode(self, ctx, parent):
        client = ctx.conv.get("client_dir")
        if client is None:
            client = ctx.conv["client_dir"] = ctx.direction if self.side == "client" else reverse_direction(ctx.direction)
        actual = "client" if ctx.direction == client else "server"
        item = parent.add(Item(self.info, actual, ctx.pos, 0, None, True, ctx.source))
        if actual != self.side:
            ctx.expert(item, "unexpected", f"Sent by the {actual}; only the {self.side} sends this packet")

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def emit_lua(self, gen, shown, raw):
        gen.w(f"rt.sender(c, T, F[{lua_str(self.abbrev)}], {lua_str(self.side)})")


class Remember(Field):
    """Zero-width: remember scope[`value`] under scope[`key`] in the conversation's table `table` (names by UUID,
    from PLAYER_JOIN and PLAYER_LIST), for `Recall` in later packets. Bounded."""

    keeps_state = True

    size = 0

    def __init__(self, table: str, key: str, value: str):
        super().__init__(f"remember_{table}", None)
        self.table, self.key, self.value = table, key, value

    def decode(self, ctx, parent):
        key, value = ctx.lookup(self.key), ctx.lookup(self.value)
        if key is not None and value is not None:
            bounded_put(ctx.conv.setdefault(self.table, {}), key, value, NAMES_LIMIT)

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def infos(self):
        return iter(())

    def emit_lua(self, gen, shown, raw):
        gen.w(f"rt.remember(c, {lua_str(self.table)}, {lua_str(self.key)}, {lua_str(self.value)}, {NAMES_LIMIT})")


class Recall(Field):
    """Zero-width: the value remembered for scope[`key`] in table `table`, as a generated string item when known.
    scope[`name`] = that value, or the key itself when unknown (for the Info column)."""

    keeps_state = True

    size = 0

    def __init__(self, name, label, *, table: str, key: str):
        super().__init__(name, label)
        self.table, self.key = table, key

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "string")

    def decode(self, ctx, parent):
        key = ctx.lookup(self.key)
        known = ctx.conv.get(self.table, {}).get(key)
        if known is not None:
            parent.add(Item(self.info, known, ctx.pos, 0, None, True, ctx.source))
        ctx.scopes[-1][self.name] = known if known is not None else key

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def emit_lua(self, gen, shown, raw):
        gen.w(f"rt.recall(c, T, F[{lua_str(self.abbrev)}], {lua_str(self.name)}, {lua_str(self.table)}, "
              f"{lua_str(self.key)})")


__all__ = [
    "EnumString",
    "JsonString",
    "Recall",
    "Remember",
    "Rest",
    "Sender",
    "SplitString",
    "StringNT",
    "UuidString",
    "is_uuid",
    "valid_utf8",
]
