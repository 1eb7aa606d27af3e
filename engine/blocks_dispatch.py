"""Which layout comes next, chosen from the packet itself:

- Dispatch: reads a type code and decodes the packet table chosen by a variant value (a preference such as the
  spec's numbering); an unknown code is an expert item and the rest is shown as data; the chosen packet names
  the Info column.
- Select: the fields that follow depend on the value of an earlier field.
- Fit: alternatives of one packet told apart by the length left (a field present in one direction only).

Each decodes here and emits its Lua twin (`emit_lua`; Dispatch's runtime is lua/rt_dispatch.lua: rt.dispatch,
rt.cached), so tshark builds the same tree.
"""
from __future__ import annotations

import copy

from .fields import Field, Packet, Struct, format_template
from .lua_literals import lua_str
from .tree import Item


INFO_KEY = "_info"          # the innermost Dispatch's Info text, kept in the outermost scope


# --- dispatch on a type code ------------------------------------------------------------------------------------------


class Dispatch(Field):
    """A type code (u8) and the packet it selects. `variants`: {variant: {code: Packet}}; the variant in use is the
    value `variant_key` looked up in the scopes (set by the protocol from a preference), else the first one. Each
    variant has its own code field (`<name>` for the first, `<name>_<variant>` for others) so that the value names
    match the numbering in use. An unknown code: expert item (`unknown` message), the rest shown as data."""

    def __init__(self, name, label, variants: dict[str, dict[int, Packet]], *, variant_key: str | None = None,
                 unknown: str = "Unknown packet id {}", code_names: dict[str, dict[int, str]] | None = None):
        super().__init__(name, label)
        self.variants, self.variant_key, self.unknown = variants, variant_key, unknown
        self.code_names = code_names or {v: {c: p.label for c, p in cases.items()} for v, cases in variants.items()}

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{b.proto}.{self.name}"
        bound.code_infos = {}
        for i, variant in enumerate(self.variants):
            abbrev = bound.abbrev if i == 0 else f"{bound.abbrev}_{variant}"
            label = self.label if i == 0 else f"{self.label} ({variant})"
            bound.code_infos[variant] = b.field(abbrev, label, "uint8", base="HEX_DEC",
                                                values=self.code_names[variant])
        bound.data_info = b.field(f"{bound.abbrev}.data", "Undecoded data", "bytes")
        bound.variants = {v: {code: p.bind(b, prefix) for code, p in cases.items()}
                          for v, cases in self.variants.items()}
        return bound

    def variant(self, ctx) -> str:
        chosen = ctx.lookup(self.variant_key) if self.variant_key else None
        return chosen if chosen in self.variants else next(iter(self.variants))

    def decode(self, ctx, parent):
        ctx.need(1, self.label, parent)
        variant = self.variant(ctx)
        code = ctx.data[ctx.pos]
        ctx.scopes[-1][self.name] = code
        item = parent.add(Item(self.code_infos[variant], code, ctx.pos, 1))
        ctx.pos += 1
        packet = self.variants[variant].get(code)
        if packet is None:
            message = self.unknown.format(code)
            ctx.expert(item, "undecoded", message)
            ctx.scopes[0][INFO_KEY] = message
            if ctx.pos < ctx.end:
                parent.add(Item(self.data_info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
                ctx.pos = ctx.end
            return
        values = ctx.scopes[-1]
        ctx.scopes[0][INFO_KEY] = packet.label
        packet.decode(ctx, parent)
        if packet.info_template:
            ctx.scopes[0][INFO_KEY] = f"{packet.label} {format_template(packet.info_template, values)}"

    def encode(self, values, out):
        variant = values.get(self.variant_key) if self.variant_key else None
        cases = self.variants.get(variant) or next(iter(self.variants.values()))
        code = values.get(self.name, 0)
        out.append(code)
        if code in cases:
            cases[code].encode(values, out)

    def size_rule(self):
        return (1, 1 << 16, 1)

    def infos(self):
        yield from self.code_infos.values()
        yield self.data_info
        seen = set()
        for cases in self.variants.values():
            for p in cases.values():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield from p.infos()

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        tables = []
        for variant, cases in self.variants.items():
            entries = []
            for code, p in cases.items():
                info = gen.template(p.info_template) if p.info_template else "nil"
                entries.append(f"[{code}] = {{ {gen.struct_body(p)}, {q(p.label)}, {info} }}")
            tables.append(f"[{q(variant)}] = {{ F[{q(self.code_infos[variant].abbrev)}], {{ {', '.join(entries)} }} }}")
        key = q(self.variant_key) if self.variant_key else "nil"
        # the tables are built once (on first use: the packet functions are defined after this one)
        w(f"rt.dispatch(c, T, {q(self.name)}, {q(self.label)}, rt.cached({q(self.abbrev)}, function() return "
          f"{{ {', '.join(tables)} }} end), {q(next(iter(self.variants)))}, {key}, {q(self.unknown)}, "
          f"F[{q(self.data_info.abbrev)}])")


# --- alternatives told apart by length -----------------------------------------------------------------------------


class Fit(Field):
    """Alternative layouts of one packet (`choices`, transparent Structs of fixed size): the one whose size is the
    length left is decoded, else the last one (Iceball's NADE_THROW has a player id server->client only)."""

    def __init__(self, name, *choices: Struct):
        super().__init__(name, None)
        self.choices = choices

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.choices = tuple(s.bind(b, prefix) for s in self.choices)
        return bound

    def pick(self, left: int) -> Struct:
        return next((s for s in self.choices if s.size == left), self.choices[-1])

    def decode(self, ctx, parent):
        self.pick(ctx.end - ctx.pos).decode(ctx, parent)

    def encode(self, values, out):
        choice = next((s for s in self.choices if all(f.name in values for f in s.fields)), self.choices[-1])
        choice.encode(values, out)

    def size_rule(self):
        sizes = [s.size for s in self.choices]
        return (min(sizes), max(sizes), 1)

    def infos(self):
        for s in self.choices:
            yield from s.infos()

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        fns = [gen.struct_body(s) for s in self.choices]
        w("do")
        w("  local left = c.stop - c.pos")
        for i, (s, fn) in enumerate(zip(self.choices[:-1], fns)):
            w(f"  {'if' if i == 0 else 'elseif'} left == {s.size} then {fn}(c, T)")
        w(f"  else {fns[-1]}(c, T) end" if len(fns) > 1 else f"  {fns[-1]}(c, T)")
        w("end")


# --- a layout chosen by an earlier field ------------------------------------------------------------------------------


class Select(Field):
    """The fields that follow depend on the value of an earlier field (Object Metadata's meta_type): one
    transparent Struct per value, `default` for the others. All cases have the same size (framing needs it)."""

    def __init__(self, on: str, cases: dict[int, Struct], default: Field):
        super().__init__(f"select_{on}", None)
        self.on, self.cases, self.default_field = on, cases, default
        sizes = {c.size for c in cases.values()} | {default.size}
        self.size = sizes.pop() if len(sizes) == 1 else None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = prefix
        bound.cases = {k: s.bind(b, prefix) for k, s in self.cases.items()}
        bound.default_field = self.default_field.bind(b, prefix)
        bound.codes = None
        return bound

    def decode(self, ctx, parent):
        self.cases.get(ctx.lookup(self.on), self.default_field).decode(ctx, parent)

    def encode(self, values, out):
        self.cases.get(values.get(self.on, 0), self.default_field).encode(values, out)

    def size_rule(self):
        rules = [s.size_rule() for s in (*self.cases.values(), self.default_field)]
        return (min(r[0] for r in rules), max(r[1] for r in rules), 1 if len(set(rules)) > 1 else 0)

    def infos(self):
        for s in self.cases.values():
            yield from s.infos()
        yield from self.default_field.infos()

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with w.block("do"):
            w(f"local v = rt.lookup(c, {lua_str(self.on)})")
            first = True
            for k, s in self.cases.items():
                w(f"{'if' if first else 'elseif'} v == {k} then")
                w.depth += 1
                w(f"{gen.struct_body(s)}(c, T)")
                w.depth -= 1
                first = False
            w("else")
            w.depth += 1
            gen.emit(self.default_field)
            w.depth -= 1
            w("end")


__all__ = ["INFO_KEY", "Dispatch", "Fit", "Select"]
