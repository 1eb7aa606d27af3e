"""A protocol: its header and packet tables bound into a decoder, its registration (ports, heuristic,
preferences), and the per-conversation analysis every datagram protocol can ask for (revision memory,
sequence analysis, remembered packets)."""
from __future__ import annotations

from .context import Ctx, Truncated, bounded_put
from .fields import Binder, Struct, Switch, accepts, format_template
from .value_keys import RecordingDict, check
from .tree import (CHAT, ERROR, MALFORMED, NOTE, PROTOCOL, REASSEMBLE, SEQUENCE, UNDECODED, WARN, FieldInfo,
                   Item)

REMEMBER_LIMIT = 1024      # remembered packets per conversation and packet type (Chunk Begins in flight)
SEEN_WINDOW = 2048         # sequence numbers remembered behind the last one, per direction

# The expert kinds every protocol registers: kind -> (group, severity). Abbrev: <proto>.<kind>.
EXPERTS = {
    "malformed": (MALFORMED, ERROR),
    "unexpected": (PROTOCOL, WARN),
    "undecoded": (UNDECODED, WARN),
    "sequence": (SEQUENCE, NOTE),
    "reassembly": (REASSEMBLE, WARN),
    "trailing": (PROTOCOL, CHAT),
}


def classify_sequence_note(message: str) -> tuple[str, int] | None:
    """The kind of a sequence expert note written by Protocol.analyse_sequence (and rt.sequence_step):
    ("lost", n), ("duplicate", 1) or ("out_of_order", 1). Statistics read notes back through this."""
    if message.startswith("Duplicate of seq "):
        return ("duplicate", 1)
    if message.startswith("Out of order: "):
        return ("out_of_order", 1)
    count, sep, _ = message.partition(" lost before seq ")
    if sep and count.isdigit():
        return ("lost", int(count))
    return None


class Protocol:
    # Its dissection keeps state that only its own items read (no hand-off, no framing state): with nothing
    # asking for its fields, the dispatcher shows the layer without dissecting it (engine.demand)
    own_state_only = True

    def __init__(self, name, description, *, header: Struct, body: dict[str, Switch], revision_pref=None,
                 udp_ports=(), ports=None, heuristic=None, sequence=None, info="seq={seq} ack={ack}"):
        self.name, self.description = name, description
        self.experts = EXPERTS
        self.udp_ports = tuple(udp_ports)
        # Registration, as Wireshark's dissector tables: table name -> keys ("udp.port", "tcp.port", "ws.port",
        # "enet.connect_data", ...), and heuristic lists -> match function (bytes -> bool).
        self.ports: dict[str, tuple] = {"udp.port": self.udp_ports, **(ports or {})}
        self.heuristic = heuristic           # (header field, value): the first bytes must hold this value
        self.heuristics: dict = {"udp": self.heuristic_match} if heuristic else {}
        self.sequence = sequence             # (field, bits): per-direction sequence analysis
        self.info_template = info
        self.revision_pref = revision_pref   # (pref name, description, default)
        b = Binder(name)
        self.info = b.field(name, description, "protocol")
        self.header = header.bind(b, name)
        self.revisions = list(body)
        self.body = {rev: switch.bind(b, name) for rev, switch in body.items()}
        self.revision_info = b.field(f"{name}.revision", "Revision", "string")
        self.trailing_info = b.field(f"{name}.trailing_padding", "Trailing padding", "bytes")
        self.data_info = b.field(f"{name}.data", "Undecoded data", "bytes")
        self.fields: dict[str, FieldInfo] = b.fields
        # what a run asking only for these reads of a datagram: its header (engine.demand)
        self.header_abbrevs = frozenset([*(i.abbrev for i in self.header.infos()), self.revision_info.abbrev])
        self.table_prefs = b.prefs           # the preferences the tables declare (fields.WhenPref)
        self.type_field = next(iter(body.values())).on
        # Which revisions a (type, payload length) fits: the size rules come from the tables themselves.
        self.rules = {rev: {code: p.size_rule() for code, p in sw.cases.items()} for rev, sw in self.body.items()}

    # --- registration facts ------------------------------------------------------------------------------------
    def preferences(self) -> dict[str, tuple[str, str, list[str]]]:
        prefs = {}
        if self.revision_pref:
            pname, desc, default = self.revision_pref
            prefs[pname] = (desc, default, ["auto", *self.revisions])
        return {**prefs, **self.table_prefs}

    def heuristic_match(self, payload: bytes) -> bool:
        if not self.heuristic or len(payload) < self.header.size if self.header.size else False:
            return False
        field, value = self.heuristic
        run = self.header.steps[0]
        for f, offset, index, count in run.spans:
            if f.name == field:
                if len(payload) < offset + f.size:
                    return False
                return run.fmt.unpack_from(payload.ljust(run.size, b"\0"), 0)[index] == value
        return False

    # --- encode (tests and capture making) ------------------------------------------------------------------------
    def encode(self, values: dict, revision: str | None = None, pad_to: int | None = None, *,
               strict: bool = False, unknown: str = "error") -> bytes:
        """Wire bytes of one datagram from field values (missing fields take defaults: the expected tag, 0, "").
        values: header and packet fields flat ({"seq": 1, "type": 1, "name": "bob"}), nested structs as dicts
        ({"state": {"velocity": (1.0, 0.0, 0.0)}}), arrays as lists of element dicts. A key this message does not
        have raises engine.value_keys.EncodeError (unknown="ignore": skipped, for a superset of values); with
        strict=True a field not given does too."""
        values = RecordingDict(values)
        out = bytearray()
        self.header.encode(values, out)
        packet = self.body[revision or self.revisions[0]].cases.get(values.get(self.type_field, 0))
        if packet is not None:
            packet.encode(values, out)
        check(values, f"{self.name} {packet.name if packet is not None else 'message'}", strict,
              unknown == "error")
        if pad_to is not None and len(out) < pad_to:
            out += bytes(pad_to - len(out))
        return bytes(out)

    def decode_values(self, payload: bytes, prefs: dict | None = None) -> tuple[dict, Item]:
        """Decode one datagram on its own (fresh conversation): its values and its tree. For tests and scripts."""
        tree = Item(self.info, self.description, 0, len(payload), self.description)
        ctx = Ctx(payload, 0, len(payload), tree, self, {}, "a>b", 1, [])
        ctx.prefs = prefs or {}
        self.dissect(ctx, ctx.prefs)
        return ctx.scopes[0], tree

    # --- decode ---------------------------------------------------------------------------------------------------
    def pick_revision(self, conv: dict, code: int, length: int, pref: str) -> str:
        if pref != "auto":
            return pref
        fits = [rev for rev in self.revisions if code in self.rules[rev] and accepts(self.rules[rev][code], length)]
        if len(fits) == 1:
            conv["revision"] = fits[0]
            return fits[0]
        return conv.get("revision", self.revisions[0])

    def dissect(self, ctx: Ctx, prefs: dict):
        """Decode one datagram into ctx.tree; return the Info column text, or a function making it (only the
        summary prints it: JSON and -V runs never pay for formatting it)."""
        tree = ctx.tree
        try:
            self.header.decode(ctx, tree)
        except Truncated:
            return "Malformed (truncated header)"
        values = ctx.values
        if self.sequence:
            self.analyse_sequence(ctx, values[self.sequence[0]])
        code = values[self.type_field]
        pref = prefs.get(f"{self.name}.{self.revision_pref[0]}", self.revision_pref[2]) if self.revision_pref \
            else self.revisions[0]
        revision = self.pick_revision(ctx.conv, code, ctx.end - ctx.pos, pref)
        if len(self.revisions) > 1:
            tree.add(Item(self.revision_info, revision, ctx.pos, 0, f"Revision: {revision}", True))
        if ctx.demand is not None and ctx.demand <= self.header_abbrevs and self.own_state_only:
            return ""            # nothing reads the body, and its state feeds only the body's own items
        packet = self.body[revision].cases.get(code)
        if packet is None:
            ctx.expert(tree, "undecoded", f"Unknown packet type {code}")
            self.rest(ctx, tree, self.data_info)
            return f"Unknown type {code} " + format_template(self.info_template, values)
        try:
            packet.decode(ctx, tree)
            if ctx.pos < ctx.end:
                self.trailing(ctx, tree)
            if packet.remember is not None:
                kept = ctx.conv.setdefault("remember", {}).setdefault(packet.name, {})
                bounded_put(kept, values[packet.remember], dict(values), REMEMBER_LIMIT)
        except Truncated:
            pass
        return lambda: self.info_text(packet, values, ctx.notes)

    def info_text(self, packet, values: dict, notes: list[str]) -> str:
        parts = [packet.label, format_template(self.info_template, values)]
        if packet.info_template:
            parts.append(format_template(packet.info_template, values))
        return " ".join(p for p in [*parts, *notes] if p)

    def rest(self, ctx: Ctx, tree: Item, info: FieldInfo) -> None:
        if ctx.pos < ctx.end:
            tree.add(Item(info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
            ctx.pos = ctx.end

    def trailing(self, ctx: Ctx, tree: Item) -> None:
        """Bytes after the last field: zero padding to the maximum length is normal; anything else is noted."""
        start = ctx.pos
        self.rest(ctx, tree, self.trailing_info)
        if ctx.data.count(0, start, ctx.end) != ctx.end - start:
            ctx.expert(tree.children[-1], "trailing", f"{ctx.end - start} trailing bytes are not zero padding")

    def analyse_sequence(self, ctx: Ctx, seq: int) -> None:
        """Per direction: lost (a gap), duplicate (seen before), out of order (behind, not seen)."""
        modulo = 1 << self.sequence[1]
        state = ctx.conv.setdefault("seq", {}).setdefault(ctx.direction, {"last": None, "seen": {}})
        abbrev = f"{self.name}.{self.sequence[0]}"       # a header field: a direct child of the protocol item
        item = next((c for c in ctx.tree.children if c.field is not None and c.field.abbrev == abbrev), ctx.tree)
        last, seen = state["last"], state["seen"]
        if last is not None:
            delta = (seq - last) % modulo
            if delta == 0 or (delta >= modulo // 2 and seq in seen):
                ctx.expert(item, "sequence", f"Duplicate of seq {seq} (frame {seen.get(seq, '?')})")
                return
            if delta >= modulo // 2:
                ctx.expert(item, "sequence", f"Out of order: seq {seq} after seq {last}")
            elif delta > 1:
                ctx.expert(item, "sequence", f"{delta - 1} lost before seq {seq}")
                state["last"] = seq
            else:
                state["last"] = seq
        else:
            state["last"] = seq
        seen[seq] = ctx.frame
        if len(seen) > 2 * SEEN_WINDOW:     # keep the window behind the last seq: memory stays bounded
            last = state["last"]
            state["seen"] = {s: f for s, f in seen.items() if (last - s) % modulo < SEEN_WINDOW}
