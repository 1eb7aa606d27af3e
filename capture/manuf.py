"""Ethernet address names as tshark 4.0 resolves them (addr_resolv.c), from the installed Wireshark's own data:
its `manuf` (OUI -> short and long vendor names, /28 and /36 blocks) and `wka` (well-known addresses and ranges)
files. Reading the installed files keeps the names exactly those of the tshark beside us; without a Wireshark
install there are no names (addresses print as themselves, as tshark without a manuf file). Wireshark 4.2 and
later build the manuf table into the program and ship no file: then `tshark -G manuf` prints it (the same
columns), read once per installed tshark into the cache (~/.cache/protodump).

Why not a library: the PyPI parsers of manuf (manuf, mac-vendor-lookup) ship their own, differently dated copy
and know nothing of tshark's naming of masked ranges ("IPv4mcast_01"), which is what the output must match.
"""
from __future__ import annotations

import mmap
import os
from functools import lru_cache

DIRS = [os.environ.get("WIRESHARK_DATA_DIR", ""), "/usr/share/wireshark", "/usr/local/share/wireshark",
        "/opt/homebrew/share/wireshark", "/Applications/Wireshark.app/Contents/Resources/share/wireshark"]


def _file(name: str) -> str | None:
    for d in DIRS:
        if d and os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def _built_in_manuf() -> str:
    """The manuf table of a tshark that has no manuf file (Wireshark >= 4.2: `tshark -G manuf`), cached per tshark
    binary (its path, size and time: a new package is a new binary); "" without one."""
    import hashlib      # (here: a Wireshark with a manuf file, the common case, never needs them at start-up)
    import shutil
    import subprocess
    from pathlib import Path
    exe = shutil.which("tshark")
    if exe is None:
        return ""
    st = os.stat(exe)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "protodump"
    key = hashlib.sha1(f"{os.path.realpath(exe)} {st.st_size} {st.st_mtime_ns}".encode()).hexdigest()[:16]
    path = cache / f"manuf-{key}.txt"
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        pass
    try:
        text = subprocess.run([exe, "-G", "manuf"], capture_output=True, timeout=60).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return ""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass
    return text


def _prefix(text: str) -> tuple[bytes, int] | None:
    addr, _, bits = text.partition("/")
    try:
        raw = bytes.fromhex(addr.replace(":", "").replace("-", "").replace(".", ""))
    except ValueError:
        return None
    mask = int(bits) if bits.isdigit() else len(raw) * 8
    return raw.ljust(6, b"\0"), mask


def _masked(raw: bytes, mask: int) -> bytes:
    n = int.from_bytes(raw, "big") & ~((1 << (48 - mask)) - 1)
    return n.to_bytes(6, "big")


class Tables:
    """wka is read whole (a few hundred lines); manuf (50,000 lines, 2 MB) is mapped, not read (reading and
    decoding it cost more than the rest of a small capture's start), and only the lines of the OUIs asked about
    are decoded and parsed, so a capture pays for the vendors it shows, not for the file."""

    def __init__(self):
        self.oui: dict[bytes, tuple[str, str]] = {}    # 3 bytes -> (short, long)
        self.exact: dict[bytes, str] = {}              # 6 bytes (wka) -> name
        self.ranges: dict[bytes, str] = {}             # masked 6 bytes (wka, manuf /28 /36) -> name
        self.seen: set[bytes] = set()                  # OUIs whose manuf lines were parsed
        path = _file("manuf")
        self.manuf: bytes | mmap.mmap = b""
        if path:
            with open(path, "rb") as fh:
                try:
                    self.manuf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError):        # (an empty file cannot be mapped)
                    self.manuf = fh.read()
        else:
            self.manuf = _built_in_manuf().encode("utf-8")
        path = _file("wka")
        if path:
            with open(path, encoding="utf-8", errors="replace") as fh:
                self._load(fh, True)

    def ensure(self, oui: bytes) -> None:
        """Parse the manuf lines of one OUI (its /24 entry and any /28, /36 blocks in it)."""
        if oui in self.seen:
            return
        self.seen.add(oui)
        key, text = ("\n" + ":".join(f"{b:02X}" for b in oui)).encode(), self.manuf
        starts = [0] if text[:len(key) - 1] == key[1:] else []     # (the first line has no newline before it)
        at = text.find(key)
        while at >= 0:
            starts.append(at + 1)
            at = text.find(key, at + 1)
        lines = []
        for start in starts:
            end = text.find(b"\n", start)
            lines.append(text[start:end if end >= 0 else len(text)].decode("utf-8", "replace"))
        self._load(lines, False)

    def _load(self, lines, wka: bool) -> None:
        for line in lines:
            if not line.strip() or line.startswith("#"):
                continue
            parts = [p for p in line.rstrip("\n").split("\t") if p]
            if len(parts) < 2:
                continue
            got = _prefix(parts[0])
            if got is None:
                continue
            raw, mask = got
            short = parts[1].split("#")[0].strip()
            if mask == 48:
                self.exact.setdefault(raw, short)
            elif mask == 24 and not wka:
                self.oui.setdefault(raw[:3], (short, parts[2].strip() if len(parts) > 2 else short))
            else:
                self.ranges.setdefault(_masked(raw, mask), short)


RESOLVE = {"mac": True}     # tshark's -N m (on by default); -n turns it off


def set_resolution(mac: bool) -> None:
    RESOLVE["mac"] = mac


def resolved(mac: bytes) -> str | None:
    """The name to show for an address, or None when MAC name resolution is off (tshark -n)."""
    return eth_name(mac) if RESOLVE["mac"] else None


@lru_cache(maxsize=1)
def tables() -> Tables:
    return Tables()


def oui_name(mac: bytes) -> str | None:
    """eth.*.oui_resolved: the long vendor name of the address's 24-bit OUI, if Wireshark knows it."""
    t = tables()
    t.ensure(mac[:3])
    entry = t.oui.get(mac[:3])
    return entry[1] if entry else None


@lru_cache(maxsize=4096)
def eth_name(mac: bytes) -> str:
    """eth.*_resolved, as get_ether_name(): a well-known address, a masked well-known range, the OUI's short name
    with the rest of the address, or the address itself."""
    t = tables()
    t.ensure(mac[:3])
    name = t.exact.get(mac)
    if name:
        return name
    ranges = t.ranges
    for lo, fmt in ((40, "{}_{:02x}"), (32, "{}_{:02x}:{:02x}"), (24, "{}_{:02x}:{:02x}:{:02x}")):
        for m in range(7, -1, -1):     # (down to the byte boundary: 01:00:5e:00:00:fb is "IPv4mcast_fb")
            name = ranges.get(_masked(mac, lo + m))
            if name:
                keep = 6 - lo // 8
                tail = [mac[6 - keep] & (0xFF >> m), *mac[7 - keep:]]
                return fmt.format(name, *tail)
    entry = t.oui.get(mac[:3])
    if entry is None and mac[0] & 1:      # a group address: its vendor's OUI, the group bit cleared (not the local bit)
        oui = bytes((mac[0] & 0xFE,)) + mac[1:3]
        t.ensure(oui)
        entry = t.oui.get(oui)
    if entry:
        return f"{entry[0]}_{mac[3]:02x}:{mac[4]:02x}:{mac[5]:02x}"
    for mask in range(24, 0, -1):      # wider well-known ranges ("IPv6mcast_ff:00:00:02" for 33:33::/16)
        name = ranges.get(_masked(mac, mask))
        if name:
            first = mask // 8
            tail = [mac[first] & (0xFF >> (mask % 8)), *mac[first + 1:]]
            return name + "_" + ":".join(f"{b:02x}" for b in tail)
    return mac.hex(":")
