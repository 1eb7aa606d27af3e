"""`protodump lua generate|install`: the Wireshark plugin, compiled from the same field tables."""
from __future__ import annotations

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


@lua.command("install")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=str(DEFAULT_DIR), show_default=True,
              help="Wireshark's personal Lua plugin folder.")
def install_cmd(directory):
    """Generate the plugin into Wireshark's personal plugin folder."""
    folder = Path(directory).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / PLUGIN_NAME
    target.write_text(generate(PROTOCOLS))
    click.echo(f"installed {target}\nWireshark and tshark load it at start (check: tshark -G protocols | grep blank)")


lua.add_command(verify)
