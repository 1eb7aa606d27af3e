"""`protodump lua verify CAPTURE`: decode the capture with the user's own Wireshark (tshark and a Lua plugin: the
installed one, or --plugin) and with protodump, and report every game-layer field that differs.

tshark is run as a subprocess (-T json): its JSON is the interface the plugin is checked against everywhere else
(tests/test_parity.py), and a library in between (pyshark) would only re-parse the same JSON.
Exit status: 0 the same, 1 fields differ, 2 tshark or the plugin cannot be run.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click

from ..dissectors import PROTOCOLS

GAMES = tuple(p.name for p in PROTOCOLS)


def _pairs(text: str):
    return json.loads(text, object_pairs_hook=list)


def _flat(obj, path="") -> list[tuple[str, str]]:
    """(key path, value) of every leaf, in order; repeated keys keep their order."""
    out = []
    for key, value in obj:
        if isinstance(value, list):
            out.extend(_flat(value, f"{path}{key}/"))
        else:
            out.append((path + key, value))
    return out


def game_layers(packet) -> list:
    """The game layers of one packet of tshark-shaped JSON (as (key, value) lists)."""
    return [(k, v) for k, v in _pairs_get(_pairs_get(packet, "_source"), "layers") if k in GAMES]


def _pairs_get(obj, key):
    for k, v in obj:
        if k == key:
            return v
    return []


def differences(ours: list, theirs: list, limit: int = 50) -> list[str]:
    """Lines naming each differing field: `frame N: KEY: protodump V, wireshark W`."""
    lines = []
    if len(ours) != len(theirs):
        lines.append(f"frames: protodump {len(ours)}, wireshark {len(theirs)}")
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        fa, fb = _flat(game_layers(a)), _flat(game_layers(b))
        if fa == fb:
            continue
        da, db = dict(fa), dict(fb)
        for key in dict.fromkeys([k for k, _ in fa] + [k for k, _ in fb]):
            if da.get(key) != db.get(key):
                lines.append(f"frame {number}: {key}: protodump {da.get(key, '(absent)')!r}, "
                             f"wireshark {db.get(key, '(absent)')!r}")
        if [k for k, _ in fa] != [k for k, _ in fb] and not any(f"frame {number}:" in x for x in lines):
            lines.append(f"frame {number}: the same fields in another order")
        if len(lines) >= limit:
            lines.append("... (more differences not shown)")
            break
    return lines


def default_plugin() -> Path | None:
    from .lua_cmd import DEFAULT_DIR, PLUGIN_NAME
    installed = DEFAULT_DIR.expanduser() / PLUGIN_NAME
    return installed if installed.exists() else None


@click.command("verify")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False))
@click.option("--plugin", type=click.Path(exists=True, dir_okay=False),
              help="The Lua plugin to load (default: the installed one, as Wireshark loads it).")
@click.option("--tshark", "tshark_path", default="tshark", show_default=True, help="The tshark to run.")
@click.option("-o", "prefs", multiple=True, metavar="NAME:VALUE", help="A preference, for both decoders.")
def verify(capture, plugin, tshark_path, prefs):
    """Compare the decode of CAPTURE by your Wireshark (tshark + the Lua plugin) with protodump's, field by field.

    \b
    Examples:
      protodump lua install && protodump lua verify captures/blank-server-session.pcap
      protodump lua verify --plugin lua/protodump.lua capture.pcap
    """
    tshark = shutil.which(tshark_path)
    if tshark is None:
        click.echo(f"protodump: {tshark_path} not found (install Wireshark's tshark)", err=True)
        sys.exit(2)
    options = [a for p in prefs for a in ("-o", p)]
    command = [tshark, *options, "-r", capture, "-T", "json"]
    if plugin is not None:
        command[1:1] = ["-X", f"lua_script:{plugin}"]
    elif default_plugin() is None:
        click.echo("protodump: no installed plugin (protodump lua install, or --plugin FILE)", err=True)
        sys.exit(2)
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0 or not run.stdout.strip():
        click.echo(f"protodump: tshark failed: {run.stderr.strip().splitlines()[-1:] or run.returncode}", err=True)
        sys.exit(2)
    from .read_cmd import parse_prefs
    from ..engine.dispatch import Settings
    from ..output.json_out import packet_text
    from ..session import packets
    ours = [_pairs(packet_text(p)) for p in packets(capture, Settings(parse_prefs(prefs), {}))]
    theirs = _pairs(run.stdout)
    lines = differences(ours, theirs)
    for line in lines:
        click.echo(line)
    games = sum(1 for p in ours if game_layers(p))
    click.echo(f"{len(ours)} frames, {games} with a game layer: "
               + ("the same in both" if not lines else f"{len(lines)} difference{'s' if len(lines) > 1 else ''}"))
    sys.exit(1 if lines else 0)
