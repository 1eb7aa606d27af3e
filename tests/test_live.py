"""Live capture (-i, -f, -a, -c, Ctrl-C), -w and -D, for real: protodump captures on lo in a private network
namespace while real UDP sockets exchange a blank session, and the results are checked against what was sent
and against tshark's decode of the -w file (with the generated plugin for the game layer).

One namespace run (module fixture) serves most tests: it runs four captures at once on the same traffic. This
file is also the script run inside the namespace (`unshare -n python3 test_live.py --inner`, spec on stdin)."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib

import pytest

PORT, OTHER_PORT = 12354, 12355
CLIENT_PORT = 51234     # not the kernel's pick: that may be a port tshark decodes as another protocol (34962, ...)
BPF = f"udp port {PORT}"


# --- inside the namespace ---------------------------------------------------------------------------------------

def _started(proc, cmd):
    """Wait until the capture runs (stderr "Capturing on"); what stderr said so far."""
    err, deadline = b"", time.monotonic() + 20
    while b"Capturing on" not in err:                   # the socket and its filter are in place from here
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{cmd} did not start: {err.decode(errors='replace')}")
        if select.select([proc.stderr], [], [], 0.5)[0]:
            err += os.read(proc.stderr.fileno(), 4096)
    return err


def _wait_lines(path, n, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, "rb") as f:
            if f.read().count(b"\n") >= n:
                return
        time.sleep(0.05)


def _inner(spec):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    tmp, prog, n = spec["tmp"], spec["protodump"], spec["expected"]
    runs = {
        "json": [*prog, "-i", "lo", "-f", BPF, "-c", str(n), "-T", "json"],
        "write": [*prog, "-i", "lo", "-f", BPF, "-a", f"packets:{n}", "-w", f"{tmp}/live.pcapng"],
        "sigint": [*prog, "-i", "lo", "-f", BPF],
        "duration": [*prog, "-i", "2", "-f", BPF, "-a", "duration:2", "-q"],    # -i by its -D number (1 is any)
        "list": [*prog, "-D"],
    }
    def start(names):
        t0 = time.monotonic()
        procs = {name: subprocess.Popen(runs[name], stdin=subprocess.DEVNULL, stdout=open(f"{tmp}/{name}.out", "wb"),  # noqa: SIM115
                                        stderr=subprocess.PIPE) for name in names}
        return {name: (proc, _started(proc, runs[name]), t0) for name, proc in procs.items()}

    started = start(["json", "write", "sigint"])
    started.update(start(["duration"]))     # last, so that its 2 s window surely holds all the traffic
    server, client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", PORT))
    client.bind(("127.0.0.1", CLIENT_PORT))
    other.bind(("127.0.0.1", OTHER_PORT))
    ends = {"c2s": (client, server), "s2c": (server, client), "other": (client, other)}
    for direction, payload in spec["steps"]:
        tx, rx = ends[direction]
        payload = bytes.fromhex(payload)
        rx.settimeout(10)
        tx.sendto(payload, rx.getsockname())
        assert rx.recv(65536) == payload                  # each datagram arrives before the next goes
        time.sleep(0.005)
    results = {"client_port": client.getsockname()[1]}
    _wait_lines(f"{tmp}/sigint.out", n)
    started["sigint"][0].send_signal(signal.SIGINT)
    for name, (proc, err, t0) in started.items():
        try:
            rest = proc.communicate(timeout=20)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = proc.communicate()[1] + b"\n(killed: did not stop)"
        with open(f"{tmp}/{name}.out", "rb") as f:
            out = f.read()
        results[name] = {"rc": proc.returncode, "stdout": out.decode(errors="replace"),
                         "stderr": (err + rest).decode(errors="replace"), "seconds": time.monotonic() - t0}
    listed = subprocess.run(runs["list"], capture_output=True, text=True, check=False)
    results["list"] = {"rc": listed.returncode, "stdout": listed.stdout, "stderr": listed.stderr}
    json.dump(results, sys.stdout)


if __name__ == "__main__" and sys.argv[1:] == ["--inner"]:
    _inner(json.load(sys.stdin))
    sys.exit(0)


# --- the tests ------------------------------------------------------------------------------------------------------

from conftest import PLUGIN, PROTODUMP, TSHARK, get, layer_of, packet_layers, raw_layers, tshark_cmd_run
from protodump.dissectors.blank import PROTOCOL


def _netns_reason():
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip not found"
    try:
        ok = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return None if ok else "cannot create a network namespace (unshare -n failed: needs root or user namespaces)"


NETNS = _netns_reason()
needs_netns = pytest.mark.skipif(NETNS is not None, reason=f"live capture test: {NETNS}")

CHUNK = zlib.compress(bytes(range(256)) * 80 + bytes(4), 6)      # 20,484 bytes inflated, as a real chunk
THIRD = -(-len(CHUNK) // 3)
PIECES = [(o, CHUNK[o:o + THIRD]) for o in range(0, len(CHUNK), THIRD)]
GARBAGE = b"\xfb\x1a\xb1\xaf\x01"        # the tag, then a header cut short: malformed


def _session():
    """(direction, payload, expected blank.type or None for malformed) of the blank session sent live."""
    steps = [("c2s", PROTOCOL.encode({"seq": 0, "type": 1, "name": "live"}, pad_to=16 + 32), "1"),
             ("s2c", PROTOCOL.encode({"seq": 0, "type": 0}), "0"),
             ("s2c", PROTOCOL.encode({"seq": 1, "ack": 0, "type": 9, "transmission_id": 7, "flags": 1,
                                      "coords": (1, 2, 3), "data_size": len(CHUNK)}, pad_to=16 + 24), "9")]
    for seq, index in zip((2, 3, 4), (2, 0, 1)):                 # the pieces out of order: reassembly at the end
        offset, piece = PIECES[index]
        steps.append(("s2c", PROTOCOL.encode({"seq": seq, "type": 10, "transmission_id": 7, "offset": offset,
                                              "size": len(piece), "data": piece}), "10"))
    steps += [("other", PROTOCOL.encode({"seq": 9, "type": 0}), None),  # another port: the BPF filter drops it
              ("c2s", GARBAGE, None),
              ("c2s", PROTOCOL.encode({"seq": 1, "type": 12, "msg_type": 0, "referral": 0, "text": "hi"}), "12"),
              ("c2s", PROTOCOL.encode({"seq": 2, "type": 3}), "3")]
    return steps


SESSION = _session()


def _keys(obj) -> set:
    """Every key in a (key, value) list tree."""
    found = set()
    for k, v in obj:
        found.add(k)
        if isinstance(v, list):
            found |= _keys(v)
    return found

CAPTURED = [s for s in SESSION if s[0] != "other"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    if NETNS is not None:
        pytest.skip(f"live capture test: {NETNS}")
    tmp = tmp_path_factory.mktemp("live")
    spec = {"tmp": str(tmp), "protodump": PROTODUMP, "expected": len(CAPTURED),
            "steps": [(d, p.hex()) for d, p, _ in SESSION]}
    proc = subprocess.run(["unshare", "-n", sys.executable, __file__, "--inner"], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=120, cwd=os.path.dirname(__file__), check=False)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    results["pcapng"] = tmp / "live.pcapng"
    return results


@needs_netns
def test_live_json_decodes_the_session_as_it_arrives(live):
    run = live["json"]
    assert run["rc"] == 0, run["stderr"]
    assert run["stderr"].splitlines() == ["Capturing on 'lo'", f"{len(CAPTURED)} packets captured"]
    packets = packet_layers(run["stdout"])
    assert len(packets) == len(CAPTURED)                      # -c stopped it; port 12355 was filtered out
    for layers, (direction, payload, btype) in zip(packets, CAPTURED):
        udp = layer_of(layers, "udp")
        assert bytes.fromhex(get(udp, "udp.payload").replace(":", "")) == payload
        sport = str(live["client_port"]) if direction == "c2s" else str(PORT)
        assert get(udp, "udp.srcport") == sport
        blank = layer_of(layers, "blank")
        assert blank is not None
        if btype is not None:
            assert get(blank, "blank.type") == btype
    # The chunk, sent in three pieces out of order, is reassembled and inflated live in its last piece.
    last_piece = layer_of(packets[5], "blank")
    chunk = get(get(last_piece, "blank.chunk_data.data_tree"), "blank.chunk")
    assert [v for k, v in chunk if k == "blank.chunk.frame"] == ["4", "5", "6"]     # in arrival order
    assert get(chunk, "blank.chunk.size") == str(len(CHUNK))
    assert get(chunk, "blank.chunk.inflated_size") == "20484"
    # The garbage datagram is shown as malformed, and the next packet decodes normally.
    garbage = layer_of(packets[6], "blank")
    assert "_ws.malformed" in _keys(garbage) and get(garbage, "blank.type") is None
    assert get(layer_of(packets[7], "blank"), "blank.type") == "12"


@needs_netns
def test_live_json_equals_file_decode_of_the_w_file(live):
    """The live decode is the decode of the file -w wrote (another capture of the same traffic, at once)."""
    assert live["write"]["rc"] == 0, live["write"]["stderr"]
    assert live["write"]["stdout"] == ""                      # -w without -P prints no packets, as tshark
    from_file = subprocess.run([*PROTODUMP, "-T", "json", str(live["pcapng"])], capture_output=True, text=True, check=False)
    assert from_file.returncode == 0, from_file.stderr
    def strip(text):
        return [[(k, v) for k, v in layers if k != "frame"] for layers in packet_layers(text)]
    assert strip(from_file.stdout) == strip(live["json"]["stdout"])


@needs_netns
@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_w_file_reads_in_tshark_as_sent(live):
    path = str(live["pcapng"])
    rows = subprocess.run([TSHARK, "-r", path, "-T", "fields", "-e", "frame.len", "-e", "frame.cap_len",
                           "-e", "udp.dstport", "-e", "udp.payload", "-e", "frame.interface_name"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(rows) == len(CAPTURED)
    for row, (direction, payload, _) in zip(rows, CAPTURED):
        flen, caplen, dport, hexpl, ifname = row.split("\t")
        assert int(flen) == int(caplen) == 42 + len(payload)
        assert dport == (str(PORT) if direction == "c2s" else str(live["client_port"]))
        assert bytes.fromhex(hexpl) == payload
        assert ifname == "lo"
    # The game layer in tshark (generated plugin) is protodump's, byte for byte, on the same file.
    theirs = tshark_cmd_run(["-X", f"lua_script:{PLUGIN}", "-r", path, "-T", "json"], text=True, check=True).stdout
    ours = subprocess.run([*PROTODUMP, "-T", "json", path], capture_output=True, text=True, check=True).stdout
    assert raw_layers(theirs, "blank") == raw_layers(ours, "blank")
    times = subprocess.run([TSHARK, "-r", path, "-T", "fields", "-e", "frame.time_epoch"],
                           capture_output=True, text=True, check=True).stdout.split()
    ours_times = [get(layer_of(layers, "frame"), "frame.time_epoch") for layers in packet_layers(ours)]
    assert times == ours_times                                 # nanosecond timestamps kept


@needs_netns
def test_ctrl_c_stops_cleanly_with_a_count(live):
    run = live["sigint"]
    assert run["rc"] == 0, run["stderr"]
    assert run["stderr"].splitlines() == ["Capturing on 'lo'", f"{len(CAPTURED)} packets captured"]
    lines = run["stdout"].splitlines()
    assert len(lines) == len(CAPTURED)
    assert "Login" in lines[0] and "live" in lines[0]
    assert "[chunk" in lines[5] and "reassembled]" in lines[5]
    assert "Malformed" in lines[6]
    assert "Part" in lines[-1]


@needs_netns
def test_duration_stops_and_interface_by_number(live):
    run = live["duration"]
    assert run["rc"] == 0, run["stderr"]
    assert run["stdout"] == ""
    assert run["stderr"].splitlines() == ["Capturing on 'lo'", f"{len(CAPTURED)} packets captured"]
    assert 1.5 < run["seconds"] < 8


@needs_netns
def test_list_interfaces_in_the_namespace(live):
    assert live["list"] == {"rc": 0, "stdout": "1. any\n2. lo (Loopback)\n", "stderr": ""}   # as tshark -D there


def test_list_interfaces_like_tshark():
    ours = subprocess.run([*PROTODUMP, "-D"], capture_output=True, text=True, check=False)
    assert ours.returncode == 0
    names = [line.split(". ", 1)[1].split(" (")[0] for line in ours.stdout.splitlines()]
    assert [line.split(". ", 1)[0] for line in ours.stdout.splitlines()] == [str(i) for i in range(1, len(names) + 1)]
    assert "lo" in names
    if TSHARK is not None:
        theirs = subprocess.run([TSHARK, "-D"], capture_output=True, text=True, check=False).stdout
        their_names = [line.split(". ", 1)[1].split(" (")[0] for line in theirs.splitlines() if ". " in line]
        assert [n for n in their_names if n in names] == names       # the same interfaces, in tshark's order
        assert ours.stdout.splitlines() == [line for line in theirs.splitlines() if ". " in line][:len(names)]


@needs_netns
def test_any_captures_cooked_frames_that_tshark_reads(tmp_path):
    """-i any (with a capture filter): Linux cooked frames, both copies of a loopback packet, as tshark -i any."""
    out = tmp_path / "any.pcapng"
    import shlex
    script = (f"ip link set lo up; {shlex.join(PROTODUMP)} -i any -f 'udp port 9999' -c 4 -w {out} & "
              "sleep 2; python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
              "[s.sendto(b'hi', ('127.0.0.1', 9999)) for _ in range(2)]; "
              "s.sendto(b'no', ('127.0.0.1', 9998))\"; wait")
    r = subprocess.run(["unshare", "-n", "bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert "4 packets captured" in r.stderr, r.stderr
    data = out.read_bytes()
    assert int.from_bytes(data[28 + 8:28 + 10], "little") == 113        # the IDB's link type: LINUX_SLL
    ours = subprocess.run([*PROTODUMP, "-r", str(out), "-T", "fields", "-e", "udp.dstport"], capture_output=True,
                          text=True).stdout
    assert ours.split() == ["9999"] * 4
    if TSHARK is not None:
        theirs = subprocess.run([TSHARK, "-r", str(out), "-T", "fields", "-e", "sll.pkttype", "-e", "udp.dstport"],
                                capture_output=True, text=True).stdout.split("\n")
        assert sorted(line.split("\t")[0] for line in theirs if line) == ["0", "0", "4", "4"]


def _one_line_error(args, *, prefix=()):
    run = subprocess.run([*prefix, *PROTODUMP, *args], capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 2, run
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr
    return run.stderr


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv not found")
def test_without_cap_net_raw_one_line_exit_2():
    # Root without CAP_NET_RAW (dropped from the bounding and inheritable sets): what a normal user lacks.
    # (`nobody` cannot run this interpreter here: it lives under /root.)
    if os.geteuid() == 0:
        prefix = ("setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw", "--")
    else:
        prefix = ()
    err = _one_line_error(["-i", "lo", "-f", BPF], prefix=prefix)
    assert "capturing on lo needs CAP_NET_RAW" in err and "setcap" in err


def test_unknown_interface_one_line_exit_2():
    assert "no such interface: 'nosuch0'" in _one_line_error(["-i", "nosuch0"])


@pytest.mark.skipif(os.geteuid() != 0, reason="compiling a filter for a live socket needs the capture privilege")
def test_bad_capture_filter_one_line_exit_2():
    assert "bad capture filter 'udp port': " in _one_line_error(["-i", "lo", "-f", "udp port"])


def test_capture_options_need_i():
    run = subprocess.run([*PROTODUMP, "-f", "udp", "-r", "blank-all-current.pcap"], capture_output=True, text=True,
                         cwd=os.path.join(os.path.dirname(__file__), "..", "captures"), check=False)
    assert run.returncode == 2 and "need -i IFACE" in run.stderr


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_w_on_files_like_tshark(tmp_path):
    """-w on a file: a plain copy reads in tshark as the original (frames, times, lengths; malformed ones too), and
    with -Y it keeps the frames tshark's own -Y ... -w keeps."""
    captures = os.path.join(os.path.dirname(__file__), "..", "captures")
    fields = ["-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len",
              "-e", "frame.protocols", "-e", "udp.payload"]

    def tshark_fields(path):
        return subprocess.run([TSHARK, "-r", str(path), *fields], capture_output=True, text=True, check=True).stdout

    src = os.path.join(captures, "blank-bad.pcap")
    run = subprocess.run([*PROTODUMP, "-r", src, "-w", str(tmp_path / "copy.pcapng")], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0 and run.stdout == "" and run.stderr == "", run.stderr
    assert tshark_fields(tmp_path / "copy.pcapng") == tshark_fields(src)

    src, shown = os.path.join(captures, "blank-all-current.pcap"), "blank.type == 10"
    run = subprocess.run([*PROTODUMP, "-r", src, "-Y", shown, "-w", str(tmp_path / "ours.pcapng")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout == "", run.stderr
    tshark_cmd_run(["-X", f"lua_script:{PLUGIN}", "-r", src, "-Y", shown, "-w", str(tmp_path / "theirs.pcapng")],
                   check=True)
    ours = tshark_fields(tmp_path / "ours.pcapng")
    assert ours == tshark_fields(tmp_path / "theirs.pcapng") and ours.count("\n") == 5
