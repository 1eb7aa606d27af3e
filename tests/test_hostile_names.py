"""Every expert and field the plugin can use is registered, from the same table as in Python.

A Lua reference to an unregistered ProtoExpert or ProtoField raises at dissection time ("ProtoExpert is not
registered"), is caught by the dissector's pcall and loses the rest of the packet. These tests scan the generated
plugin (lua/protodump.lua: the runtime, then one section per protocol) for every expert kind and field abbrev it
names and check each against the registrations, and the registrations against the Python tables."""
from __future__ import annotations

import re

import pytest

from conftest import PLUGIN
from protodump.dissectors import PROTOCOLS

LUA_PROTOCOLS = [p for p in PROTOCOLS if getattr(p, "lua", True)]
TEXT = PLUGIN.read_text(encoding="utf-8")
PROTO_START = re.compile(r"^local P_(\w+) = Proto\(", re.M)


def sections() -> dict[str, str]:
    """'' -> the runtime (before the first protocol), name -> that protocol's generated section."""
    starts = [(m.start(), m.group(1)) for m in PROTO_START.finditer(TEXT)]
    out = {"": TEXT[:starts[0][0]]}
    for (at, name), (end, _) in zip(starts, [*starts[1:], (len(TEXT), "")]):
        out[name] = TEXT[at:end]
    return out


def registered_experts(section: str, name: str) -> set[str]:
    return set(re.findall(r'ProtoExpert\.new\("' + re.escape(name) + r'\.(\w+)"', section))


def used_expert_kinds(code: str) -> set[str]:
    """Expert kinds named literally: rt.expert(c, item, "kind", ...) and E["kind"] / E.kind."""
    kinds = set(re.findall(r'rt\.expert\([^,()]+,\s*[^,]+?,\s*"(\w+)"', code))
    kinds |= set(re.findall(r'\bE\["(\w+)"\]', code))
    return kinds


SECTIONS = sections()


@pytest.mark.parametrize("p", LUA_PROTOCOLS, ids=lambda p: p.name)
def test_experts_registered_from_the_python_table(p):
    section = SECTIONS[p.name]
    assert registered_experts(section, p.name) == set(p.experts)
    # registered before the list is handed to Wireshark: Proto.experts copies the list when assigned
    handed = section.index(f"P_{p.name}.experts = EL")
    assert "ProtoExpert.new(" not in section[handed:]
    assert used_expert_kinds(section) <= set(p.experts)


def test_runtime_expert_kinds_are_registered_by_the_protocols_that_reach_them():
    runtime = SECTIONS[""]
    common = set.intersection(*(set(p.experts) for p in LUA_PROTOCOLS))
    enet = next(p for p in LUA_PROTOCOLS if p.name == "enet")
    enet_part = (PLUGIN.parent / "rt_enet.lua").read_text(encoding="utf-8")     # inlined as is; ENet's alone
    assert enet_part in runtime
    rest = runtime.replace(enet_part, "")
    assert used_expert_kinds(enet_part) <= set(enet.experts)
    assert used_expert_kinds(rest) <= common, used_expert_kinds(rest) - common


@pytest.mark.parametrize("p", LUA_PROTOCOLS, ids=lambda p: p.name)
def test_fields_registered_from_the_python_table(p):
    section = SECTIONS[p.name]
    defined = set(re.findall(r'^F\["([\w.]+)"\] = ProtoField\.', section, re.M))
    assert defined == {a for a, info in p.fields.items() if info.ftype != "protocol"}
    used = set(re.findall(r'\bF\["([\w.]+)"\]', section))
    assert used <= defined, used - defined


def test_runtime_fields_are_registered():
    defined = set(re.findall(r'^F\["([\w.]+)"\] = ProtoField\.', TEXT, re.M))
    used = set(re.findall(r'\bF\["([\w.]+)"\]', SECTIONS[""]))
    assert used <= defined, used - defined
    # fields the runtime names by a short key (F.inflated, F.file, ...) are looked up in tables the generator
    # fills from the protocol's fields: each such table entry must point at a defined field
    for key, abbrev in re.findall(r'(\w+) = F\["([\w.]+)"\]', TEXT):
        assert abbrev in defined, (key, abbrev)


def test_limits_come_from_python():
    """The plugin's limits are one generated table (LIMITS, from the Python constants): every LIMITS.X the Lua
    reads is in it, and no runtime file sets a *_LIMIT / *_MAX of its own (the range coder's model constants are
    its algorithm, not limits)."""
    from protodump.engine.lua_runtime import lua_limits
    limits = lua_limits(PROTOCOLS)
    table = re.search(r"^local LIMITS = \{ (.*) \}$", TEXT, re.M).group(1)
    assert dict(re.findall(r"(\w+) = (\d+)", table)) == {k: str(v) for k, v in limits.items()}
    assert set(re.findall(r"\bLIMITS\.(\w+)", TEXT)) <= set(limits)
    for path in PLUGIN.parent.glob("*.lua"):
        if path.name in ("protodump.lua", "rt_rangecoder.lua"):
            continue
        assert not re.search(r"\b\w*(LIMIT|_MAX)\w*\s*=\s*\d", path.read_text(encoding="utf-8")), path.name
