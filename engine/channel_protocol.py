"""A protocol kind: type-coded messages that ride on a message transport with channels (ENet) or on a byte stream
(TCP, SCTP), its stream framed from the tables (engine/blocks_framing.py). Iceball is the first user. The Lua twin
is lua/rt_channel_protocol.lua (rt.layer_index, rt.stream_start); `emit_lua` writes the dissector.
"""
from __future__ import annotations

from .blocks_dispatch import INFO_KEY, Dispatch
from .blocks_framing import framing_steps, lua_steps, measure
from .context import Ctx, Truncated
from .fields import Binder
from .lua_literals import lua_str
from .protocol import EXPERTS
from .tree import Item


# --- the protocol -----------------------------------------------------------------------------------------------------


class ChannelProtocol:
    """A protocol of type-coded messages that rides on a message transport with channels (ENet) or on a byte
    stream (TCP). `messages`: {channel: Struct} — the table a message on that channel starts with; key None is
    the table for a stream and for an unknown channel, whose first field is the Dispatch a stream is framed by.
    The channel comes from the layer below (`ctx.meta["channel"]`). `variant_pref`: (name, description, default,
    choices), its value is put in the scopes under that name for the Dispatch blocks to read."""

    sequence = None              # what the generic parts of the plugin generator ask of every protocol
    revision_pref = None
    own_state_only = True        # its transfer state feeds only its own items (engine.demand)

    def __init__(self, name, description, *, messages: dict, ports: dict, variant_pref: tuple,
                 stream_start: tuple[int, int] | None = None):
        self.name, self.description = name, description
        self.experts = EXPERTS
        self.ports = ports
        self.udp_ports = tuple(ports.get("udp.port", ()))
        # A stream on any port is ours when it starts with packet `code` holding printable text from `text_at`
        # to its last byte, a NUL (Iceball: the server's BASE_DIR, the first packet of every session).
        self.stream_start = stream_start
        self.heuristics = {"tcp": self.starts_stream} if stream_start else {}
        self.variant_pref = variant_pref
        b = Binder(name)
        self.info = b.field(name, description, "protocol")
        self.messages = {channel: s.bind(b, name) for channel, s in messages.items()}
        self.trailing_info = b.field(f"{name}.trailing", "Bytes after the packet", "bytes")
        self.data_info = b.field(f"{name}.data", "Undecoded data", "bytes")     # what a stream cannot frame
        self.fields = b.fields
        self.table_prefs = b.prefs           # the preferences the tables declare (fields.WhenPref)
        self.stream_dispatch = self.messages[None].fields[0]
        self.type_field = self.stream_dispatch.name          # what `-z <proto>,types` counts
        self.type_fields = tuple(dict.fromkeys(             # the type codes a message starts with, per channel
            s.fields[0].name for s in self.messages.values() if isinstance(s.fields[0], Dispatch)))
        stream_cases = next(iter(self.stream_dispatch.variants.values()))
        self.framing = {code: framing_steps(p) for code, p in stream_cases.items()}

    def preferences(self) -> dict[str, tuple[str, str, list[str]]]:
        pname, desc, default, choices = self.variant_pref
        return {pname: (desc, default, list(choices)), **self.table_prefs}

    def variant(self, prefs: dict) -> str:
        pname, _, default, _ = self.variant_pref
        return prefs.get(f"{self.name}.{pname}", default)

    def dissect(self, ctx: Ctx, prefs: dict, channel=None) -> str:
        ctx.scopes[0][self.variant_pref[0]] = self.variant(prefs)
        if channel is None:
            channel = (getattr(ctx, "meta", None) or {}).get("channel")
        message = self.messages.get(channel, self.messages[None])
        try:
            message.decode(ctx, ctx.tree)
            if ctx.pos < ctx.end:
                ctx.tree.add(Item(self.trailing_info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
                ctx.expert(ctx.tree.children[-1], "trailing", f"{ctx.end - ctx.pos} bytes after the packet")
                ctx.pos = ctx.end
        except Truncated:
            pass
        return ctx.scopes[0].get(INFO_KEY, "Malformed")

    def pdu_length(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int:
        """Length of the packet at `pos` of a stream: > 0 its length, 0 need more bytes, -1 cannot frame."""
        if pos >= len(data):
            return 0
        code = data[pos]
        packet = next(iter(self.stream_dispatch.variants.values())).get(code)
        if packet is None:
            return -1
        n = measure(self.framing[code], data, pos + 1, {self.stream_dispatch.name: code})
        return n + 1 if n > 0 or (n == 0 and not self.framing[code]) else n

    def starts_stream(self, payload: bytes) -> bool:
        """The "tcp" heuristic (twin of rt.stream_start)."""
        code, text_at = self.stream_start
        if len(payload) < text_at + 2 or payload[0] != code:
            return False
        n = self.pdu_length(payload, 0, {}, "", {})
        if n <= text_at + 1 or n > len(payload) or payload[n - 1] != 0:
            return False
        return all(0x20 <= b <= 0x7E for b in payload[text_at:n - 1])

    # --- the plugin -------------------------------------------------------------------------------------------------
    def emit_lua(self, gen, var: str) -> None:
        """The preference, the message functions per channel, the dissector (channel from rt.meta, set by the
        layer below), its registration, and the stream framing (rt.measure over the same framing steps)."""
        w = gen.w
        pname, desc, default, choices = self.variant_pref
        enum = ", ".join(f"{{ {i + 1}, {lua_str(c)}, {i} }}" for i, c in enumerate(choices))
        w(f"{var}.prefs.{pname} = Pref.enum({lua_str(desc)}, {list(choices).index(default)}, {lua_str(desc)}, "
          f"{{ {enum} }}, false)")
        fns = {channel: gen.struct_body(s) for channel, s in self.messages.items()}
        gen.flush()
        w(f"local MESSAGES = {{ {', '.join(f'[{ch}] = {fn}' for ch, fn in fns.items() if ch is not None)} }}")
        w(f"local CHOICES = {{ {', '.join(lua_str(c) for c in choices)} }}")
        with w.block(f"local function core_{self.name}(tvb, pinfo, tree, index, channel)"):
            w(f"local conv, dir = rt.conversation({lua_str(self.name)}, pinfo)")
            w(f"local T = tree:add({var}, tvb())")
            w("local c = { tvb = tvb, pos = 0, stop = tvb:len(), sc = { {} }, conv = conv, frame = pinfo.number, "
              "dir = dir, E = E, notes = {}, visited = pinfo.visited, layer = index }")
            w(f"c.sc[1][{lua_str(pname)}] = CHOICES[({var}.prefs.{pname} or 0) + 1] or {lua_str(default)}")
            w(f"local ok, err = pcall(channel ~= nil and MESSAGES[channel] or {fns[None]}, c, T)")
            with w.block("if ok and c.pos < c.stop then", None):
                w(f"local ti = T:add(F[{lua_str(self.trailing_info.abbrev)}], c.tvb(c.pos, c.stop - c.pos))")
                w("rt.expert(c, ti, \"trailing\", string.format(\"%d bytes after the packet\", c.stop - c.pos))")
            with w.block("elseif not ok and err ~= rt.TRUNC then", None):
                w("rt.expert(c, T, \"malformed\", \"Dissector error: \" .. tostring(err))")
            w("end")
            w("return c.sc[1]._info or \"Malformed\", T")
        w("-- one message handed up by a message transport (ENet: rt.meta.channel)")
        with w.block(f"local function dissect_{self.name}(tvb, pinfo, tree)"):
            w(f"pinfo.cols.protocol:set({lua_str(self.name)})")
            w(f"local index = rt.layer_index({{ conv = rt.conversation({lua_str(self.name)}, pinfo), "
              "frame = pinfo.number, visited = pinfo.visited })")
            w(f"local info = core_{self.name}(tvb, pinfo, tree, index, rt.meta and rt.meta.channel)")
            w("if index > 1 then pinfo.cols.info:append(\", \" .. info) else pinfo.cols.info:set(info) end")
            w("return tvb:len()")
        self.emit_stream(gen, var)            # defines the Proto's dissector: wslua adds only a Proto that has one
        gen.register_tables(self, var)
        w()

    def emit_stream(self, gen, var: str) -> None:
        """The PDU length function (twin of pdu_length) and the registration on the stream tables."""
        w = gen.w

        w("local FRAMING = {}")
        for code, steps in self.framing.items():
            w(f"FRAMING[{code}] = {lua_steps(steps)}")
        with w.block(f"local function pdu_len_{self.name}(tvb, offset)"):
            w("if offset >= tvb:len() then return 0 end")
            w("local code = tvb(offset, 1):uint()")
            w("local steps = FRAMING[code]")
            w("if not steps then return -1 end")
            w(f"local n = rt.measure(steps, tvb, offset + 1, {{ [{lua_str(self.stream_dispatch.name)}] = code }})")
            w("if n > 0 or (n == 0 and #steps == 0) then return n + 1 end")
            w("return n")
        w(f"local stream_{self.name} = rt.stream_dissector({var}, {lua_str(self.name)}, "
          f"function(tvb, pinfo, offset, conv) return pdu_len_{self.name}(tvb, offset) end, "
          f"function(tvb, pinfo, tree, conv, index) return core_{self.name}(tvb, pinfo, tree, index, nil) end, "
          f"{{ data = F[{lua_str(self.data_info.abbrev)}], E = E }})")
        w("-- one Proto, two ways in: a byte stream (TCP, SCTP: port types 2, 1) or a message (ENet sets rt.meta;")
        w("-- a datagram by decode-as)")
        with w.block(f"function {var}.dissector(tvb, pinfo, tree)"):
            w("if rt.meta == nil and (pinfo.port_type == 2 or pinfo.port_type == 1) then")
            w(f"  return stream_{self.name}(tvb, pinfo, tree)")
            w("end")
            w(f"return dissect_{self.name}(tvb, pinfo, tree)")
        w(f"pcall(function() DissectorTable.get(\"udp.port\"):add_for_decode_as({var}) end)")
        ports = {t: ", ".join(str(k) for k in self.ports.get(t, ())) for t in ("tcp.port", "sctp.port")}
        w(f"rt.stream_register({var}, {{ {ports['tcp.port']} }}, {{ {ports['sctp.port']} }})")
        if self.stream_start:
            code, text_at = self.stream_start
            with w.block(f"local function heur_{self.name}(tvb, pinfo, tree)"):
                # (a segment an ICMP error quotes: no, as rt.stream_dissector says)
                w(f"if pinfo.in_error_pkt or not rt.stream_start(tvb, pdu_len_{self.name}, {code}, {text_at}) then"
                  " return false end")
                w(f"pinfo.conversation = {var}            -- later segments of this connection: ours")
                w(f"stream_{self.name}(tvb, pinfo, tree)")
                w("return true")
            w(f"{var}:register_heuristic(\"tcp\", heur_{self.name})")

    # --- tests and capture making ---------------------------------------------------------------------------------
    def decode_values(self, payload: bytes, prefs: dict | None = None, channel=None) -> tuple[dict, Item]:
        """Decode one message on its own (fresh conversation), as if it came on `channel`: values and tree."""
        tree = Item(self.info, self.description, 0, len(payload), self.description)
        ctx = Ctx(payload, 0, len(payload), tree, self, {}, "a>b", 1, [])
        ctx.prefs = prefs or {}
        self.dissect(ctx, ctx.prefs, channel)
        return ctx.scopes[0], tree

    def encode(self, values: dict, channel=None) -> bytes:
        out = bytearray()
        self.messages.get(channel, self.messages[None]).encode(values, out)
        return bytes(out)


__all__ = ["ChannelProtocol"]
