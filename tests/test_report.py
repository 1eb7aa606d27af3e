"""protodump report: one self-contained HTML page, opened in a real headless browser (Debian's chromium): it loads
with no console message, every plot has a drawn area (read back from the page, then checked in a screenshot for
non-blank pixels); captures with thousands of conversations are summarised within bounds."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest

from conftest import CAPTURES_DIR

pytest.importorskip("matplotlib")
PROTODUMP = str(Path(sys.executable).with_name("protodump"))
CHROMIUM = shutil.which("chromium")
WINDOW = (1200, 7000)


def report(capture, out: Path) -> str:
    run = subprocess.run([PROTODUMP, "report", str(capture), "-o", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return out.read_text(encoding="utf-8")


def chromium(tmp_path: Path, page: Path, *what: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           f"--window-size={WINDOW[0]},{WINDOW[1]}", *what, page.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_page_is_self_contained(tmp_path):
    html = report(CAPTURES_DIR / "iceball-enet-session.pcap", tmp_path / "r.html")
    assert not re.search(r"""\ssrc=|href=["']?(https?:|//)|url\((?!#)|@import|<link""", html)   # url(#id): in-page
    for text in ("*MAP", "pkg/base/main_client.lua", "pybot", "hello from a headless bot", "Bandwidth by message type",
                 "ENet round-trip time"):
        assert text in html
    assert html.count('<div class="plot">') == 4       # players, bandwidth, ENet RTT, transfers


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("capture", ["iceball-enet-session.pcap", "freeblox-session.pcap",
                                     "rutentoy-login-texture.pcap", "iceball-tcp-bad.pcap"])
def test_page_renders_in_chromium(tmp_path, capture):
    from PIL import Image
    page = tmp_path / "report.html"
    html = report(CAPTURES_DIR / capture, page)
    plots = html.count('<div class="plot">')
    assert plots >= 2
    dom = chromium(tmp_path, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert f'data-plots-drawn="{plots}"' in dom.stdout
    rects = [tuple(map(int, r.split(","))) for r in
             re.search(r'data-plot-rects="([^"]*)"', dom.stdout).group(1).split(";")]
    shot = chromium(tmp_path, page, f"--screenshot={tmp_path / 'shot.png'}")
    assert shot.returncode == 0 and [line for line in shot.stderr.splitlines() if ":CONSOLE" in line] == []
    image = Image.open(tmp_path / "shot.png").convert("RGB")
    for left, top, width, height in rects:
        assert top + height <= WINDOW[1]
        area = image.crop((left, top, left + width, top + height))
        colours = area.getcolors(maxcolors=1 << 20)
        inked = sum(n for n, (r, g, b) in colours if min(r, g, b) < 200)
        assert inked > 0.01 * width * height, (capture, left, top)     # axes, lines, bars: not a blank box
        assert len(colours) > 8


def many_conversations(path: Path, count: int) -> None:
    """`count` blank clients (the real session's Login datagram from as many ports), one server."""
    first = next(iter(dpkt.pcap.Reader(open(CAPTURES_DIR / "blank-server-session.pcap", "rb"))))[1]
    login = dpkt.ethernet.Ethernet(first).data.data.data
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for n in range(count):
            udp = dpkt.udp.UDP(sport=20000 + n, dport=12354, data=login)
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=17, data=udp)
            ip.len = len(ip)
            w.writepkt(bytes(dpkt.ethernet.Ethernet(data=ip)), ts=1_700_000_000 + n / 1000)


def test_thousands_of_conversations_are_summarised(tmp_path):
    cap = tmp_path / "many.pcap"
    many_conversations(cap, 3000)
    html = report(cap, tmp_path / "r.html")
    assert "3000 packets, 3000 game conversations" in html
    assert html.count("<tr><td>127.0.0.1:") == 500 and "2500 more conversations are not listed" in html
    assert html.count("<h2 id=\"conv") == 12
    assert len(html) < 5_000_000


def test_truncated_and_bad_files(tmp_path):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes((CAPTURES_DIR / "iceball-enet-session.pcap").read_bytes()[:30000])
    run = subprocess.run([PROTODUMP, "report", str(cut), "-o", str(tmp_path / "cut.html")], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and "truncated" in run.stderr and "pkg/base/main_client.lua" in (
        tmp_path / "cut.html").read_text()
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"garbage")
    run = subprocess.run([PROTODUMP, "report", str(bad), "-o", str(tmp_path / "bad.html")], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and "not a pcap" in run.stderr and not (tmp_path / "bad.html").exists()
