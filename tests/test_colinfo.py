"""-z proto,colinfo,FILTER,FIELD against tshark 4.0 + the plugin: the field's occurrences appended to the Info
column as a display filter names them (integers in hex as wide as their bits, 17-digit floats, quoted strings,
ISO times, colon bytes, the 4095-byte column limit), only for fields something primed (a filter of the run, or
the plugin's Field.new), several taps last first, and tshark's errors."""
from __future__ import annotations

import re

import pytest

from conftest import PLUGIN
from protodump.output.colinfo import PLUGIN_FIELDS, quoted

CASES = [
    ("rutentoy-messages.pcap", ("-z", "proto,colinfo,tcp.flags,tcp.flags", "-z", "proto,colinfo,tcp.analysis,"
                                "tcp.analysis", "-z", "proto,colinfo,tcp.options,tcp.options")),
    ("rutentoy-messages.pcap", ("-z", "proto,colinfo,,frame.time", "-Y", "frame.time", "-z", "proto,colinfo,,ip.addr",
                                "-z", "io,stat,0,ip.addr")),
    ("rutentoy-messages.pcap", ("-z", "proto,colinfo,,tcp.len", "-z", "proto,colinfo,,tcp.srcport",
                                "-z", "proto,colinfo,rutentoy,rutentoy.opcode")),     # primed by the plugin alone
    ("rutentoy-messages.pcap", ("-T", "fields", "-e", "_ws.col.Info", "-e", "tcp.srcport",
                                "-z", "proto,colinfo,tcp,tcp.srcport")),               # -e primes nothing
    ("rutentoy-messages.pcap", ("-P", "-q", "-z", "proto,colinfo,tcp.flags.syn==1,tcp.flags.syn", "-Y", "tcp.ack")),
    ("blank-sequence.pcap", ("-T", "tabs", "-z", "proto,colinfo,blank.sequence,_ws.expert.message",
                             "-z", "proto,colinfo,,blank.type")),
    ("blank-server-session.pcap", ("-z", "proto,colinfo,blank.state,blank.state.velocity.x",
                                   "-z", "proto,colinfo,blank.login.name,blank.login.name")),
    ("iceball-enet-session.pcap", ("-z", "proto,colinfo,enet.compression_ratio,enet.compression_ratio",
                                   "-z", "proto,colinfo,iceball.plr_pos.pos.x,iceball.plr_pos.pos.x")),
    ("freeblox-session.pcap", ("-z", "proto,colinfo,freeblox.stream_asset.buffer,freeblox.stream_asset.buffer",
                               "-z", "proto,colinfo,websocket.payload,websocket.payload",
                               "-z", "proto,colinfo,freeblox.stream_transform.rotation.y,"
                               "freeblox.stream_transform.rotation.y", "-z", "proto,colinfo,,http.request.uri")),
]


@pytest.mark.parametrize("name,args", CASES, ids=[f"{n}:{' '.join(a)}"[:90] for n, a in CASES])
def test_colinfo_is_tsharks(protodump_run, standard_run, name, args):
    ours, theirs = protodump_run(*args, "-r", name), standard_run(*args, "-r", name)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    appended = re.search(r"  [a-z_]+(\.[\w.]+)?( == |\n|$)", ours.stdout, re.M)
    assert bool(appended) == ("-e" not in args)      # (-e primes nothing: tshark appends nothing then)


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), ("-x",)])
def test_colinfo_needs_the_info_column(protodump_run, standard_run, args):
    """Without the Info column printed, the first packet the tap takes ends the run (exit 1), as in tshark."""
    run = (*args, "-z", "proto,colinfo,tcp.len,tcp.len", "-r", "rutentoy-messages.pcap")
    ours, theirs = protodump_run(*run), standard_run(*run)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.replace("protodump:", "tshark:") == theirs.stderr
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("arg", ["proto,colinfo", "proto,colinfo,tcp", "proto,colinfo,tcp,no.such.field",
                                 "proto,colinfo,bad==,tcp.len"])
def test_bad_colinfo_arguments_are_tsharks(protodump_run, standard_run, arg):
    run = ("-z", arg, "-r", "rutentoy-messages.pcap")
    ours, theirs = protodump_run(*run), standard_run(*run)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.replace("protodump:", "tshark:") == theirs.stderr
    assert ours.stdout == ""


def test_plugin_fields_are_what_the_plugin_primes():
    """The fields the generated plugin reads with Field.new as it loads (tshark then finds them for the tap)."""
    lua = PLUGIN.read_text()
    names = set(re.findall(r'(?<![\w.])(?:stream_field|get|Field\.new)\("([\w.]+)"\)', lua))
    for proto, types, sequence in re.findall(r'rt\.game_stats\("(\w+)", \{ ([^}]*) \}, (true|false)\)', lua):
        names.update([proto, *re.findall(r'"([\w.]+)"', types)])
        if sequence == "true":
            names.add("_ws.expert.message")
    assert names == PLUGIN_FIELDS


@pytest.mark.parametrize("text,expected", [("a", '"a"'), ('say "hi"\\', '"say \\"hi\\"\\\\"'),
                                           ("tab\tnl\n", '"tab\\tnl\\n"'), ("\x01\x7f", '"\\x01\\x7f"'),
                                           ("日本 🎉", '"日本 🎉"')])
def test_strings_are_quoted_as_a_display_filter_writes_them(text, expected):
    assert quoted(text) == expected
