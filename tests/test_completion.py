"""Shell completion through click's protocol (what the bash/zsh/fish scripts call): capture files in first
position, fields after -e and inside -Y, -z statistics, -o preferences and values, protocol lists."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import CAPTURES_DIR, PROTODUMP


def complete(*words: str) -> list[str]:
    env = dict(os.environ, COMP_WORDS=" ".join(["protodump", *words]), COMP_CWORD=str(len(words)),
               _PROTODUMP_COMPLETE="bash_complete")
    r = subprocess.run([*PROTODUMP], env=env, capture_output=True, text=True, cwd=CAPTURES_DIR, timeout=60)
    return r.stdout.splitlines()


@pytest.mark.parametrize("words, expected", [
    (("blank",), "file,blank"),
    (("x.pcap", "-e", "blank.login.n"), "plain,blank.login.name"),
    (("x.pcap", "-e", "_ws.col.In"), "plain,_ws.col.Info"),
    (("x.pcap", "-Y", "blank.type==1&&blank.login.n"), "plain,blank.type==1&&blank.login.name"),
    (("x.pcap", "-Y", "le"), "plain,len("),
    (("x.pcap", "-z", "io,s"), "plain,io,stat,"),
    (("x.pcap", "-o", "blank.rev"), "plain,blank.revision:"),
    (("x.pcap", "-o", "blank.revision:2"), "plain,blank.revision:2015"),
    (("x.pcap", "-O", "ip,bla"), "plain,ip,blank"),
    (("x.pcap", "-j", "iceb"), "plain,iceball"),
    (("x.pcap", "-d", "udp.port==9,bl"), "plain,udp.port==9,blank"),
])
def test_candidates(words, expected):
    assert expected in complete(*words)


def test_first_word_offers_commands_and_files():
    found = complete("")
    assert "file," in found and "plain,check" in found and "plain,lua" in found
