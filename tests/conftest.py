"""Shared fixtures: the captures, and protodump / tshark runs cached for the whole session (each command runs once,
however many tests read its output)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAPTURES_DIR = ROOT / "captures"
GOLDEN_DIR = CAPTURES_DIR / "golden"
PLUGIN = ROOT / "lua" / "protodump.lua"
CAPTURES = sorted(p.name for p in CAPTURES_DIR.glob("*.pcap"))
BLANK_CAPTURES = [name for name in CAPTURES if name.startswith("blank")]

# protodump as a command, whatever the PATH (the console script runs main() too).
PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]
TSHARK = shutil.which("tshark")
LUA_ERROR = re.compile(r"_ws\.lua\.error|Lua Error")

# Extra options given to both protodump and tshark for some captures (same syntax on both sides).
VARIANTS = [(name, ()) for name in CAPTURES] + [
    ("blank-port-23456.pcap", ("-d", "udp.port==23456,blank")),
    ("blank-2015.pcap", ("-o", "blank.revision:2015")),
    ("iceball-tcp-spec.pcap", ("-o", "iceball.numbering:spec")),
    ("iceball-tcp-all.pcap", ("-o", "iceball.numbering:spec")),
    ("freeblox-nocontext.pcap", ("-o", "freeblox.ws_port:8765")),
]


def variant_id(variant) -> str:
    name, extra = variant
    return name if not extra else f"{name}[{' '.join(extra)}]"


def golden_commands(name: str) -> dict[str, tuple[str, ...]]:
    """Golden file -> protodump arguments, run in captures/ (the same as tools/make_captures.py --golden)."""
    return {f"{name}.txt": ("-V", name), f"{name}.json": ("-T", "json", name)}


class Run:
    __slots__ = ("stdout", "stderr", "returncode")

    def __init__(self, proc: subprocess.CompletedProcess):
        self.stdout = proc.stdout.decode("utf-8", "replace")
        self.stderr = proc.stderr.decode("utf-8", "replace")
        self.returncode = proc.returncode


class Runner:
    """Runs a command once per distinct argument list (cwd: captures/) and keeps the result."""

    def __init__(self, prefix: list[str]):
        self.prefix = prefix
        self.cache: dict[tuple, Run] = {}

    def __call__(self, *args: str, cwd: Path = CAPTURES_DIR) -> Run:
        key = (str(cwd), *args)
        if key not in self.cache:
            self.cache[key] = Run(subprocess.run([*self.prefix, *args], cwd=cwd, capture_output=True,
                                                 timeout=600))
        return self.cache[key]


@pytest.fixture(scope="session")
def protodump_run() -> Runner:
    return Runner(PROTODUMP)


@pytest.fixture(scope="session")
def tshark_run() -> Runner:
    if TSHARK is None:
        pytest.skip("tshark is not on PATH")
    return Runner([TSHARK, "-X", f"lua_script:{PLUGIN}"])


# --- JSON helpers ---------------------------------------------------------------------------------------------------

def pairs(text: str):
    """Parse tshark-style JSON keeping duplicate keys and their order: objects become lists of (key, value)."""
    return json.loads(text, object_pairs_hook=lambda kv: [(k, v) for k, v in kv])


def get(obj, key):
    for k, v in obj:
        if k == key:
            return v
    return None


def packet_layers(text: str) -> list:
    """Per packet: the (key, value) list of _source.layers."""
    return [get(get(p, "_source"), "layers") for p in pairs(text)]


def layer_of(layers, proto: str):
    found = layers_of(layers, proto)
    assert len(found) <= 1, f"{len(found)} {proto} layers in one packet"
    return found[0] if found else None


def layers_of(layers, proto: str) -> list:
    """Every layer named `proto` of one packet, in order (a frame may carry several: PDUs of one segment)."""
    return [v for k, v in layers if k == proto]


def tshark_divergent(layers) -> bool:
    """A frame (protodump's layers) where tshark 4.0.17's own ws dissector does not hand the message over as it
    is, so the layers above websocket differ by design (docs/tshark-formats.md section 7): a fragmented message
    whose last frame is empty is never delivered, a compressed fragmented one is delivered still compressed.
    protodump decodes both; its websocket layer then holds `websocket.fragments`."""
    def keys(obj):
        for k, v in obj:
            yield k
            if isinstance(v, list):
                yield from keys(v)
    return any(k == "websocket.fragments" for layer in layers_of(layers, "websocket") for k in keys(layer))


_PACKET_START = re.compile(r"^  \{$", re.M)


def raw_layers(text: str, proto: str) -> list[str | None]:
    """Per packet: the raw JSON text of the layers `proto` (from the first key line to the last one's closing
    brace, joined by newlines), or None. tshark and protodump both indent layers by 8 spaces."""
    out = []
    starts = [m.start() for m in _PACKET_START.finditer(text)]
    for i, start in enumerate(starts):
        chunk = text[start:starts[i + 1] if i + 1 < len(starts) else len(text)]
        found = []
        for m in re.finditer(rf'^        "{re.escape(proto)}": ', chunk, re.M):
            rest = chunk[m.start():]
            first = rest.split("\n", 1)[0]
            if not first.rstrip().endswith("{"):           # a layer without children: one line
                found.append(first.rstrip().rstrip(","))
                continue
            end = re.search(r"^        \}", rest, re.M)
            found.append(rest[:end.end()] if end else rest)
        out.append("\n".join(found) if found else None)
    return out
