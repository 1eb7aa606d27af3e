"""tools/parity_report.py --whole, as a user runs it from the repository root: the share of whole frames identical
to tshark + plugin per capture (and per -d/-o variant), the frames that are not with where, exit 1 under 99 %."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


def test_whole_report(system_tshark, tmp_path):
    if " 4.0." not in system_tshark.version():     # the tool runs the system's tshark; the standard layers are 4.0's
        pytest.skip(f"the system tshark is not 4.0 ({system_tshark.version()})")
    from scapy.all import DNS, DNSQR, IP, UDP, Ether, Raw, wrpcap

    from test_websocket import delivery_pcap
    made = tmp_path / "text-messages.pcap"        # its last frame: two text messages (tshark's data-text-lines)
    delivery_pcap(made, text=True)
    dns = tmp_path / "dns.pcap"                   # a DNS query (tshark's dns; protodump has no DNS), then plain data
    link = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2")
    wrpcap(str(dns), [link / UDP(sport=40000, dport=53) / DNS(rd=1, qd=DNSQR(qname="example.com")),
                      link / UDP(sport=40001, dport=40002) / Raw(b"hello")])
    run = subprocess.run([sys.executable, "tools/parity_report.py", "--whole", "captures/blank-2015.pcap",
                          "captures/websocket-bad.pcap", str(made), str(dns)], cwd=ROOT, capture_output=True,
                         text=True)
    out = run.stdout
    assert "| blank-2015.pcap | 12 | 12 | 100.0 % | 0 | 0 |" in out, run.stderr
    assert "| blank-2015.pcap [-o blank.revision:2015] | 12 | 12 | 100.0 % | 0 | 0 |" in out
    assert "| websocket-bad.pcap | 27 | 27 | 100.0 % | 0 | 0 |" in out
    assert "| text-messages.pcap | 10 | 10 | 100.0 % | 0 | 0 |" in out
    # a difference is named with the first place it shows
    assert "| dns.pcap | 2 | 1 | 50.0 % | 0 | 1 |" in out
    assert "dns.pcap frame 1: /frame/frame.protocols: 'eth:ethertype:ip:udp:data' (protodump) vs " \
           "'eth:ethertype:ip:udp:dns' (tshark)" in out
    assert run.returncode == 1             # a capture under 99 %
    ok = subprocess.run([sys.executable, "tools/parity_report.py", "--whole", "captures/blank-2015.pcap"], cwd=ROOT,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "Frames not identical" not in ok.stdout
