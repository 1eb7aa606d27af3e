"""Tree templates: a layer whose shape is fixed and whose values fill slots (dpkt's precompiled header, applied
to the packet tree).

The standard layers repeat the same shape in every frame of a connection: the TCP tree has about 75 items, of
which only a few dozen values change from frame to frame. A `Template` describes the shape once: `Slot`s (an
item whose value and label come from the frame's values, by key) and static items (an `Item` that depends only
on what chose the template, shared by every frame that uses it). Each output form compiles a template once into
a %-format text (output/json_out.py, output/text.py); a frame then costs one dict of values and one `%`.

The items themselves are made only when something walks the tree (display filters, -T fields, EK, the API):
`SlotLayer.item` materialises them, from the same template, so every output shows the same tree.

A label is a %-format of the values ("Source Port: %(sport)d"); it must stay well under Wireshark's 240-byte
label buffer (output/text.py cuts longer labels of ordinary items; a template's are never cut).
"""
from __future__ import annotations

import re
from operator import itemgetter

from .tree import Item

_NAMED = re.compile(r"%%|%\((\w+)\)")


def positional(fmt: str):
    """(text, values) for a %-format with named keys: the same format with positional slots, and a function
    that takes the keys' values from a dict in order (one C call): `text % values(vals)` is `fmt % vals`,
    about twice as fast (a named slot is looked up by a key parsed from the format each time)."""
    keys: list[str] = []

    def slot(m):
        if m.group(1) is None:
            return "%%"
        keys.append(m.group(1))
        return "%"

    text = _NAMED.sub(slot, fmt)
    if not keys:
        return text, lambda vals: ()
    if len(keys) == 1:
        key = keys[0]
        return text, lambda vals: (vals[key],)
    return text, itemgetter(*keys)


def positional_runs(fmt: str):
    """positional(fmt), unless some of the format's lines hold a non-ASCII character (TCP's flags, "·······A····"):
    then (None, texts), where texts(vals) is the text cut into runs of whole lines, the ASCII lines apart from the
    others, joined equal to `fmt % vals`. CPython encodes an ASCII text by copying it, but a text with one other
    character character by character (about 20 times slower), so output/sink.py, which encodes each text on its own,
    then pays that for those few lines only, not for the whole layer."""
    runs = _line_runs(fmt)
    if len(runs) == 1:
        return positional(fmt)
    # (a run without a slot is a constant: its text once formatted, "%%" undone)
    pieces = [positional(run) if _has_slot(run) else run % {} for run in runs]

    def texts(vals) -> list[str]:
        return [p if p.__class__ is str else p[0] % p[1](vals) for p in pieces]
    return None, texts


def _has_slot(fmt: str) -> bool:
    return any(m.group(1) is not None for m in _NAMED.finditer(fmt))


def _line_runs(fmt: str) -> list[str]:
    """`fmt` cut at line ends into runs of consecutive lines that are all ASCII or all not (a slot never spans a
    line end, nor does a "%%")."""
    runs: list[str] = []
    run: list[str] = []
    wide = None
    lines = fmt.split("\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if i < last:
            line += "\n"
        elif not line:                   # (the format ends with a line end)
            break
        this = not line.isascii()
        if run and this != wide:
            runs.append("".join(run))
            run = []
        run.append(line)
        wide = this
    runs.append("".join(run))
    return runs


class Slot:
    """One item of a template: `field` (None: a text item), `label` a %-format of the values, `value` the key of
    its value (None: no value), `at`/`length` its bytes relative to the layer's base offset (either may be the
    key of a value: a payload's length, a PDU's place), its item class
    (Item, HiddenItem, TextItem), whether it is generated, its children (slots or static items), and `source`: the
    key of its data source index (None: the frame). `plain`: its value is a text that never needs escaping
    (digits, an address), so the JSON text takes it as it is instead of checking it in every frame."""

    __slots__ = ("field", "label", "value", "at", "length", "generated", "cls", "kids", "source", "plain")

    def __init__(self, field, label: str | None, value: str | None = None, at: int | str = 0, length: int | str = 0,
                 generated: bool = False, cls=Item, kids: tuple = (), source: str | None = None, plain: bool = False):
        self.field, self.label, self.value, self.at, self.length = field, label, value, at, length
        self.generated, self.cls, self.kids, self.source = generated, cls, tuple(kids), source
        self.plain = plain


class Template:
    """A layer's children: a tuple of Slots and static Items. `compiled` holds each output form's text, keyed by
    the form and depth (filled by the output modules)."""

    __slots__ = ("nodes", "compiled")

    def __init__(self, nodes):
        self.nodes = tuple(nodes)
        self.compiled: dict = {}

    def items(self, vals: dict, base: int) -> list[Item]:
        return _items(self.nodes, vals, base)


def _items(nodes, vals: dict, base: int) -> list[Item]:
    out = []
    for n in nodes:
        if n.__class__ is not Slot:
            out.append(n)                # a static item: shared, never changed
            continue
        length = vals[n.length] if n.length.__class__ is str else n.length
        at = vals[n.at] if n.at.__class__ is str else n.at
        item = n.cls(n.field, vals[n.value] if n.value is not None else None, base + at, length,
                     n.label % vals if n.label is not None else None, n.generated)
        if n.source is not None:
            item.source = vals[n.source]
        if n.kids:
            item.children = _items(n.kids, vals, base)
        out.append(item)
    return out


class TemplateCache:
    """Templates by shape key, bounded (cleared when full: a template is cheap to rebuild)."""

    def __init__(self, limit: int = 512):
        self.limit = limit
        self.memo: dict = {}

    def get(self, key, build) -> Template:
        tpl = self.memo.get(key)
        if tpl is None:
            if len(self.memo) >= self.limit:
                self.memo.clear()
            tpl = self.memo[key] = Template(build())
        return tpl


class SlotLayer:
    """A layer (engine.tree.Layer's attributes: proto, item, listed, after) whose top item's children are a
    template filled with `vals`. Outputs that know templates render `template` + `vals` straight to text while
    `materialized` is None; everything else reads `item`, which makes the items on first use (and from then on
    the outputs render those, so a change made to them, such as an expert added later, shows)."""

    __slots__ = ("proto", "template", "vals", "base", "field", "label", "offset", "length", "listed", "after",
                 "materialized")

    def __init__(self, proto: str, field, offset: int, length: int, label: str, template: Template, vals: dict):
        self.proto, self.field, self.offset, self.length, self.label = proto, field, offset, length, label
        self.template, self.vals, self.base = template, vals, offset
        self.listed, self.after = True, None
        self.materialized: Item | None = None

    @property
    def item(self) -> Item:
        top = self.materialized
        if top is None:
            top = self.materialized = Item(self.field, None, self.offset, self.length, self.label)
            kids = self.template.items(self.vals, self.base)
            if kids:
                top.children = kids
        return top
