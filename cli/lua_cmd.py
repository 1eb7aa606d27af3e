"""`protodump lua generate|install`: the Wireshark plugin, compiled from the same field tables."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import click

from ..dissectors import PROTOCOLS
from ..engine.lua_backend import generate
from .verify_cmd import verify

PLUGIN_NAME = "protodump.lua"
DEFAULT_DIR = Path("~/.local/lib/wireshark/plugins")


@click.group()
def lua():
    """The generated Wireshark/tshark Lua plugin.

    \b
    Examples:
      protodump lua generate                 # writes lua/protodump.lua
      protodump lua generate -o /tmp/x.lua
      protodump lua install                  # into ~/.local/lib/wireshark/plugins
      protodump lua verify capture.pcap      # your Wireshark + the installed plugin against protodump
      tshark -X lua_script:lua/protodump.lua -r captures/blank-server-session.pcap
    """


@lua.command("generate")
@click.option("-o", "output", type=click.Path(dir_okay=False), default=f"lua/{PLUGIN_NAME}", show_default=True,
              help="Where to write the plugin.")
def generate_cmd(output):
    """Write the plugin generated from the field tables."""
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(generate(PROTOCOLS))
    click.echo(f"wrote {path}")


def wireshark_facts(tshark: str | None = None) -> tuple[tuple[int, int] | None, list[Path]]:
    """(major, minor) of the tshark on PATH and its Lua plugin folders (personal, global), from `tshark -G
    folders`; (None, []) without tshark."""
    tshark = tshark or shutil.which("tshark")
    if tshark is None:
        return None, []
    try:
        ver = subprocess.run([tshark, "--version"], capture_output=True, text=True, timeout=30).stdout
        folders = subprocess.run([tshark, "-G", "folders"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None, []
    m = re.search(r"(\d+)\.(\d+)\.\d+", ver)
    dirs = [Path(line.split("\t", 1)[1].strip()) for line in folders.splitlines()
            if line.startswith(("Personal Lua Plugins", "Global Lua Plugins")) and "\t" in line]
    return ((int(m.group(1)), int(m.group(2))) if m else None), dirs


def refuses_lua(version: tuple[int, int] | None, uid: int) -> bool:
    """Wireshark >= 4.2 loads no Lua plugin when run as root."""
    return uid == 0 and version is not None and version >= (4, 2)


def other_copies(folders: list[Path], target: Path, text: str) -> list[tuple[Path, str]]:
    """Plugin copies (ours by their first line) in Wireshark's Lua folders other than `target` or differing
    from `text`: (path, why). Wireshark loads every .lua file in them, and two copies cannot both register."""
    found = []
    for folder in dict.fromkeys(folders):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.lua")):
            try:
                head = path.read_text(errors="replace")[:200]
            except OSError:
                continue
            if not head.startswith("-- protodump.lua"):
                continue
            if path.resolve() != target.resolve():
                found.append((path, "another copy, also loaded: Wireshark will refuse the second one"))
            elif path.read_text(errors="replace") != text:
                version = re.search(r"-- protodump version: (\S+)", path.read_text(errors="replace"))
                found.append((path, f"a different copy (version {version.group(1) if version else 'unknown'}) "
                                    "was there: replaced"))
    return found


@lua.command("install")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=str(DEFAULT_DIR), show_default=True,
              help="Wireshark's personal Lua plugin folder.")
def install_cmd(directory):
    """Generate the plugin into Wireshark's personal plugin folder.

    Says when another or a different copy of the plugin is installed (Wireshark loads every copy it finds and
    refuses the second), and when the Wireshark on PATH would load no Lua at all (root on Wireshark >= 4.2).
    """
    folder = Path(directory).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / PLUGIN_NAME
    text = generate(PROTOCOLS)
    version, lua_dirs = wireshark_facts()
    notes = other_copies([folder, *lua_dirs], target, text)
    target.write_text(text)
    click.echo(f"installed {target}\nWireshark and tshark load it at start (check: tshark -G plugins | grep protodump)")
    for path, why in notes:
        click.echo(f"note: {path}: {why}", err=True)
    if any("also loaded" in why for _, why in notes):
        click.echo("note: `tshark -X lua_script:FILE` with a copy installed fails to load FILE "
                   "(\"there cannot be two protocols\"); remove the other copies", err=True)
    if refuses_lua(version, os.geteuid()):
        click.echo(f"warning: Wireshark {version[0]}.{version[1]} runs no Lua plugin as root: run Wireshark or "
                   "tshark as a normal user (and install the plugin as that user)", err=True)


lua.add_command(verify)
