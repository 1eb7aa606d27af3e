#!/usr/bin/env python3
"""Record real loopback traffic inside a private network namespace.

The traffic goes through real kernel UDP/TCP sockets on ``lo`` of a fresh
network namespace (``unshare -n``, or ``unshare --net --map-current-user
--keep-caps`` when that fails, e.g. not root) and is captured by tcpdump,
so the pcap files look like real captures (real IP ids, checksums, TCP
options, timestamps...).  ``available()`` returns None or a reason why
recording cannot work here (for pytest skips).

API::

    record_udp([("c2s", b"ping"), ("s2c", b"pong")], "out.pcap", server_port=12354)
    record_tcp([("c2s", b"GET / HTTP/1.0\\r\\n\\r\\n"), ("s2c", b"..."),
                ("close", "s2c")], "out.pcap", server_port=8080)

CLI (one JSON object per line on stdin)::

    python tools/netns_record.py udp --port 23456 --out x.pcap < datagrams.jsonl
    python tools/netns_record.py tcp --port 8080 --out y.pcap < script.jsonl

  lines: {"dir": "c2s", "hex": "0102"} | {"dir": "s2c", "text": "hi"}
         | {"close": "c2s"} (tcp only: that side sends FIN) | {"sleep": 0.1}

How it works: the public functions re-exec this file as
``unshare -n python3 netns_record.py --inner`` with a JSON spec on stdin.
The inner process brings ``lo`` up (and sets MTU / offloads), starts
``tcpdump -U --immediate-mode``, waits for "listening on", runs the
traffic (every payload is received by the peer before the next one is
sent), waits until the capture file stops growing and stops tcpdump with
SIGINT.  The namespace disappears when the inner process exits.

Limits: netem is not built into this kernel (CONFIG_NET_SCH_NETEM unset), so
there is no loss/reorder hook.  Linktypes: "ethernet" (``-i lo``,
DLT_EN10MB with zero MACs), "cooked" (``-i any -y LINUX_SLL``) and
"cooked2" (``-i any -y LINUX_SLL2``, what tcpdump 4.99 uses for ``-i any``
by default).  On failure the partial capture file is removed.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

_LINKTYPES = {
    "ethernet": ["-i", "lo"],
    "cooked": ["-i", "any", "-y", "LINUX_SLL"],  # "any" defaults to SLL2
    "cooked2": ["-i", "any", "-y", "LINUX_SLL2"],
}
_UNSHARE_CMD = None  # cached result of _unshare_prefix()
RECV_TIMEOUT = 10.0  # seconds to wait for any one payload to arrive


class RecordError(RuntimeError):
    pass


# --------------------------------------------------------------------------
# outer side: public API
# --------------------------------------------------------------------------

def available():
    """Return None if recording works here, else a reason string."""
    for tool in ("unshare", "tcpdump", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    if _unshare_prefix() is None:
        return "cannot create a network namespace (unshare -n failed)"
    return None


def _unshare_prefix():
    global _UNSHARE_CMD
    if _UNSHARE_CMD is None:
        _UNSHARE_CMD = []
        # Not --map-root-user: Debian's tcpdump then tries to drop to user
        # "tcpdump", which fails in a user namespace.  As the current user
        # with ambient caps it keeps its privileges and needs no drop.
        for cmd in (["unshare", "-n"],
                    ["unshare", "--net", "--map-current-user", "--keep-caps"]):
            try:
                ok = subprocess.run(cmd + ["true"], stdin=subprocess.DEVNULL,
                                    capture_output=True, timeout=10).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                _UNSHARE_CMD = cmd
                break
    return _UNSHARE_CMD or None


def _check_common(out_path, linktype, server_addr):
    if linktype not in _LINKTYPES:
        raise ValueError(f"linktype must be one of {sorted(_LINKTYPES)}")
    socket.getaddrinfo(server_addr, 0, 0, 0, 0, socket.AI_NUMERICHOST)
    return os.path.abspath(out_path)


def _norm_steps(steps, allow_close):
    out = []
    for step in steps:
        kind, arg = step
        if kind in ("c2s", "s2c"):
            out.append([kind, bytes(arg).hex()])
        elif kind == "sleep":
            out.append([kind, float(arg)])
        elif kind == "close" and allow_close and arg in ("c2s", "s2c"):
            out.append([kind, arg])
        else:
            raise ValueError(f"bad step {step!r}")
    return out


def record_udp(datagrams, out_path, *, server_port=12354, client_port=None,
               server_addr="127.0.0.1", gap=0.0, linktype="ethernet",
               nano=False, mtu=None, timeout=60):
    """Send ``datagrams`` ([(dir, bytes)], dir "c2s"/"s2c") between two real
    UDP sockets on loopback and write the tcpdump capture to ``out_path``.

    Client and server both use ``server_addr`` (127.0.0.1 or ::1).  ``mtu``
    sets the lo MTU (e.g. 1500 to get IP fragments for big datagrams).
    """
    spec = dict(proto="udp", steps=_norm_steps(datagrams, False),
                out=_check_common(out_path, linktype, server_addr),
                server_port=server_port, client_port=client_port,
                addr=server_addr, gap=gap, linktype=linktype, nano=nano,
                mtu=mtu, offloads_off=False, nodelay=False)
    _run_in_netns(spec, timeout)


def record_tcp(script, out_path, *, server_port=12355, client_port=None,
               server_addr="127.0.0.1", mtu=1500, offloads_off=True,
               nodelay=True, gap=0.0, linktype="ethernet", nano=False,
               timeout=60, mptcp=None, drop=0, slow_reader=None):
    """Run ``script`` over one real TCP connection on loopback.

    Steps: ("c2s"|"s2c", bytes) = one sendall() from that side, fully read
    by the peer before the next step; ("close", "c2s"|"s2c") = that side
    shuts down its write half (FIN); ("sleep", seconds).  At the end both
    sides send FIN (if not yet done) and read to EOF.  The lo MTU is set to
    ``mtu`` and TSO/GSO/GRO are switched off so segments are <= MTU.

    ``mptcp``: a list of ``ip mptcp`` argument strings (e.g. ``"endpoint add 127.0.0.2 dev lo signal"``) run in
    the namespace first; the connection is then Multipath TCP (IPPROTO_MPTCP sockets, the listener on the
    wildcard address so that joined subflows to another local address are accepted).

    ``drop``: the percentage of TCP segments dropped at random on input (nftables, after the capture saw them):
    a lossy link, so the capture has the retransmissions, duplicate ACKs and SACKs of a real recovery.

    ``slow_reader``: (receive buffer, bytes per read, seconds between reads): every receiving side has that
    SO_RCVBUF (set before the connection, so it is in the window scale too) and reads a step's bytes that slowly
    while the sender's sendall() runs in a thread: a client on a slow link, whose capture shows the window fill,
    zero windows, zero-window probes and window updates.
    """
    spec = dict(proto="tcp", mptcp=mptcp, drop=drop, steps=_norm_steps(script, True),
                out=_check_common(out_path, linktype, server_addr),
                server_port=server_port, client_port=client_port,
                addr=server_addr, gap=gap, linktype=linktype, nano=nano,
                mtu=mtu, offloads_off=offloads_off, nodelay=nodelay, slow_reader=slow_reader)
    _run_in_netns(spec, timeout)


def _run_in_netns(spec, timeout):
    prefix = _unshare_prefix()
    if prefix is None:
        raise RecordError("cannot create a network namespace (unshare)")
    cmd = prefix + [sys.executable, os.path.abspath(__file__), "--inner"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    ok = False
    try:
        try:
            _, err = proc.communicate(json.dumps(spec).encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RecordError(f"recording timed out after {timeout}s") from None
        if proc.returncode != 0:
            raise RecordError(f"recording failed (rc={proc.returncode}):\n"
                              + err.decode(errors="replace"))
        ok = True
    finally:
        if proc.poll() is None:  # kills the inner python and its tcpdump
            os.killpg(proc.pid, signal.SIGKILL)  # (our own new session only)
            proc.communicate()
        if not ok and os.path.exists(spec["out"]):
            os.unlink(spec["out"])  # never leave a partial capture behind


# --------------------------------------------------------------------------
# inner side: runs inside the fresh namespace
# --------------------------------------------------------------------------

def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: tcpdump gets SIGTERM if the inner python dies.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except Exception:
        pass


# The kernel's ephemeral ports (32768-60999) include ports that tshark decodes
# as something else (34962 is PROFINET, 44818 EtherNet/IP, ...): a client that
# happened to get one made a recording decode differently, one run in thousands.
# This range holds no port that protodump or tshark 4.0 registers (`tshark -G decodes`).
EPHEMERAL_PORTS = (50000, 53999)


def _setup_lo(spec):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with open("/proc/sys/net/ipv4/ip_local_port_range", "w") as f:  # this namespace's only
        f.write("%d %d" % EPHEMERAL_PORTS)
    if spec["mtu"]:
        subprocess.run(["ip", "link", "set", "lo", "mtu", str(spec["mtu"])],
                       check=True)
    if spec["offloads_off"] and shutil.which("ethtool"):
        subprocess.run(["ethtool", "-K", "lo", "tso", "off", "gso", "off",
                        "gro", "off"], check=False, capture_output=True)
    if spec.get("drop"):
        if not shutil.which("nft"):
            raise RecordError("dropping packets needs nftables (nft)")
        for rule in ("add table inet loss",
                     "add chain inet loss input { type filter hook input priority 0 ; }",
                     f"add rule inet loss input meta l4proto {spec['proto']} numgen random mod 100 < {int(spec['drop'])} drop"):
            subprocess.run(["nft", *rule.split()], check=True)


def _start_tcpdump(spec):
    cmd = ["tcpdump", *_LINKTYPES[spec["linktype"]], "-w", spec["out"], "-U",
           "--immediate-mode", "-s", "0", "-n"]
    if os.getuid() == 0:
        cmd += ["-Z", "root"]  # else the file is chowned to user "tcpdump"
    if spec["nano"]:
        cmd.append("--time-stamp-precision=nano")
    cmd.append(spec["proto"])
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=_die_with_parent)
    buf, deadline = b"", time.monotonic() + 10
    while b"listening on" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            raise RecordError("tcpdump did not start: " + buf.decode(errors="replace"))
        if select.select([proc.stderr], [], [], left)[0]:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk and proc.wait(timeout=5) is not None:
                continue
            buf += chunk
    return proc


def _stop_tcpdump(proc, out):
    # wait until the capture file stops growing, then SIGINT so tcpdump
    # flushes and closes the file.
    last, stable_since, deadline = -1, time.monotonic(), time.monotonic() + 5
    while time.monotonic() < deadline:
        size = os.path.getsize(out) if os.path.exists(out) else 0
        now = time.monotonic()
        if size != last:
            last, stable_since = size, now
        elif now - stable_since >= 0.3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RecordError("tcpdump did not exit on SIGINT")
    sys.stderr.write(err.decode(errors="replace"))


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise RecordError(f"peer closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def _udp_traffic(spec):
    fam = socket.AF_INET6 if ":" in spec["addr"] else socket.AF_INET
    addr = spec["addr"]
    srv, cli = socket.socket(fam, socket.SOCK_DGRAM), socket.socket(fam, socket.SOCK_DGRAM)
    with srv, cli:
        srv.bind((addr, spec["server_port"]))
        cli.bind((addr, spec["client_port"] or 0))
        ends = {"c2s": (cli, srv), "s2c": (srv, cli)}
        for kind, arg in spec["steps"]:
            if kind == "sleep":
                time.sleep(arg)
                continue
            tx, rx = ends[kind]
            payload = bytes.fromhex(arg)
            rx.settimeout(RECV_TIMEOUT)
            tx.sendto(payload, rx.getsockname()[:2])
            got = rx.recv(65536)  # each datagram is read before the next goes
            if got != payload:
                raise RecordError(f"{kind} datagram mangled ({len(got)} bytes)")
            time.sleep(spec["gap"])


IPPROTO_MPTCP = 262


def _slow_exchange(tx, rx, payload, chunk, pause):
    """tx sends the payload from a thread while rx reads it `chunk` bytes at a time, `pause` seconds apart."""
    import threading
    failed = []

    def send():
        try:
            tx.sendall(payload)
        except OSError as exc:
            failed.append(exc)
    sender = threading.Thread(target=send)
    sender.start()
    data = b""
    while len(data) < len(payload):
        time.sleep(pause)
        piece = rx.recv(min(chunk, len(payload) - len(data)))
        if not piece:
            break
        data += piece
    sender.join()
    if failed:
        raise RecordError(f"send failed: {failed[0]}")
    return data


def _tcp_traffic(spec):
    fam = socket.AF_INET6 if ":" in spec["addr"] else socket.AF_INET
    addr = spec["addr"]
    mptcp = spec.get("mptcp")
    proto = IPPROTO_MPTCP if mptcp is not None else 0
    for args in mptcp or ():
        subprocess.run(["ip", "mptcp", *args.split()], check=True)
    lst, cli = socket.socket(fam, socket.SOCK_STREAM, proto), socket.socket(fam, socket.SOCK_STREAM, proto)
    with lst, cli:
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        slow = spec.get("slow_reader")
        if slow:
            for s in (lst, cli):             # (the accepted socket inherits the listener's)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, slow[0])
        lst.bind(("" if mptcp else addr, spec["server_port"]))
        lst.listen(1)
        if spec["client_port"]:
            cli.bind((addr, spec["client_port"]))
        cli.settimeout(RECV_TIMEOUT)
        cli.connect((addr, spec["server_port"]))
        lst.settimeout(RECV_TIMEOUT)
        srv = lst.accept()[0]
        with srv:
            srv.settimeout(RECV_TIMEOUT)
            if spec["nodelay"]:
                for s in (cli, srv):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            ends = {"c2s": (cli, srv), "s2c": (srv, cli)}
            shut = set()
            for kind, arg in spec["steps"]:
                if kind == "sleep":
                    time.sleep(arg)
                    continue
                if kind == "close":
                    if arg not in shut:
                        ends[arg][0].shutdown(socket.SHUT_WR)
                        if ends[arg][1].recv(1) != b"":
                            raise RecordError("expected EOF after close")
                        shut.add(arg)
                else:
                    if kind in shut:
                        raise RecordError(f"{kind} send after its close")
                    payload = bytes.fromhex(arg)
                    if slow:
                        got = _slow_exchange(ends[kind][0], ends[kind][1], payload, slow[1], slow[2])
                    else:
                        ends[kind][0].sendall(payload)
                        got = _recv_exact(ends[kind][1], len(payload))
                    if got != payload:
                        raise RecordError(f"{kind} data mangled")
                time.sleep(spec["gap"])
            for side in ("c2s", "s2c"):  # client closes first by default
                if side not in shut:
                    ends[side][0].shutdown(socket.SHUT_WR)
                    if ends[side][1].recv(1) != b"":
                        raise RecordError("unexpected data before EOF")
            time.sleep(0.05)  # let the last ACK go out before close()


@contextlib.contextmanager
def recording(spec):
    """Inside the namespace: lo set up, tcpdump writing spec["out"] while the body runs; the file is removed when
    the body fails. spec: out, mtu, offloads_off, linktype, nano, proto (the tcpdump filter)."""
    spec = {"mtu": None, "offloads_off": True, "linktype": "ethernet", "nano": False, "proto": "udp", **spec}
    _setup_lo(spec)
    if os.path.exists(spec["out"]):
        os.unlink(spec["out"])
    dump = _start_tcpdump(spec)
    try:
        yield
    except BaseException:
        dump.kill()
        dump.wait()
        os.unlink(spec["out"])
        raise
    _stop_tcpdump(dump, spec["out"])


def _inner(spec):
    with recording(spec):
        (_udp_traffic if spec["proto"] == "udp" else _tcp_traffic)(spec)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def _parse_jsonl(lines):
    steps = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if "close" in obj:
            steps.append(("close", obj["close"]))
        elif "sleep" in obj:
            steps.append(("sleep", float(obj["sleep"])))
        elif "hex" in obj:
            steps.append((obj["dir"], bytes.fromhex(obj["hex"])))
        elif "text" in obj:
            steps.append((obj["dir"], obj["text"].encode()))
        else:
            raise ValueError(f"line {n}: need hex, text, close or sleep")
    return steps


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--inner"]:
        _inner(json.load(sys.stdin))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("proto", choices=["udp", "tcp"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=None, help="server port")
    ap.add_argument("--client-port", type=int, default=None)
    ap.add_argument("--addr", default="127.0.0.1", help="127.0.0.1 or ::1")
    ap.add_argument("--gap", type=float, default=0.0)
    ap.add_argument("--linktype", choices=sorted(_LINKTYPES), default="ethernet")
    ap.add_argument("--nano", action="store_true")
    ap.add_argument("--mtu", type=int, default=None,
                    help="lo MTU (tcp default 1500, udp default unchanged)")
    ap.add_argument("--offloads-on", action="store_true", help="tcp: keep TSO/GSO/GRO")
    ap.add_argument("--no-nodelay", action="store_true", help="tcp: no TCP_NODELAY")
    ap.add_argument("--in", dest="infile", default="-", help="jsonl (default stdin)")
    a = ap.parse_args(argv)
    if a.infile == "-":
        steps = _parse_jsonl(sys.stdin)
    else:
        with open(a.infile) as f:
            steps = _parse_jsonl(f)
    common = dict(client_port=a.client_port, server_addr=a.addr, gap=a.gap,
                  linktype=a.linktype, nano=a.nano)
    if a.port is not None:
        common["server_port"] = a.port
    if a.proto == "udp":
        record_udp(steps, a.out, mtu=a.mtu, **common)
    else:
        record_tcp(steps, a.out, mtu=a.mtu or 1500, offloads_off=not a.offloads_on,
                   nodelay=not a.no_nodelay, **common)
    return 0


if __name__ == "__main__":
    sys.exit(main())
