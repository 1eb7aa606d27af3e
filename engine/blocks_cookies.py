"""Transfers reassembled by cookie, per direction of a stream (Rutentoy's messages and textures): text whose
chunks concatenate until a final flag, with text commands parsed (and conversation state they set); images
whose chunks concatenate until a short one, checked as QOI and hashed (xxHash32) against an announced digest.
Bounded: pending transfers per direction, bytes per transfer. Lua twins in lua/rt_cookies.lua."""
from __future__ import annotations

import copy
import struct

import xxhash

from .context import bounded_put
from .fields import Field
from .lua_literals import lua_str
from .strings import wire_string
from .tree import DataSource, Item


# --- text reassembled by cookie, with text commands ------------------------------------------------------------------


class Arg:
    """One argument of a text command: a string, or an unsigned number (`uint32`)."""

    def __init__(self, name, label, kind="string"):
        self.name, self.label, self.kind = name, label, kind
        self.info = None


class Command:
    """A text command "WORD args": args split at `sep` (at most `maxsplit` times; -1: no limit), given to
    `args` in order (missing ones are left out, extra ones ignored). `alone`: the label when there are no args
    (a request). `sets`: (arg, value, flag): when arg == value, conv flag `flag` is set for the peer."""

    def __init__(self, word, label, args=(), *, sep=" ", maxsplit=-1, alone=None, sets=None):
        self.word, self.label, self.args, self.sep, self.maxsplit = word, label, args, sep, maxsplit
        self.alone, self.sets = alone, sets


def split_command(text: bytes, cmd: Command) -> list[tuple[int, int]]:
    """(start, end) byte spans of the arguments of `cmd` in `text` (which starts with the word)."""
    pos = len(cmd.word) + 1
    if pos > len(text):
        return []
    spans, sep, count = [], cmd.sep.encode(), 0
    while True:
        if cmd.maxsplit >= 0 and count >= cmd.maxsplit:
            spans.append((pos, len(text)))
            break
        nxt = text.find(sep, pos)
        if nxt < 0:
            spans.append((pos, len(text)))
            break
        spans.append((pos, nxt))
        pos, count = nxt + len(sep), count + 1
    if spans and spans[-1][0] == spans[-1][1] and len(spans) > 1:     # "a;b;" ends with the separator
        spans.pop()
    return spans


ROLE = "_role"       # scope value the stream protocol sets: "c2s" or "s2c" (which side sent this PDU)


def until_nul(raw: bytes) -> bytes:
    """A text as a string field shows it: up to its first NUL (Wireshark's strings end there)."""
    return raw.split(b"\0", 1)[0]


def peer(role: str) -> str:
    return "s2c" if role == "c2s" else "c2s"


def collect_piece(ctx, item, kind: str, key, piece: bytes, last: bool, limit: int, pending: int, noun: str):
    """Add a piece to the transfer `key` of this direction (conv[kind][role], at most `pending` in flight): its
    state {parts, frames, size} when `last` completes it, else None. A transfer over `limit` bytes is dropped
    (one expert item) and its later pieces ignored until its last one (the twin of rt.collect_piece)."""
    role = ctx.lookup(ROLE) or "c2s"
    table = ctx.conv.setdefault(kind, {}).setdefault(role, {})
    state = table.pop(key, None) or {"parts": [], "frames": [], "size": 0}
    if state["size"] >= 0:
        state["parts"].append(piece)
        state["size"] += len(piece)
        if ctx.frame not in state["frames"]:
            state["frames"].append(ctx.frame)
        if state["size"] > limit:
            ctx.expert(item, "reassembly", f"{noun} {key} exceeds {limit} bytes: dropped")
            state = {"parts": [], "frames": [], "size": -1}
    if not last:
        bounded_put(table, key, state, pending)
        return None
    return state if state["size"] >= 0 else None


class TextReassembly(Field):
    """A fixed-size chunk of a text message: chunks with the same `key` (per direction) concatenate, each
    without its 0x00 padding, until the chunk whose `final` flag is set. The frame of the final chunk shows the
    whole text (a new data source; UTF-8 split inside a code point between chunks comes out whole) and, on
    `command_channel`, the text command parsed by `commands`. At most `limit` bytes and `pending` messages per
    direction are kept: a message that never ends is dropped with an expert item."""

    keeps_state = True

    def __init__(self, name, label, *, size, key, final, channel, command_channel, commands, limit=16384,
                 pending=64):
        super().__init__(name, label)
        self.size, self.key, self.final, self.channel = size, key, final, channel
        self.command_channel, self.commands, self.limit, self.pending = command_channel, commands, limit, pending
        self.codes = None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "bytes")
        bound.r_info = b.field(f"{prefix}.reassembled", "Reassembled message", "none")
        bound.r_frame = b.field(f"{prefix}.reassembled.frame", "Chunk in frame", "uint32")
        bound.r_count = b.field(f"{prefix}.reassembled.chunks", "Chunks", "uint32")
        bound.r_length = b.field(f"{prefix}.reassembled.length", "Length", "uint32")
        bound.text_info = b.field(f"{prefix}.text", "Text", "string")
        bound.chunk_text = b.field(f"{bound.abbrev}.text", "Chunk text", "string")
        top = f"{b.proto}.ipc"
        bound.cmd_info = b.field(f"{top}.command", "IPC command", "string")
        bound.commands = [copy.copy(c) for c in self.commands]
        for c in bound.commands:
            c.args = [copy.copy(a) for a in c.args]
            for a in c.args:
                a.info = b.field(f"{top}.{a.name}", a.label, a.kind)
        return bound

    def decode(self, ctx, parent):
        ctx.need(self.size, self.label, parent)
        start = ctx.pos
        chunk = ctx.data[start:start + self.size]
        ctx.scopes[-1][self.name] = chunk
        item = parent.add(Item(self.info, chunk, start, self.size, None, False, ctx.source))
        ctx.pos += self.size
        shown = until_nul(chunk)
        if shown:     # this chunk alone as text: a code point split across chunks shows as U+FFFD, as tshark
            item.add(Item(self.chunk_text, wire_string(shown), start, len(shown), None, False, ctx.source))
        self.reassemble(ctx, item, chunk.rstrip(b"\0"))

    def scan(self, ctx):
        """NULL tree (engine.demand): what the chunk leaves for later packets (the text collected, and once whole
        its scope value and its command's arguments and flags), no items; experts go nowhere."""
        spare = Item(None)
        ctx.need(self.size, self.label, spare)
        chunk = ctx.data[ctx.pos:ctx.pos + self.size]
        ctx.scopes[-1][self.name] = chunk
        ctx.pos += self.size
        self.reassemble(ctx, spare, chunk.rstrip(b"\0"), shown=False)

    def reassemble(self, ctx, item, piece, shown: bool = True):
        last = bool(ctx.lookup(self.final))
        state = collect_piece(ctx, item, "texts", ctx.lookup(self.key), piece, last, self.limit, self.pending,
                              "Message")
        if state is None:
            return
        text = b"".join(state["parts"])
        if shown:
            self.show(ctx, item, text, state)
            return
        ctx.scopes[-1]["text"] = until_nul(text).decode("utf-8", "replace")   # (as show(), "" for no text)
        if text and ctx.lookup(self.channel) == self.command_channel:
            self.command(ctx, None, text, 0)

    def show(self, ctx, item, text: bytes, state) -> None:
        at, at_src = ctx.unranged(item)          # the Lua adds these with no byte range
        node = item.add(Item(self.r_info, None, at, 0, "Reassembled message", True, at_src))
        for frame in state["frames"]:
            node.add(Item(self.r_frame, frame, at, 0, None, True, at_src))
        node.add(Item(self.r_count, len(state["parts"]), at, 0, None, True, at_src))
        node.add(Item(self.r_length, len(text), at, 0, None, True, at_src))
        if not text:              # Wireshark makes no empty tvb: the plugin adds the empty text with no range
            node.add(Item(self.text_info, "", at, 0, None, False, at_src))
            ctx.scopes[-1]["text"] = ""
            ctx.notes.append('""')
            return
        src = len(ctx.sources)
        ctx.sources.append(DataSource("Reassembled message", text))
        shown = until_nul(text)
        value = shown.decode("utf-8", "replace")
        node.add(Item(self.text_info, value, 0, len(shown), None, False, src))
        ctx.scopes[-1]["text"] = value
        ctx.notes.append(f'"{value}"')
        if ctx.lookup(self.channel) == self.command_channel:
            self.command(ctx, node, text, src)

    def command(self, ctx, node, text: bytes, src: int) -> None:
        """The text command's items under `node` and what it keeps per direction (its arguments, the flag it
        sets); with node None (a NULL tree) only what it keeps."""
        word = text.split(b" ", 1)[0]
        cmd = next((c for c in self.commands if c.word.encode() == word), None)
        if cmd is None:
            return
        spans = split_command(text, cmd)
        label = cmd.alone if not spans and cmd.alone else cmd.label
        it = None if node is None else \
            node.add(Item(self.cmd_info, cmd.word, 0, len(word), f"IPC command: {label}", False, src))
        args = {}
        for a, (s, e) in zip(cmd.args, spans):
            raw = text[s:e]
            if a.kind == "string":
                raw = until_nul(raw)
                v, e = raw.decode("utf-8", "replace"), s + len(raw)
            elif raw.strip(b" \t\r\n").isdigit() and int(raw) < 1 << 32:      # "HAVETEX 0\n" too
                v = int(raw)
            else:
                if it is not None:
                    shown = until_nul(raw).decode("utf-8", "replace")
                    ctx.expert(it, "malformed", f"{a.label}: '{shown}' is not a number")
                continue
            args[a.name] = v
            if it is not None:
                it.add(Item(a.info, v, s, e - s, None, False, src))
        role = ctx.lookup(ROLE) or "c2s"
        ctx.conv.setdefault("ipc", {}).setdefault(role, {})[cmd.word] = args
        if it is not None:
            ctx.notes.append(label)
        if cmd.sets is not None:
            arg, value, flag = cmd.sets
            if args.get(arg) == value:
                ctx.conv.setdefault("flags", {})[f"{flag}:{peer(role)}"] = True

    def size_rule(self):
        return (self.size, self.size, 0)

    def encode(self, values, out):
        out += bytes(values.get(self.name, b""))[:self.size].ljust(self.size, b"\0")

    def infos(self):
        yield from (self.info, self.chunk_text, self.r_info, self.r_frame, self.r_count, self.r_length,
                    self.text_info, self.cmd_info)
        for c in self.commands:
            for a in c.args:
                yield a.info

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        cmds = []
        for c in self.commands:
            args = ", ".join(f"{{ name = {lua_str(a.name)}, label = {lua_str(a.label)}, kind = {lua_str(a.kind)}, "
                             f"f = F[{lua_str(a.info.abbrev)}] }}" for a in c.args)
            sets = (f"{{ {lua_str(c.sets[0])}, {c.sets[1]}, {lua_str(c.sets[2])} }}" if c.sets else "nil")
            cmds.append(f"{{ word = {lua_str(c.word)}, label = {lua_str(c.label)}, alone = "
                        f"{lua_str(c.alone) if c.alone else 'nil'}, sep = {lua_str(c.sep)}, maxsplit = {c.maxsplit}, "
                        f"sets = {sets}, args = {{ {args} }} }}")
        spec = (f"{{ size = {self.size}, key = {lua_str(self.key)}, final = {lua_str(self.final)}, "
                f"channel = {lua_str(self.channel)}, command_channel = {self.command_channel}, limit = {self.limit}, "
                f"pending = {self.pending}, f = F[{lua_str(self.abbrev)}], r = F[{lua_str(self.r_info.abbrev)}], "
                f"frame = F[{lua_str(self.r_frame.abbrev)}], chunks = F[{lua_str(self.r_count.abbrev)}], "
                f"length = F[{lua_str(self.r_length.abbrev)}], text = F[{lua_str(self.text_info.abbrev)}], "
                f"cmd = F[{lua_str(self.cmd_info.abbrev)}], ctext = F[{lua_str(self.chunk_text.abbrev)}], "
                f"name = {lua_str(self.name)}, "
                f"label = {lua_str(self.label)}, commands = {{ {', '.join(cmds)} }} }}")
        w(f"rt.text_reassembly(c, T, {spec})")


# --- images reassembled by cookie --------------------------------------------------------------------------------


QOI_HEADER = struct.Struct(">4sIIBB")
QOI_END = b"\0" * 7 + b"\1"


def qoi_walk(data: bytes, width: int, height: int) -> str | None:
    """Walk the QOI chunk stream: None when it holds exactly width*height pixels followed by the end marker,
    else what is wrong (the Lua twin rt.qoi_walk says the same)."""
    pos, pixels, want, end = 14, 0, width * height, len(data) - 8
    while pixels < want and pos < end:
        b = data[pos]
        if b == 0xFE:
            pos, pixels = pos + 4, pixels + 1
        elif b == 0xFF:
            pos, pixels = pos + 5, pixels + 1
        elif b >> 6 == 3:
            pos, pixels = pos + 1, pixels + (b & 0x3F) + 1
        elif b >> 6 == 2:
            pos, pixels = pos + 2, pixels + 1
        else:
            pos, pixels = pos + 1, pixels + 1
    if pixels < want:
        return f"QOI data ends after {pixels} of {want} pixels"
    if pixels > want:
        return f"QOI run overshoots: {pixels} pixels for {want}"
    if data[pos:] != QOI_END:
        return f"QOI stream does not end with the end marker at byte {pos} ({len(data) - pos} bytes left)"
    return None


def same_digest(announced: str, digest: str) -> bool:
    """The announced hex digest names this one (any case, leading zeros optional)."""
    text = announced.strip(" \t\n\v\f\r").lower()
    return 0 < len(text) <= 8 and all(c in "0123456789abcdef" for c in text) and int(text, 16) == int(digest, 16)


class ImageReassembly(Field):
    """A chunk of an image sent in pieces (Rutentoy's texture chunks): `length` bytes of a `size`-byte area;
    pieces with the same `key` (per direction) concatenate, a piece shorter than the area ends the image. The
    final frame shows the QOI image: header (size, channels, colour space) checked against `max_side` and
    powers of two, the pixel stream walked and decoded, its xxHash32 (seed 0) matched against the digest
    announced earlier on the connection by `digest_from` (command, arg) from the same side. `clears`: conv
    flag ended (for this side) by the last chunk."""

    keeps_state = True

    def __init__(self, name, label, *, size, key, length, max_side, digest_from, clears, pending=16):
        super().__init__(name, label)
        self.size, self.key, self.length, self.max_side = size, key, length, max_side
        self.digest_from, self.clears, self.pending = digest_from, clears, pending
        self.limit = max_side * max_side * 5 + 14 + 8 + 1024    # the largest valid QOI, plus one chunk
        self.codes = None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "bytes")
        fields = [("r", "", "Reassembled image", "none"), ("frame", ".frame", "Chunk in frame", "uint32"),
                  ("length", ".length", "Length", "uint32"), ("magic", ".magic", "Magic", "string"),
                  ("width", ".width", "Width", "uint32"), ("height", ".height", "Height", "uint32"),
                  ("channels", ".channels", "Channels", "uint8"), ("colorspace", ".colorspace", "Colour space",
                                                                                 "uint8"),
                  ("hash", ".xxh32", "xxHash32", "string"), ("announced", ".announced", "Announced digest",
                                                                 "string"),
                  ("match", ".digest_ok", "Digest matches", "bool"), ("valid", ".valid", "Decodes", "bool")]
        bound.r = {}
        for key, suffix, label, kind in fields:
            values = {3: "RGB", 4: "RGBA"} if key == "channels" else \
                {0: "sRGB with linear alpha", 1: "all channels linear"} if key == "colorspace" else None
            bound.r[key] = b.field(f"{prefix}.image{suffix}", label, kind, values=values)
        return bound

    def decode(self, ctx, parent):
        ctx.need(self.size, self.label, parent)
        start = ctx.pos
        n = ctx.lookup(self.length)
        item = parent.add(Item(self.info, ctx.data[start:start + self.size], start, self.size, None, False,
                               ctx.source))
        ctx.pos += self.size
        if n > self.size:
            ctx.expert(item, "malformed", f"{self.label}: {n} bytes used of a {self.size}-byte chunk")
            n = self.size
        self.reassemble(ctx, item, ctx.data[start:start + n], n < self.size)

    def scan(self, ctx):
        """NULL tree (engine.demand): the piece collected and the flag the last one clears; a whole image is
        let go unchecked (its hash and QOI walk are items only); experts go nowhere."""
        spare = Item(None)
        ctx.need(self.size, self.label, spare)
        n, start = min(ctx.lookup(self.length), self.size), ctx.pos
        ctx.pos += self.size
        self.reassemble(ctx, spare, ctx.data[start:start + n], n < self.size, shown=False)

    def reassemble(self, ctx, item, piece, last, shown: bool = True):
        role = ctx.lookup(ROLE) or "c2s"
        if last:
            ctx.conv.setdefault("flags", {})[f"{self.clears}:{role}"] = False
        state = collect_piece(ctx, item, "images", ctx.lookup(self.key), piece, last, self.limit, self.pending,
                              "Image")
        if state is not None and shown:
            self.show(ctx, item, b"".join(state["parts"]), state["frames"], role)

    def show(self, ctx, item, data, frames, role):
        r = self.r
        at, at_src = ctx.unranged(item)          # the Lua adds these with no byte range
        node = item.add(Item(r["r"], None, at, 0, "Reassembled image", True, at_src))
        for frame in frames:
            node.add(Item(r["frame"], frame, at, 0, None, True, at_src))
        node.add(Item(r["length"], len(data), at, 0, None, True, at_src))
        src = len(ctx.sources)
        ctx.sources.append(DataSource("Reassembled image", data))
        ctx.notes.append(f"[image {len(data)} bytes]")
        digest = xxhash.xxh32_hexdigest(data)
        node.add(Item(r["hash"], digest, 0, len(data), None, True, src))
        announced = ctx.conv.get("ipc", {}).get(role, {}).get(self.digest_from[0], {}).get(self.digest_from[1])
        if announced is not None:
            node.add(Item(r["announced"], announced, 0, 0, None, True, src))
            same = same_digest(announced, digest)
            ok = node.add(Item(r["match"], same, 0, 0, None, True, src))
            if not same:
                ctx.expert(ok, "sequence", f"xxHash32 {digest} does not match the announced digest {announced}")
        problem = self.check(ctx, node, data, src)
        valid = node.add(Item(r["valid"], problem is None, 0, len(data), None, True, src))
        if problem is not None:
            ctx.expert(valid, "malformed", problem)

    def check(self, ctx, node, data, src) -> str | None:
        """Header items, then what is wrong with the image (None: a valid QOI within the spec's limits)."""
        r = self.r
        if len(data) < QOI_HEADER.size + 8:
            return f"Image of {len(data)} bytes is too short for QOI"
        magic, width, height, channels, colorspace = QOI_HEADER.unpack_from(data)
        shown = magic.split(b"\0", 1)[0].decode("ascii", "replace")     # as Wireshark reads an ASCII field
        node.add(Item(r["magic"], shown, 0, 4, None, False, src))
        w_it = node.add(Item(r["width"], width, 4, 4, None, False, src))
        h_it = node.add(Item(r["height"], height, 8, 4, None, False, src))
        node.add(Item(r["channels"], channels, 12, 1, None, False, src))
        node.add(Item(r["colorspace"], colorspace, 13, 1, None, False, src))
        if magic != b"qoif":
            return "Not a QOI image (magic is not qoif)"
        for it, side in ((w_it, width), (h_it, height)):
            if side == 0 or side & (side - 1) or side > self.max_side:
                ctx.expert(it, "malformed", f"Side {side} is not a power of two up to {self.max_side}")
        if width == 0 or height == 0 or width > self.max_side or height > self.max_side:
            return f"Texture {width}x{height} is outside the spec's limits"
        if channels not in (3, 4) or colorspace not in (0, 1):
            return f"Bad QOI header: {channels} channels, colour space {colorspace}"
        # qoi_walk follows every op to the last pixel and the end marker (tests/test_rutentoy.py checks it agrees
        # with the qoi library, which is a test dependency only: it pulls in numpy)
        return qoi_walk(data, width, height)

    def size_rule(self):
        return (self.size, self.size, 0)

    def encode(self, values, out):
        out += bytes(values.get(self.name, b""))[:self.size].ljust(self.size, b"\0")

    def infos(self):
        yield self.info
        yield from self.r.values()

    def emit_lua(self, gen, shown, raw):
        fs = gen.field_refs(self.r)
        spec = (f"{{ size = {self.size}, key = {lua_str(self.key)}, len_field = {lua_str(self.length)}, "
                f"max_side = {self.max_side}, limit = {self.limit}, pending = {self.pending}, "
                f"digest_cmd = {lua_str(self.digest_from[0])}, digest_arg = {lua_str(self.digest_from[1])}, "
                f"clears = {lua_str(self.clears)}, f = F[{lua_str(self.abbrev)}], label = {lua_str(self.label)}, "
                f"{fs} }}")
        gen.w(f"rt.image_reassembly(c, T, {spec})")


__all__ = ["ROLE", "Arg", "Command", "ImageReassembly", "TextReassembly", "collect_piece", "qoi_walk",
           "same_digest", "split_command", "until_nul"]
