"""The field-table language: the words a dissector table is written in.

A table is a tree of *descriptions* (U32LE("seq", ...), Struct(...), Switch(...)). `bind()` turns a description
into a *bound* copy that knows its abbrev (`blank.seq`) and its registered FieldInfo; a bound Struct merges runs
of fixed-size fields into one precompiled `struct.Struct`, so the hot loop does one unpack per run, not one per
field (dpkt's `__hdr__` idea). Every bound field can:

- `take(ctx, parent, offset, raw)` (fixed fields: turn unpacked values into tree items) or `decode(ctx, parent)`
  (variable fields);
- `encode(values, out)`: write its wire bytes from a values dict (tests build packets with it);
- `size_rule()`: (min, max, step) of its wire size, used to recognise revisions from packet lengths;
- and it is read by the Lua backend (engine/lua_backend.py), which emits the same decode for tshark.

Building blocks that a table cannot spell out (the ack bitmap, packn, the quaternion, chunk reassembly) are field
classes in engine/blocks_<concept>.py, each implemented once there and once in lua/rt_<concept>.lua.
"""
from __future__ import annotations

import copy
import struct
from functools import cache
from math import gcd

from .context import Ctx, Truncated
from .strings import wire_string
from .tree import INTEGER_TYPES, FieldInfo, Item

LE, BE = "<", ">"


class Binder:
    """Collects the registered fields of one protocol while a table is bound; one FieldInfo per abbrev."""

    def __init__(self, proto: str):
        self.proto = proto
        self.fields: dict[str, FieldInfo] = {}
        # (id(struct), abbrev) -> (struct, bound): a struct used by many packets (Iceball's 128 message codes under
        # several framings) is bound once; binding is deterministic and a bound table is never changed afterwards.
        self.structs: dict[tuple[int, str], tuple[Field, Field]] = {}
        # preferences the table declares (WhenPref): name -> (description, default, choices), in table order
        self.prefs: dict[str, tuple[str, str, list[str]]] = {}

    def bound_struct(self, struct: Field, own: str, make) -> Field:
        key = (id(struct), own)
        hit = self.structs.get(key)
        if hit is None:
            hit = self.structs[key] = (struct, make())     # the description is kept so its id stays unique
        return hit[1]

    def field(self, abbrev: str, name: str, ftype: str, **kw) -> FieldInfo:
        info = self.fields.get(abbrev)
        if info is None:
            info = self.fields[abbrev] = FieldInfo(abbrev, name, ftype, **kw)
        elif info.ftype != ftype:
            raise ValueError(f"{abbrev} registered twice with types {info.ftype} and {ftype}")
        return info


class Field:
    """Base of every table word. `codes` is set on fixed-size fields that can join a precompiled run."""

    codes: tuple[str, ...] | None = None   # struct codes, without byte order
    keeps_state = False                    # its decode keeps conversation state later packets read (a block
                                           # that reassembles or remembers): see stateful()
    endian = ""                            # "<", ">" or "" (byte order does not matter: bytes, u8)
    size: int | None = None                # fixed wire size, or None when variable

    def __init__(self, name: str, label: str | None):
        self.name = name
        self.label = label
        self.abbrev = ""
        self.info: FieldInfo | None = None

    def __copy__(self):
        # copy.copy's generic __reduce_ex__ path made binding the tables (tens of thousands of copies) a third
        # of the start-up time; a field is a plain __dict__ object, so a dict copy is the same shallow copy.
        bound = object.__new__(type(self))
        bound.__dict__.update(self.__dict__)
        return bound

    def bind(self, b: Binder, prefix: str) -> Field:
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.register(b)
        return bound

    def register(self, b: Binder) -> None:
        """Create this field's FieldInfo(s) on a bound copy."""

    def decode(self, ctx: Ctx, parent: Item) -> None:
        """Variable-size fields read themselves. Fixed fields are read by their Struct's run."""
        ctx.need(self.size, self.label or self.name, parent)
        raw = struct.unpack_from(self.endian + "".join(self.codes), ctx.data, ctx.pos)
        self.take(ctx, parent, ctx.pos, raw[0] if len(raw) == 1 else raw)
        ctx.pos += self.size

    def take(self, ctx: Ctx, parent: Item, offset: int, raw) -> None:
        raise NotImplementedError

    # --- NULL tree (engine.demand): the values into the scope, as decode/take put them, and no items or experts
    def scan(self, ctx: Ctx) -> None:
        """Read this field's values into the scope and move on, building nothing (Wireshark's NULL tree). The
        fallback decodes into a throwaway item; the common words do it without one."""
        unpack = self._scan_unpack
        if unpack is None:
            unpack = self._scan_setup()
        pos = ctx.pos
        if unpack and pos + self.size <= ctx.end:
            self._scan_put(ctx.scopes[-1], unpack(ctx.data, pos))
            ctx.pos = pos + self.size
            return
        self.decode(ctx, Item(None))

    _scan_unpack = None        # scan()'s compiled struct (False: the fallback) and its store (compile_store) ...
    _scan_put = None           # ... made at the first scan

    def _scan_setup(self):
        unpack = False
        if self.codes is not None and _stores(self):
            unpack = struct.Struct(self.endian + "".join(self.codes)).unpack_from
            self.__dict__["_scan_put"] = compile_store([(self, "raw[0]" if len(self.codes) == 1 else "raw")])
        self.__dict__["_scan_unpack"] = unpack
        return unpack

    store = None     # store(scope, raw): what take() puts into the scope, on the words that define both

    def store_source(self, value: str) -> list[str] | None:
        """store()'s body as Python lines on the expression `value` and the scope `s` (a run's compiled scan
        inlines them: compile_store), or None: the run calls store()."""
        return None

    def encode(self, values: dict, out: bytearray) -> None:
        value = values.get(self.name, self.default())
        out += struct.pack(self.endian + "".join(self.codes), *(value if len(self.codes) > 1 else (value,)))

    def default(self):
        return 0

    def size_rule(self) -> tuple[int, int, int]:
        return (self.size, self.size, 0)

    def stateful(self) -> bool:
        """Whether decoding this field, or a field in it, keeps state that later packets read: a run that reads
        none of its items may skip it only when not (engine.demand)."""
        known = self.__dict__.get("_stateful")
        if known is None:
            known = self.keeps_state or any(_stateful(v) for k, v in self.__dict__.items() if k != "_stateful")
            self.__dict__["_stateful"] = known
        return known

    def infos(self):
        if self.info is not None:
            yield self.info

    def abbrevs(self) -> frozenset:
        """The abbrevs of every item this field (and any field in it) can make: a run reading none of them
        (Ctx.asked) needs only its values (scan)."""
        known = self.__dict__.get("_abbrevs")
        if known is None:
            known = self.__dict__["_abbrevs"] = frozenset(i.abbrev for i in self.infos() if i is not None)
        return known


def _stateful(value) -> bool:
    if isinstance(value, Field):
        return value.stateful()
    if isinstance(value, (list, tuple)):
        return any(_stateful(v) for v in value)
    if isinstance(value, dict):
        return any(_stateful(v) for v in value.values())
    if isinstance(value, Run):
        return any(f.stateful() for f in value.fields)
    return False


# --- integers and floats ---------------------------------------------------------------------------------------

_CODES = {("uint", 1): "B", ("uint", 2): "H", ("uint", 4): "I", ("uint", 8): "Q",
          ("int", 1): "b", ("int", 2): "h", ("int", 4): "i", ("int", 8): "q",
          ("float", 4): "f", ("double", 8): "d"}


class Number(Field):
    """An integer or float of a fixed width and byte order.

    expect: the one value the spec allows (anything else: expert warning);
    check_range: (lo, hi) the spec allows (outside: expert warning);
    values: value names (an enum), shown as "Name (3)".
    """

    def __init__(self, name, label, kind, width, endian, *, base=None, values=None, expect=None,
                 check_range=None, description=""):
        super().__init__(name, label)
        self.kind, self.width = kind, width
        self.codes = (_CODES[(kind, width)],)
        self.endian = endian if width > 1 else ""
        self.size = width
        self.base = base or ("NONE" if kind in ("float", "double") else "DEC")
        self.values = values
        self.expect = expect
        self.check_range = check_range
        self.description = description

    @property
    def ftype(self) -> str:
        if self.kind == "float" and self.width == 8:
            return "double"
        return self.kind if self.kind in ("float", "double") else f"{self.kind}{self.width * 8}"

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, self.ftype, base=self.base, values=self.values,
                            description=self.description)

    def store(self, scope, raw):
        scope[self.name] = raw

    def store_source(self, value):
        return [f"s[{self.name!r}] = {value}"] if type(self).store is Number.store else None

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        item = parent.add(Item(self.info, raw, offset, self.width, None, False, ctx.source))
        if self.expect is not None and raw != self.expect:
            ctx.expert(item, "unexpected", f"{self.label} should be 0x{self.expect:x}, not 0x{raw:x}")
        elif self.check_range is not None and not self.check_range[0] <= raw <= self.check_range[1]:
            ctx.expert(item, "unexpected",
                       f"{self.label} {raw} is outside {self.check_range[0]}..{self.check_range[1]}")
        elif self.values is not None and raw not in self.values:
            ctx.expert(item, "unexpected", f"Unknown {self.label} {raw}")

    def default(self):
        if self.expect is not None:
            return self.expect
        if self.check_range is not None:
            return self.check_range[0]
        return 0


def _number(kind, width, endian):
    def make(name, label, **kw):
        return Number(name, label, kind, width, endian, **kw)
    make.__name__ = f"{kind}{width * 8}{'' if width == 1 else ('le' if endian == LE else 'be')}"
    return make


U8, I8 = _number("uint", 1, ""), _number("int", 1, "")
U16LE, U16BE, I16LE, I16BE = (_number("uint", 2, LE), _number("uint", 2, BE), _number("int", 2, LE),
                              _number("int", 2, BE))
U32LE, U32BE, I32LE, I32BE = (_number("uint", 4, LE), _number("uint", 4, BE), _number("int", 4, LE),
                              _number("int", 4, BE))
U64LE, U64BE = _number("uint", 8, LE), _number("uint", 8, BE)
F32LE, F32BE, F64LE = _number("float", 4, LE), _number("float", 4, BE), _number("float", 8, LE)


class Flag:
    """One bit (or bit group) of a Flags field: a boolean item drawn as a bit line (`.... ...1 = Name: True`)."""

    def __init__(self, name: str, label: str, mask: int):
        self.name, self.label, self.mask = name, label, mask
        self.info: FieldInfo | None = None


class WithParts(Field):
    """A field whose item holds one sub-item per part (flag bits, bit groups): binding copies the parts and gives
    each its FieldInfo (`part_info`); `infos` yields the field's own, then the parts'."""

    parts: tuple = ()

    def bind(self, b, prefix):
        bound = super().bind(b, prefix)
        bound.parts = tuple(copy.copy(p) for p in self.parts)
        for p in bound.parts:
            p.info = bound.part_info(b, prefix, p)
        return bound

    def part_info(self, b: Binder, prefix: str, part) -> FieldInfo:
        raise NotImplementedError

    def infos(self):
        yield self.info
        for p in self.parts:
            yield p.info


class NumberWithParts(WithParts):
    """A Number whose item holds its parts (Flags' bits, BitSplit's bit groups): the number decodes, encodes and
    registers itself; `take_parts` adds the parts under its item."""

    def __init__(self, number: Number, parts: tuple):
        super().__init__(number.name, number.label)
        self.number, self.parts = number, parts
        self.codes, self.endian, self.size = number.codes, number.endian, number.size

    def register(self, b):
        self.number = copy.copy(self.number)
        self.number.abbrev = self.abbrev
        self.number.register(b)
        self.info = self.number.info

    def store(self, scope, raw):
        scope[self.name] = raw

    def take(self, ctx, parent, offset, raw):
        self.number.take(ctx, parent, offset, raw)
        self.take_parts(ctx, parent.children[-1], offset, raw)

    def take_parts(self, ctx: Ctx, item: Item, offset: int, raw: int) -> None:
        raise NotImplementedError


class Flags(NumberWithParts):
    """An integer shown with one line per flag bit under it."""

    def part_info(self, b, prefix, flag):
        return b.field(f"{self.abbrev}.{flag.name}", flag.label, "bool", mask=flag.mask, bits=self.size * 8)

    def take_parts(self, ctx, item, offset, raw):
        for flag in self.parts:
            item.add(Item(flag.info, bool(raw & flag.mask), offset, self.size, None, False, ctx.source))

    def encode(self, values, out):
        self.number.encode(values, out)


class Padding(Field):
    """Bytes the spec reserves: shown, never required to be zero."""

    def __init__(self, name: str, size: int):
        super().__init__(name, "Padding")
        self.size = size
        self.codes = (f"{size}s",)

    def register(self, b):
        self.info = b.field(self.abbrev, "Padding", "bytes")

    def store(self, scope, raw):
        scope[self.name] = raw

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        parent.add(Item(self.info, raw, offset, self.size, None, False, ctx.source))

    def default(self):
        return bytes(self.size)


# --- strings and bytes -----------------------------------------------------------------------------------------

class CString(Field):
    """A UTF-8 string ended by NUL. size=N: a fixed area of N bytes; max_size=N: up to N bytes (NUL included),
    ending the packet when it runs out."""

    def __init__(self, name, label, *, size=None, max_size=None):
        super().__init__(name, label)
        self.fixed_area, self.max_size = size, max_size
        self.size = size

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "string")

    def decode(self, ctx, parent):
        if self.fixed_area is not None:
            ctx.need(self.fixed_area, self.label, parent)
            area = self.fixed_area
        else:
            area = min(self.max_size, ctx.end - ctx.pos)
        start = ctx.pos
        nul = ctx.data.find(b"\0", start, start + area)
        raw = ctx.data[start:nul if nul >= 0 else start + area]
        used = area if self.fixed_area is not None or nul < 0 else nul - start + 1
        value = wire_string(raw)
        ctx.scopes[-1][self.name] = value
        parent.add(Item(self.info, value, start, used, None, False, ctx.source))
        ctx.pos = start + used

    def encode(self, values, out):
        raw = values.get(self.name, "").encode()
        if self.fixed_area is not None:
            out += raw[:self.fixed_area].ljust(self.fixed_area, b"\0")
        else:
            out += raw[:self.max_size - 1] + b"\0" if len(raw) < self.max_size else raw[:self.max_size]

    def default(self):
        return ""

    def size_rule(self):
        if self.fixed_area is not None:
            return (self.fixed_area, self.fixed_area, 0)
        return (0, self.max_size, 1)


class Bytes(Field):
    """Raw bytes: size=N fixed, length="field" (its value, bounded by the data), or to the end."""

    def __init__(self, name, label, *, size=None, length=None):
        super().__init__(name, label)
        self.size, self.length = size, length
        if size is not None:
            self.codes = (f"{size}s",)

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "bytes")

    def store(self, scope, raw):
        scope[self.name] = raw

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        parent.add(Item(self.info, raw, offset, self.size, None, False, ctx.source))

    def decode(self, ctx, parent):
        if self.size is not None:
            return Field.decode(self, ctx, parent)
        n = ctx.end - ctx.pos
        if self.length is not None:
            want = ctx.lookup(self.length)
            if want > n:
                ctx.expert(parent, "malformed", f"{self.label}: {want} bytes announced, {n} present")
            n = min(want, n)
        raw = ctx.data[ctx.pos:ctx.pos + n]
        self.take(ctx, parent, ctx.pos, raw)
        ctx.pos += n

    def scan(self, ctx):
        if self.size is not None or self.length is None:
            return Field.scan(self, ctx)
        n = min(ctx.lookup(self.length), ctx.end - ctx.pos)
        ctx.scopes[-1][self.name] = ctx.data[ctx.pos:ctx.pos + n]
        ctx.pos += n

    def encode(self, values, out):
        out += values.get(self.name, b"")

    def default(self):
        return b""

    def size_rule(self):
        return (self.size, self.size, 0) if self.size is not None else (0, 1 << 16, 1)


# --- structure ----------------------------------------------------------------------------------------------------

class Run:
    """Consecutive fixed fields of one byte order, read with one precompiled struct.unpack_from."""

    __slots__ = ("fields", "fmt", "size", "spans", "stores", "plans", "put")

    def __init__(self, fields: list[Field]):
        self.fields = fields
        endian = next((f.endian for f in fields if f.endian), "<")
        self.fmt = struct.Struct(endian + "".join(c for f in fields for c in f.codes))
        self.size = self.fmt.size
        self.spans = []          # (field, offset in run, first value index, number of values)
        offset = index = 0
        for f in fields:
            self.spans.append((f, offset, index, len(f.codes)))
            offset += f.size
            index += len(f.codes)
        self.stores = all(_stores(f) for f in fields)
        self.plans: dict = {}    # Ctx.asked -> spans with whether each field's items are read (None: none is)
        self.put = None          # scan()'s store of every field at once (store_function), made at the first scan

    def decode(self, ctx: Ctx, parent: Item) -> None:
        pos = ctx.pos
        if pos + self.size > ctx.end:
            for f in self.fields:     # read what fits, then stop with a Malformed expert
                f.decode(ctx, parent)
            return
        asked = ctx.asked
        if asked is not None:
            return self.decode_asked(ctx, parent, asked)
        raw = self.fmt.unpack_from(ctx.data, pos)
        for f, offset, index, count in self.spans:
            f.take(ctx, parent, pos + offset, raw[index] if count == 1 else raw[index:index + count])
        ctx.pos = pos + self.size

    def decode_asked(self, ctx: Ctx, parent: Item, asked: frozenset) -> None:
        """Items only for the fields a run reads (Ctx.asked); the others' values go into the scope."""
        plan = self.plans.get(asked, False)
        if plan is False:
            plan = [(f, offset, index, count, not f.abbrevs().isdisjoint(asked), _stores(f))
                    for f, offset, index, count in self.spans]
            if not any(read for *_, read, _ in plan) and self.stores:
                plan = None
            if len(self.plans) < 64:
                self.plans[asked] = plan
        if plan is None:
            return self.scan(ctx)
        pos = ctx.pos
        raw = self.fmt.unpack_from(ctx.data, pos)
        scope, spare = ctx.scopes[-1], None
        for f, offset, index, count, read, stores in plan:
            value = raw[index] if count == 1 else raw[index:index + count]
            if read:
                f.take(ctx, parent, pos + offset, value)
            elif stores:
                f.store(scope, value)
            else:                     # a block whose take() does more than store: its items are let go
                if spare is None:
                    spare = Item(None)
                f.take(ctx, spare, pos + offset, value)
        ctx.pos = pos + self.size

    def scan(self, ctx: Ctx) -> None:
        pos = ctx.pos
        if pos + self.size > ctx.end or not self.stores:
            self.decode(ctx, Item(None))      # the short read and its Truncated, as decode does them
            return
        (self.put or self.store_function())(ctx.scopes[-1], self.fmt.unpack_from(ctx.data, pos))
        ctx.pos = pos + self.size

    def store_function(self):
        """put(scope, raw): every field's store() of the run's unpacked values, compiled (compile_store)."""
        self.put = compile_store([(f, f"raw[{index}]" if count == 1 else f"raw[{index}:{index + count}]")
                                  for f, _offset, index, count in self.spans])
        return self.put


def compile_store(fields: list[tuple[Field, str]]):
    """One function put(s, raw) doing each field's store(s, value) in turn (`fields`: (field, the expression of
    its value in raw)): the lines a field gives (Field.store_source) inline, a call of its store() otherwise.
    A NULL-tree scan (engine.demand) stores every value of every run it reads: one call, not one a field."""
    lines, env = ["def put(s, raw):"], {}
    for k, (f, value) in enumerate(fields):
        inline = f.store_source(value)
        if inline is None:
            env[f"store{k}"] = f.store
            inline = [f"store{k}(s, {value})"]
        lines += [f"    {line}" for line in inline]
    if len(lines) == 1:
        lines.append("    pass")
    exec("\n".join(lines), env)        # noqa: S102 - our own tables' names and masks, no outside text
    return env["put"]


def _stores(f: Field) -> bool:
    return _stores_class(type(f))


@cache
def _stores_class(cls) -> bool:
    """Whether store() puts into the scope exactly what take() does: the nearest class that defines either
    defines both (a block that overrides take() alone is decoded, not stored)."""
    for klass in cls.__mro__:
        if "take" in klass.__dict__ or "store" in klass.__dict__:
            return "take" in klass.__dict__ and "store" in klass.__dict__
    return False


def _runs(fields: list[Field]) -> list:
    """Group consecutive fixed fields of one byte order into Runs; variable fields stay steps of their own."""
    steps, pending, order = [], [], ""
    for f in fields:
        if f.codes is not None and not isinstance(f, Struct):
            if pending and f.endian and order and f.endian != order:
                steps.append(Run(pending))
                pending, order = [], ""
            pending.append(f)
            order = order or f.endian
            continue
        if pending:
            steps.append(Run(pending))
            pending, order = [], ""
        steps.append(f)
    if pending:
        steps.append(Run(pending))
    return steps


class Struct(Field):
    """Fields in sequence. label=None: transparent (the fields belong to the parent); otherwise a subtree whose
    fields are named `proto.<struct name>.<field>` wherever the struct is used, like a shared C struct."""

    def __init__(self, name, label, *fields: Field, summary: str | None = None):
        super().__init__(name, label)
        self.fields = list(fields)
        self.summary = summary
        self.steps: list = []
        if all(f.size is not None for f in self.fields):
            self.size = sum(f.size for f in self.fields)

    def bind(self, b, prefix):
        own = prefix if self.label is None else f"{b.proto}.{self.name}"
        return b.bound_struct(self, own, lambda: self._bind(b, own))

    def _bind(self, b, own):
        bound = copy.copy(self)
        bound.abbrev = own
        bound.fields = [f.bind(b, own) for f in self.fields]
        if self.label is not None:
            bound.info = b.field(own, self.label, "none")
        bound.steps = _runs(bound.fields)
        bound.codes = None      # a nested struct is a step of its own (its item spans its fields)
        return bound

    def decode(self, ctx, parent):
        asked = ctx.asked
        if asked is not None and asked.isdisjoint(self.abbrevs()):
            return self.scan(ctx)        # nothing under it is read (Ctx.asked): its values only
        if self.label is None:
            for step in self.steps:
                step.decode(ctx, parent)
            return
        item = parent.add(Item(self.info, None, ctx.pos, 0, self.label, False, ctx.source))
        scope: dict = {}
        ctx.scopes[-1][self.name] = scope
        ctx.scopes.append(scope)
        try:
            for step in self.steps:
                step.decode(ctx, item)
        finally:
            ctx.scopes.pop()
            item.length = ctx.pos - item.offset
            if self.summary:
                item.label = format_template(self.summary, scope)

    def scan(self, ctx):
        if self.label is None:
            for step in self.steps:
                step.scan(ctx)
            return
        scope: dict = {}
        ctx.scopes[-1][self.name] = scope
        ctx.scopes.append(scope)
        try:
            for step in self.steps:
                step.scan(ctx)
        finally:
            ctx.scopes.pop()

    def encode(self, values, out):
        scope = values if self.label is None else values.get(self.name, {})
        for f in self.fields:
            f.encode(scope, out)

    def size_rule(self):
        return combine(f.size_rule() for f in self.fields)

    def infos(self):
        if self.info is not None:
            yield self.info
        for f in self.fields:
            yield from f.infos()


class Packet(Struct):
    """One message type: a transparent struct with a name (its fields are `proto.<packet>.<field>`), an Info
    column template, and optionally `remember=key`: its values are kept per conversation under that key for
    later packets (Chunk Begin, read by Chunk Data)."""

    def __init__(self, name, label, *fields, info: str | None = None, remember: str | None = None):
        super().__init__(name, label, *fields)
        self.info_template = info
        self.remember = remember

    def bind(self, b, prefix):
        own = f"{b.proto}.{self.name}"
        return b.bound_struct(self, own, lambda: self._bind(b, own))

    def _bind(self, b, own):
        bound = copy.copy(self)
        bound.abbrev = own
        bound.fields = [f.bind(b, own) for f in self.fields]
        bound.steps = _runs(bound.fields)
        bound.codes = None
        return bound

    def decode(self, ctx, parent):
        asked = ctx.asked
        if asked is not None and asked.isdisjoint(self.abbrevs()):
            return self.scan(ctx)
        for step in self.steps:
            step.decode(ctx, parent)

    def scan(self, ctx):
        for step in self.steps:
            step.scan(ctx)

    def encode(self, values, out):
        for f in self.fields:
            f.encode(values, out)

    def infos(self):
        for f in self.fields:
            yield from f.infos()


class Array(Field):
    """`count` elements (the value of an earlier field), at most `max_count`, each an `item` Struct."""

    def __init__(self, name, label, *, count: str, item: Struct, max_count: int):
        super().__init__(name, label)
        self.count, self.item, self.max_count = count, item, max_count

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "none")
        bound.item = self.item.bind(b, prefix)
        return bound

    def decode(self, ctx, parent):
        count = ctx.lookup(self.count)
        item = parent.add(Item(self.info, None, ctx.pos, 0, f"{self.label} ({count})", False, ctx.source))
        elements: list = []
        ctx.scopes[-1][self.name] = elements
        if not 0 <= count <= self.max_count:
            ctx.expert(item, "malformed", f"{self.label}: count {count} is outside 0..{self.max_count}")
            count = max(0, min(count, self.max_count))
        try:
            for _ in range(count):
                holder: dict = {}
                ctx.scopes.append(holder)
                try:
                    self.item.decode(ctx, item)
                finally:
                    ctx.scopes.pop()
                    elements.append(holder.get(self.item.name, {}))
        finally:
            item.length = ctx.pos - item.offset

    def encode(self, values, out):
        for element in values.get(self.name, []):
            self.item.encode({self.item.name: element}, out)

    def default(self):
        return []

    def size_rule(self):
        lo, hi, step = self.item.size_rule()
        if step == 0 and lo == hi:
            return (lo, lo * self.max_count, lo)
        return (0, hi * self.max_count, 1)

    def infos(self):
        yield self.info
        yield from self.item.infos()


class Switch(Field):
    """Dispatch on the value of an earlier field (a type code) to one Packet per value."""

    def __init__(self, on: str, cases: dict[int, Packet]):
        super().__init__(on, None)
        self.on, self.cases = on, cases

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.cases = {code: packet.bind(b, prefix) for code, packet in self.cases.items()}
        return bound

    def decode(self, ctx, parent):
        packet = self.cases.get(ctx.lookup(self.on))
        if packet is None:
            raise Truncated()      # the protocol reports an unknown type; nothing more can be framed
        packet.decode(ctx, parent)

    def infos(self):
        for packet in self.cases.values():
            yield from packet.infos()


# --- preferences ---------------------------------------------------------------------------------------------------

BOOL_CHOICES = ["TRUE", "FALSE", "true", "false"]     # as tshark reads a boolean preference


def pref_on(prefs: dict, key: str, default: bool) -> bool:
    """A boolean preference's value (-o KEY:TRUE|FALSE, case-insensitive as tshark)."""
    value = prefs.get(key)
    return default if value is None else value.upper() == "TRUE"


class WhenPref(Field):
    """Fields shown only when a boolean preference of the protocol is on (`-o <proto>.<pref>:TRUE`): detail that
    costs too much output to show by default (a chunk's every block). The table declares the preference: the
    protocol lists it (preferences(), -G defaultprefs), the plugin registers it as Pref.bool and tests it where
    the fields are. The fields take no wire bytes (views of bytes read before), so the decode after them is the
    same either way."""

    def __init__(self, pref: str, description: str, *fields: Field, default: bool = False):
        super().__init__(pref, None)
        self.pref, self.description, self.default = pref, description, default
        self.fields = list(fields)
        if any(f.size_rule() != (0, 0, 0) for f in self.fields):
            raise ValueError(f"WhenPref({pref!r}): its fields must take no wire bytes")
        self.size, self.key = 0, ""

    def bind(self, b, prefix):
        declared = (self.description, "TRUE" if self.default else "FALSE", BOOL_CHOICES)
        if b.prefs.setdefault(self.pref, declared) != declared:
            raise ValueError(f"{b.proto}.{self.pref} declared twice with different descriptions or defaults")
        bound = copy.copy(self)
        bound.key = bound.abbrev = f"{b.proto}.{self.pref}"     # the abbrev keys its Lua (one guard per pref)
        bound.fields = [f.bind(b, prefix) for f in self.fields]
        return bound

    def decode(self, ctx, parent):
        if pref_on(ctx.prefs, self.key, self.default):
            for f in self.fields:
                f.decode(ctx, parent)

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def infos(self):
        for f in self.fields:
            yield from f.infos()


# --- helpers -------------------------------------------------------------------------------------------------------

def combine(rules) -> tuple[int, int, int]:
    """Size rule of fields in sequence: sums of minimums and maximums, and the step their sizes vary by."""
    lo = hi = step = 0
    for a, b, s in rules:
        lo, hi, step = lo + a, hi + b, gcd(step, s)
    return (lo, hi, step)


def accepts(rule: tuple[int, int, int], length: int) -> bool:
    lo, hi, step = rule
    if not lo <= length <= hi:
        return False
    return length == lo if step == 0 else (length - lo) % step == 0


def format_template(template: str, values: dict) -> str:
    """An Info/summary template: "{name}" is the value of a field of the packet; the rest is literal."""
    parts = _TEMPLATE_PARTS.get(template)
    if parts is None:
        if len(_TEMPLATE_PARTS) >= 1024:
            _TEMPLATE_PARTS.clear()
        parts = _TEMPLATE_PARTS[template] = tuple(template_parts(template))
    out = []
    for is_field, text in parts:
        if is_field:
            value = values.get(text)
            out.append("?" if value is None else str(value))
        else:
            out.append(text)
    return "".join(out)


_TEMPLATE_PARTS: dict[str, tuple] = {}     # a template -> its template_parts, parsed once


def template_parts(template: str) -> list[tuple[bool, str]]:
    """(is_field, text) pieces of a template, for the Lua backend."""
    parts, i = [], 0
    while i < len(template):
        j = template.find("{", i)
        if j < 0:
            parts.append((False, template[i:]))
            break
        k = template.index("}", j)
        if j > i:
            parts.append((False, template[i:j]))
        parts.append((True, template[j + 1:k]))
        i = k + 1
    return parts


__all__ = ["Binder", "Field", "Number", "Flag", "Flags", "NumberWithParts", "WithParts", "Padding", "CString",
           "Bytes", "Struct", "Packet", "Array", "Switch", "U8", "I8", "U16LE", "U16BE", "I16LE", "I16BE", "U32LE",
           "U32BE", "I32LE", "I32BE", "U64LE", "U64BE", "F32LE", "F32BE", "F64LE", "WhenPref", "pref_on", "combine",
           "accepts", "format_template", "template_parts"]
