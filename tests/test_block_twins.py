"""A building block's Python and Lua halves are found together (the brief's style rule): engine/blocks_<concept>.py
and lua/rt_<concept>.lua, named for the concept they hold, not for their first user. Read from the files
themselves, so a block that moves, or a runtime that is renamed, keeps the pair or fails here."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE, LUA = ROOT / "engine", ROOT / "lua"
CALL = re.compile(r"\brt\.([A-Za-z_][A-Za-z_0-9]*)\(")                 # a runtime call in emitted Lua
DEFINED = re.compile(r"^function rt\.([A-Za-z_][A-Za-z_0-9]*)\(", re.M)  # a runtime function


def block_modules() -> dict[str, Path]:
    """{concept: engine/blocks_<concept>.py}."""
    return {p.stem.removeprefix("blocks_"): p for p in sorted(ENGINE.glob("blocks_*.py"))}


def runtimes() -> dict[str, Path]:
    """{name: lua/rt_<name>.lua}."""
    return {p.stem.removeprefix("rt_"): p for p in sorted(LUA.glob("rt_*.lua"))}


def homes() -> dict[str, str]:
    """{runtime function: the file defining it} ("runtime" for lua/runtime.lua)."""
    found = {name: "runtime" for name in DEFINED.findall((LUA / "runtime.lua").read_text())}
    for name, path in runtimes().items():
        for fn in DEFINED.findall(path.read_text()):
            assert fn not in found, f"rt.{fn} is defined in rt_{name}.lua and in {found[fn]}"
            found[fn] = name
    return found


def test_no_block_module_is_named_for_a_protocol():
    """A protocol's own code lives beside its table (dissectors/<protocol>.py, with lua/rt_<protocol>.lua for its
    plugin half, as ENet's); a building block is named for what it does, whoever used it first."""
    protocols = {p.stem for p in (ROOT / "dissectors").glob("*.py")} - {"__init__"}
    assert "iceball" in protocols and "rutentoy" in protocols
    assert [p.name for c, p in block_modules().items() if c in protocols] == []
    assert [p.name for n, p in runtimes().items() if n in protocols and n not in ("enet", "websocket")] == []


def test_a_blocks_lua_calls_land_in_its_twin():
    """Every runtime function a block module's emitted Lua calls is defined in lua/runtime.lua, in the module's own
    twin lua/rt_<concept>.lua, or in a runtime that is no block's twin (streams, JSON, sniffing): never in another
    block's twin. A module whose Lua is all inline (fixed point) needs no twin."""
    blocks, rts, where = block_modules(), runtimes(), homes()
    block_twins = set(blocks) & set(rts)
    wrong, unknown = [], []
    for concept, path in blocks.items():
        for fn in sorted(set(CALL.findall(path.read_text()))):
            home = where.get(fn)
            if home is None:
                unknown.append(f"{path.name}: rt.{fn}")
            elif home in block_twins and home != concept:
                wrong.append(f"{path.name} calls rt.{fn}, defined in rt_{home}.lua (not rt_{concept}.lua)")
    assert not unknown, "calls to no runtime function: " + "; ".join(unknown)
    assert not wrong, "; ".join(wrong)
    # the twins exist where a module has functions of its own, and point at each other
    own = {where[fn] for path in blocks.values() for fn in CALL.findall(path.read_text())} & set(blocks)
    assert own <= set(rts) and own == block_twins - {"fixed_point"}
    for concept in block_twins:
        assert f"lua/rt_{concept}.lua" in blocks[concept].read_text(), f"blocks_{concept}.py does not name its twin"
        assert f"engine/blocks_{concept}.py" in rts[concept].read_text().split("\n\n")[0], \
            f"rt_{concept}.lua does not name engine/blocks_{concept}.py first"


def test_every_runtime_has_a_python_half_found_by_its_name_or_its_first_lines():
    """lua/rt_<name>.lua is the twin of engine/blocks_<name>.py, or its first lines name the Python module(s) it
    mirrors (engine/streams.py, dissectors/enet_analysis.py, ...), and they exist."""
    missing = []
    for name, path in runtimes().items():
        if (ENGINE / f"blocks_{name}.py").exists():
            continue
        head = path.read_text().split("\n\n")[0]
        named = re.findall(r"\b((?:engine|dissectors|analysis|reassembly)/[a-z_0-9]+\.py)", head)
        if not named or not all((ROOT / n).exists() for n in named):
            missing.append(f"{path.name}: {named or 'names no Python module'}")
    assert not missing, "; ".join(missing)


def test_every_block_runtime_function_is_used():
    """A function in a block's twin is called by its Python half's emitted Lua or by the Lua itself (no leftovers
    of a move)."""
    blocks, rts = block_modules(), runtimes()
    lua_text = "\n".join(p.read_text() for p in [LUA / "runtime.lua", *rts.values()])
    for concept in set(blocks) & set(rts):
        python = blocks[concept].read_text() + "".join(p.read_text() for p in ENGINE.glob("*.py"))
        for fn in DEFINED.findall(rts[concept].read_text()):
            uses = len(re.findall(rf"\brt\.{fn}\(", lua_text)) - 1 + len(re.findall(rf"\brt\.{fn}\(", python))
            assert uses > 0, f"rt.{fn} (rt_{concept}.lua) is called by nothing"


def test_the_core_runtime_holds_no_one_blocks_function():
    """lua/runtime.lua is the core every dissector uses; a function that only one building block calls (from its
    emitted Lua or its twin) belongs in that block's twin, so runtime.lua does not grow back into a grab-bag."""
    blocks, rts = block_modules(), runtimes()
    core = (LUA / "runtime.lua").read_text()
    writers = [p for p in [*ENGINE.glob("*.py"), *(ROOT / "dissectors").glob("*.py")]
               if not p.stem.startswith("blocks_")]
    alone = []
    for fn in DEFINED.findall(core):
        call = re.compile(rf"\brt\.{fn}\(")
        users = {c for c, p in blocks.items() if call.search(p.read_text())}
        users |= {n if n in blocks else f"rt_{n}.lua" for n, p in rts.items() if call.search(p.read_text())}
        users |= {p.name for p in writers if call.search(p.read_text())}
        if len(call.findall(core)) > 1:
            users.add("runtime.lua")
        if len(users) == 1 and users <= set(blocks):
            alone.append(f"rt.{fn} (only blocks_{next(iter(users))}.py uses it)")
    assert not alone, "; ".join(alone)


def test_one_lua_literal_writer():
    """Every module that writes Lua quotes through engine/lua_literals.py (a leaf: imported at the top, no cycle),
    not a copy of its own or a late import of the backend."""
    copies = [f"{p.parent.name}/{p.name}" for p in [*ENGINE.glob("*.py"), *(ROOT / "dissectors").glob("*.py")]
              if p.name != "lua_literals.py"
              and re.search(r"^\s*def _?lua(_str|_num)?\(|^\s+from \.+(engine\.)?lua_backend import", p.read_text(), re.M)]
    assert not copies, copies
