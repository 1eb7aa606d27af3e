"""Live capture: frames from a network interface as a stream of `RawFrame`s, like capture files give.

scapy opens the socket (an AF_PACKET L2ListenSocket, bound to the interface, with the BPF filter compiled by
libpcap for the interface's link type and attached in the kernel). Frames are then read here with recvmsg,
because scapy's reader gives float timestamps (nanoseconds lost) and keeps loopback's outgoing copies
(every packet twice on lo: libpcap drops those, and so do we).

The frame stream stops on SIGINT/SIGTERM (Ctrl-C), after `duration` seconds or `limit` frames; stopping is a
flag checked between short select() waits, so a signal never interrupts decoding or output half-way.
Errors a user can fix (no such interface, no privilege, bad filter) are `LiveError` with one clear line.
"""
from __future__ import annotations

import logging
import os
import re
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator

from .files import Interface, RawFrame

SNAPLEN = 262144                  # tshark's default: whole frames (GRO/GSO frames on lo can exceed 64 KiB)
POLL = 0.1                        # seconds between checks of the stop conditions
ARPHRD_LOOPBACK = 772
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_AUXDATA = 8
SO_TIMESTAMPNS = 35
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("IIIHHHH")      # struct tpacket_auxdata
_TIMESPEC = struct.Struct("qq")
_ANC_SIZE = socket.CMSG_SPACE(_AUXDATA.size) + socket.CMSG_SPACE(_TIMESPEC.size)


ANY = "any"                       # libpcap's pseudo-interface: every interface, cooked (LINKTYPE_LINUX_SLL) frames
LINKTYPE_LINUX_SLL = 113
_SLL = struct.Struct("!HHH8sH")    # packet type, ARPHRD type, address length, address, protocol


class LiveError(Exception):
    """A capture that cannot start; the message is one line for the user."""


def interfaces() -> list[tuple[str, str]]:
    """(name, description) of the capturable interfaces, in tshark -D's order (libpcap's "figure of merit":
    running and up first, loopback after the others, then by the number ending the name; stable otherwise)."""
    rows = []
    for _, name in socket.if_nameindex():
        loopback = _sysfs(name, "type") == str(ARPHRD_LOOPBACK)
        flags = int(_sysfs(name, "flags") or "0", 16)
        digits = re.search(r"[0-9]*$", name).group()
        merit = int(digits) if digits else 0
        # IFF_RUNNING as the SIOCGIFFLAGS ioctl reports it: sysfs "flags" leaves it out, operstate says it
        running = flags & 0x40 or _sysfs(name, "operstate") in ("up", "unknown")
        merit |= (0 if running else 0x80000000) | (0 if flags & 0x1 else 0x40000000)   # IFF_RUNNING, IFF_UP
        merit |= 0x10000000 if loopback else 0
        rows.append((merit, name, "Loopback" if loopback else ""))
    # libpcap adds "any" last, up and running, no digits: it sorts after the first interfaces of merit 0
    rows.append((0, ANY, ""))
    return [(name, desc) for _, name, desc in sorted(rows, key=lambda row: row[0])]


def _sysfs(name: str, attr: str) -> str:
    try:
        with open(f"/sys/class/net/{name}/{attr}") as f:
            return f.read().strip()
    except OSError:
        return ""


def resolve(iface: str) -> str:
    """An interface name, or its number in the `interfaces()` list (as tshark -i 3)."""
    names = [name for name, _ in interfaces()]
    if iface not in names and iface.isdigit() and 1 <= int(iface) <= len(names):
        return names[int(iface) - 1]
    if iface == ANY:
        return iface
    try:
        socket.if_nametoindex(iface)
    except OSError:
        raise LiveError(f"no such interface: {iface!r} (protodump -D lists them)") from None
    return iface


def _check_privilege(iface: str) -> None:
    # Opening the packet socket is what needs the capability: try it alone for a precise message.
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)).close()
    except PermissionError:
        raise LiveError(f"capturing on {iface} needs CAP_NET_RAW (run as root, or give it to the interpreter: "
                        f"sudo setcap cap_net_raw,cap_net_admin+eip {os.path.realpath(sys.executable)})") from None


class LiveCapture:
    """An open live capture on one interface; iterate it for RawFrames (numbered from 1)."""

    def __init__(self, iface: str, bpf: str | None = None, *, duration: float | None = None,
                 limit: int | None = None):
        if not sys.platform.startswith("linux"):
            raise LiveError("live capture is only supported on Linux")
        self.interface = resolve(iface)
        self._iface = Interface(1, self.interface, None, 9)
        _check_privilege(self.interface)
        # scapy warns on stderr that it cannot map the link type to one of its layers (not loaded: unused here).
        logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
        from scapy.arch.linux import L2ListenSocket
        from scapy.data import ARPHRD_TO_DLT
        from scapy.error import Scapy_Exception
        self.duration, self.limit = duration, limit
        self.captured = 0
        self.stopped = False
        if self.interface == ANY:
            self._open_any(bpf)
            return
        try:
            self._sock = L2ListenSocket(iface=self.interface, filter=bpf or None)
        except Scapy_Exception as exc:
            raise LiveError(f"bad capture filter {bpf!r}: {_filter_message(exc)}") from None
        except PermissionError:
            raise LiveError(f"capturing on {self.interface} needs CAP_NET_RAW and CAP_NET_ADMIN") from None
        except OSError as exc:
            raise LiveError(f"cannot capture on {self.interface}: {exc.strerror or exc}") from None
        self._ins: socket.socket = self._sock.ins
        hatype = self._ins.getsockname()[3]
        self.loopback = hatype == ARPHRD_LOOPBACK
        dlt = ARPHRD_TO_DLT.get(hatype, 1)
        self.linktype = 101 if dlt in (12, 14) else dlt      # DLT_RAW's number in files is LINKTYPE_RAW

    def _open_any(self, bpf: str | None) -> None:
        """-i any: one packet socket on every interface, cooked (SOCK_DGRAM: no link header), each frame given
        libpcap's Linux cooked header from its sockaddr_ll, as libpcap does for "any". A capture filter is
        compiled for raw IP (what the kernel filters here), so link-layer primitives (ether host) do not apply."""
        from scapy.arch.common import compile_filter
        from scapy.arch.linux import SO_ATTACH_FILTER, free_filter
        from scapy.libs.structures import sock_fprog
        from scapy.error import Scapy_Exception
        self._sock = None
        self._ins = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
        self._ins.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        self._ins.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        if bpf:
            try:     # the kernel filters a cooked socket's data, which starts at the network header: raw IP
                program = compile_filter(bpf, linktype=101)
            except Scapy_Exception as exc:
                self._ins.close()
                raise LiveError(f"bad capture filter {bpf!r}: {_filter_message(exc)}") from None
            self._ins.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, sock_fprog(program.bf_len, program.bf_insns))
            free_filter(program)
        self.loopback = False            # "any" keeps both copies of a loopback packet, as libpcap does
        self.linktype = LINKTYPE_LINUX_SLL

    def stop(self, *_signal_args) -> None:
        self.stopped = True

    def __iter__(self) -> Iterator[RawFrame]:
        handlers = {sig: signal.signal(sig, self.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        deadline = time.monotonic() + self.duration if self.duration is not None else None
        try:
            while not self.stopped and (self.limit is None or self.captured < self.limit):
                wait = POLL if deadline is None else min(POLL, deadline - time.monotonic())
                if wait <= 0:
                    break
                if not select.select([self._ins], [], [], wait)[0]:
                    continue
                frame = self._read()
                if frame is not None:
                    yield frame
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            self.close()

    def _read(self) -> RawFrame | None:
        data, anc, _, addr = self._ins.recvmsg(SNAPLEN, _ANC_SIZE)
        if self.loopback and addr[2] == PACKET_OUTGOING:
            return None               # lo shows every packet leaving and arriving: keep the arrival only
        if self.linktype == LINKTYPE_LINUX_SLL:
            _, protocol, pkttype, hatype, haddr = addr[:5]
            data = _SLL.pack(pkttype, hatype, len(haddr), haddr[:8].ljust(8, b"\0"), protocol) + data
        ts_ns, length = None, len(data)
        for level, kind, value in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(value) >= _AUXDATA.size:
                status, length, _, _, _, tci, tpid = _AUXDATA.unpack_from(value)
                if (tci or status & TP_STATUS_VLAN_VALID) and self.linktype == 1:
                    # The NIC took the VLAN tag off: put it back, as libpcap does.
                    tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                    data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
                    length += 4
            elif level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(value)
                ts_ns = sec * 1_000_000_000 + nsec
        self.captured += 1
        # as tshark's live frames (dumpcap's pcapng): nanosecond stamps, the interface named
        return RawFrame(self.captured, ts_ns if ts_ns is not None else time.time_ns(), len(data),
                        max(length, len(data)), self.linktype, 0, data, 9, self._iface)

    def close(self) -> None:
        (self._sock or self._ins).close()


def _filter_message(exc: Exception) -> str:
    # scapy wraps libpcap's words in its own ("Cannot set filter: Failed to compile filter expression ...").
    text = str(exc)
    inner = re.search(r"\(([^()]*)\)$", text)
    return inner.group(1) if inner else text.removeprefix("Cannot set filter: ")


def open_live(iface: str, bpf: str | None = None, *, duration: float | None = None,
              limit: int | None = None) -> LiveCapture:
    """Start capturing on `iface` (name or -D number) with an optional BPF filter; LiveError if it cannot."""
    return LiveCapture(iface, bpf, duration=duration, limit=limit)
