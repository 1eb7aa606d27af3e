"""tshark's command line where protodump had its own: `-z io,stat` with functions (COUNT SUM MIN MAX AVG LOAD) and
bad command lines (one line, tshark's exit code), against tshark 4.0 + the generated plugin on bundled captures."""
from __future__ import annotations

import pytest

FUNCS = "SUM(tcp.len)tcp,AVG(frame.time_delta),COUNT(tcp.len)tcp,MIN(tcp.len),MAX(frame.time_delta)," \
        "LOAD(frame.time_delta),AVG(tcp.len),MIN(frame.time_relative),SUM(frame.time_delta),MAX(tcp.window_size)"
NAMES = "frame.time_delta || tcp.len || frame.time_relative || tcp.window_size"


@pytest.mark.parametrize("name", ["iceball-tcp-session.pcap", "blank-server-session.pcap", "enet-plain.pcap"])
@pytest.mark.parametrize("interval", ["1", "0.5", "3", "0.2"])
def test_io_stat_functions_are_tsharks(protodump_run, standard_run, name, interval):
    """With every field named by -Y (tshark 4.0 fills a function's field only then) and interval rows, LOAD
    spread over earlier rows, time, integer and running-average widths."""
    args = ("-q", "-Y", NAMES, "-z", f"io,stat,{interval},{FUNCS}", "-r", name)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("name,interval", [("enet-plain.pcap", "0"), ("blank-server-session.pcap", "0"),
                                           ("rutentoy-sctp.pcap", "0.001"), ("enet-plain.pcap", "0.01")])
def test_io_stat_last_row_is_tsharks(protodump_run, standard_run, name, interval):
    """The last row ends at tshark's own duration: moved to the next printed digit only when past half of one
    (enet-plain's 0.678680 s: LOAD over 0.679000, 0.999528; blank-server-session's 8.011280 s: over itself,
    1.000000), so a frame at exactly a whole number of intervals is in no row (rutentoy-sctp at 0.001) and
    enet-plain at 0.01 has 68 rows, not 69."""
    args = ("-q", "-Y", NAMES, "-z", f"io,stat,{interval},LOAD(frame.time_delta),SUM(frame.time_delta),"
            "COUNT(frame.time_delta),,udp", "-r", name)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("name", ["iceball-tcp-session.pcap", "blank-sequence.pcap"])
def test_io_stat_functions_of_fields_no_filter_names(protodump_run, standard_run, name):
    """No filter names the fields: tshark 4.0 counts nothing (all zero), and so does protodump; a column filter
    naming the field is enough (udp.length, blank.seq through the plugin)."""
    for z in ("io,stat,1,SUM(udp.length)udp,AVG(frame.time_delta),COUNT(blank.seq)blank,LOAD(frame.time_delta)",
              "io,stat,0.01,SUM(udp.length)udp.length,COUNT(blank.seq)blank.seq,MAX(blank.seq)blank"):
        ours, theirs = protodump_run("-q", "-z", z, "-r", name), standard_run("-q", "-z", z, "-r", name)
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("z", ["io,stat,0.01,COUNT(frame)frame,SUM(frame.len)frame,LOAD(frame.len)frame",
                               "io,stat,0,LOAD(udp.length),COUNT(sctp)sctp", "io,stat,0.01,COUNT(ip.src)ip"])
def test_io_stat_count_of_any_field_and_load_of_no_time(protodump_run, standard_run, z):
    """COUNT counts every occurrence whatever its type (a protocol: COUNT(frame)); LOAD of a field that is no
    relative time has no value: tshark 4.0 prints its heading and no cell in the rows (each one column short)."""
    ours, theirs = (run("-q", "-z", z, "-r", "rutentoy-sctp.pcap") for run in (protodump_run, standard_run))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


def test_io_stat_over_years_streams_rows(protodump_run):
    """Two captures three years apart at 1 s: tshark prints every (empty) row; protodump makes them one at a time
    (analysis/stats_io.IoRows), so the table's size is the output's, never the memory's. Checked on the row
    maker: len() and widths come from the sparse bins."""
    from protodump.analysis.stats_io import IoStat

    class Frame:
        def __init__(self, ts_ns, length):
            self.ts_ns, self.length = ts_ns, length

    class Packet:
        def __init__(self, ts_ns, length):
            self.frame = Frame(ts_ns, length)

    tap = IoStat(["1"])
    year = 365 * 24 * 3600 * 10 ** 9
    for ts, n in ((0, 60), (10 ** 9 // 2, 70), (3 * year + 10 ** 8, 80)):
        tap.add(Packet(ts, n))
    rows = tap.result()["rows"]
    assert len(rows) == 3 * 365 * 24 * 3600 + 1
    assert rows.maxima(0) == (2, 130)
    first = next(iter(rows))
    assert first["columns"][0] == {"frames": 2, "bytes": 130}


def _first(text: str) -> str:
    return text.splitlines()[0] if text else ""


BAD = [("--bogus",), ("-c",), ("-c", "abc"), ("-c", "0"), ("-c", "-1"), ("-o", "bogus:1"),
       ("-o", "blank.revision:1999"), ("-o", "bogus"), ("-d", "udp.port==x,blank"), ("-d", "bogus"),
       ("-d", "udp.port==1,bogus"), ("-T", "bogus"), ("-t", "x"), ("-u", "x"), ("-z", "bogus"),
       ("-Y", "blank.seq ==")]


@pytest.mark.parametrize("args", BAD, ids=" ".join)
def test_bad_command_line_is_tsharks(protodump_run, standard_run, args):
    """The first line (tshark's words after "protodump:" for "tshark:") and the exit code; what follows is
    tshark's (the usage, the list of formats) for protodump's own options."""
    # -c takes its argument last on the line so that "-c" alone misses it, as on tshark's
    ours = protodump_run("-r", "blank-bad.pcap", *args)
    theirs = standard_run("-r", "blank-bad.pcap", *args)
    assert ours.returncode == theirs.returncode, (ours.stderr, theirs.stderr)
    if not theirs.stderr.replace("Running as user", "").strip():     # a bad Lua enum value: silently ignored
        assert ours.stderr == "" and ours.stdout == theirs.stdout
        return
    mine = _first(ours.stderr)
    assert mine.startswith("protodump: ") and "Traceback" not in ours.stderr
    their = [line for line in theirs.stderr.splitlines() if not line.startswith("Running as user")]
    assert mine[len("protodump: "):] == their[0][len("tshark: "):]
    if args[0] in ("-T", "-t", "-u"):        # the list: protodump's formats, each as tshark words it
        listed = ours.stderr.splitlines()[1:]
        assert listed and all(line in their for line in listed)
    if args[0] in ("--bogus", "-c") and len(args) == 1:
        assert ours.stderr.splitlines()[1] == "" and "Usage: protodump" in ours.stderr


def test_io_stat_functions_in_json(protodump_run):
    """--format json: each function column's name and its values as the table prints them."""
    import json
    run = protodump_run("-q", "--format", "json", "-Y", "frame.time_delta", "-z",
                        "io,stat,0.01,AVG(frame.time_delta),COUNT(blank.seq)blank", "blank-sequence.pcap")
    assert run.returncode == 0, run.stderr
    (table,) = json.loads(run.stdout)["statistics"]
    assert table["functions"] == [{"name": "AVG", "values": ["0.000977", "0.001081", "0.001079"]},
                                  {"name": "COUNT", "values": ["0", "0", "0"]}]


BAD_FILTERS = ["bogus == 1", "blank.bogus == 1", "bogus ==", "1 == 2", '"abc" == udp.port', "bogus contains 1",
               'bogus ~ "x"', "bogus eq 1", "bogus[0] == 1", "host 1.2.3.4", "udp.port ==", "(udp", "bogus && udp",
               "len(bogus) == 1", "upper(1) == 1", 'string(bogus) == "1"', "max(bogus, udp.port) == 1",
               "abs(bogus) == 1", "udp.port == 1 || bogus", 'len(udp.port) == "abc"', 'abs(udp.port) == "x"',
               "udp.port + udp.payload", "frame.len + frame.time_delta == 1"]


@pytest.mark.parametrize("flt", BAD_FILTERS)
def test_bad_display_filter_is_tsharks(protodump_run, standard_run, flt):
    """tshark 4.0's words (a syntax error before a name error; "Left side of ..." for an unknown name compared;
    a function's argument), its caret, its note when the text is a capture filter (libpcap's answer), exit 2."""
    ours, theirs = protodump_run("-r", "blank-bad.pcap", "-Y", flt), standard_run("-r", "blank-bad.pcap", "-Y", flt)
    assert theirs.returncode == ours.returncode == 2
    assert ours.stderr == theirs.stderr.replace("tshark: ", "protodump: ", 1)


@pytest.mark.parametrize("z", ["io,phs,(", "io,stat,1,(", "io,stat,0,COUNT(frame.len)bogus.field",
                               "conv,udp,blank.seq ==", "endpoints,ip,frame ~", "expert,(", "expert,warn,bogus =="])
def test_bad_filter_in_a_statistic_is_tsharks(protodump_run, standard_run, z):
    """A -z argument's bad filter: the tap's registration error as tshark 4.0 words it (io,stat's after a blank
    line, expert's on standard output), exit 1."""
    args = ("-q", "-r", "blank-bad.pcap", "-z", z)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert theirs.returncode == ours.returncode == 1
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr.replace("tshark: ", "protodump: ", 1)


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    """Frames a minute, an hour and a day apart, one earlier than the one before it."""
    from scapy.all import IP, UDP, Ether, wrpcap
    path = tmp_path_factory.mktemp("times") / "times.pcap"
    frames = []
    for t in (0, 75.25, 3725.5, 3700.0, 90061.123456):
        p = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src="10.0.0.1", dst="10.0.0.2") / \
            UDP(sport=1000, dport=2000) / b"x"
        p.time = 1700000000 + t
        frames.append(p)
    wrpcap(str(path), frames)
    return str(path)


@pytest.mark.parametrize("args", [("-u", "hms"), ("-u", "hms", "-t", "d"), ("-u", "hms", "-t", "dd", "-Y",
                                  "frame.number != 2"), ("-u", "hms", "-t", "e"), ("-u", "s", "-t", "d"),
                                  ("-u", "hms", "-T", "fields", "-e", "_ws.col.Time", "-e", "frame.time_delta")],
                         ids=" ".join)
def test_seconds_format_is_tsharks(protodump_run, standard_run, spread, args):
    """-u hms: relative and delta times in the Time column as hours, minutes and seconds ("- " before a negative
    delta); epoch times and the frame.time_* fields stay in seconds."""
    ours, theirs = protodump_run(*args, spread), standard_run(*args, "-r", spread)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    if args[:2] == ("-u", "hms") and len(args) == 2:
        assert "1h  0m 50.250000s" in ours.stdout or "1h  2m  5.500000s" in ours.stdout


@pytest.mark.parametrize("args", [("-P", "-V"), ("-P", "-x"), ("-P", "-V", "-x"), ("-S", "=====", "-V"),
                                  ("-S", "=====", "-x"), ("-S", "=====", "-P", "-O", "ip"), ("-S", "====="),
                                  ("-P", "-T", "fields", "-e", "frame.number")], ids=" ".join)
def test_summary_and_separator_are_tsharks(protodump_run, standard_run, args):
    """-P prints each packet's summary line before its tree or bytes too; -S replaces the empty line after each
    packet's tree or bytes (a summary listing has none)."""
    ours = protodump_run(*args, "-c", "5", "blank-server-session.pcap")
    theirs = standard_run(*args, "-c", "5", "-r", "blank-server-session.pcap")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("args", [("-2", "-R", "tcp.len>100"), ("-2", "-c", "20", "-V"),
                                  ("-2", "-c", "20", "-R", "tcp", "-T", "json"),
                                  ("-2", "-R", "tcp.len>100", "-T", "fields", "-e", "frame.number", "-e",
                                   "frame.time_relative", "-e", "tcp.stream", "-e", "tcp.window_size")],
                         ids=" ".join)
@pytest.mark.parametrize("name", ["rutentoy-login-texture.pcap", "rutentoy-messages.pcap"])
def test_two_pass_read_filter_and_count_are_tsharks(protodump_run, standard_run, name, args):
    """-2 -R: the second pass shows the frames the first pass kept, numbered 1, 2, 3 ..., with the state of every
    frame (window scaling learnt from a SYN the filter drops); -2 -c: the first pass stops there too (a connection
    that closes later is not complete yet)."""
    ours, theirs = protodump_run(*args, name), standard_run(*args, "-r", name)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


def three_frames(path, duration_us: int) -> None:
    """Three datagrams of the real blank session: at 0, half of `duration_us` and `duration_us`."""
    import dpkt
    from conftest import CAPTURES_DIR
    with open(CAPTURES_DIR / "blank-server-session.pcap", "rb") as f:
        frames = [buf for _, buf in dpkt.pcap.Reader(f)][:3]
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, nano=False)
        for frame, at in zip(frames, (0, duration_us // 2, duration_us)):
            w.writepkt(frame, 1000 + at / 1e6)


@pytest.mark.parametrize("duration_us", [9_700_000, 9_500_000, 19_127_165, 99_800_000, 9_950_000, 950_000,
                                         9_997_000, 1_234_500_000])
def test_io_stat_widths_where_rounding_adds_a_digit(tmp_path, protodump_run, standard_run, duration_us):
    """tshark 4.0 formats the bounds and the Interval line with the duration's digits before rounding it (up to
    the next printed digit only when past half of one) and sizes the column and the box with those after: at
    9.7 s and 1 s intervals the bounds are a digit narrower than their column and the Duration and Interval
    lines a character short; at 19.1 s the interval is printed two wide (` 1`)."""
    path = tmp_path / "three.pcap"
    three_frames(path, duration_us)
    for z in ("io,stat,1", "io,stat,0.1", "io,stat,0.01", "io,stat,3", "io,stat,0", "io,stat,0.5,udp,ip"):
        ours, theirs = protodump_run("-q", "-z", z, str(path)), standard_run("-q", "-z", z, "-r", str(path))
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == theirs.stdout, z


@pytest.mark.parametrize("name", ["rutentoy-lossy.pcap", "freeblox-session.pcap", "blank-server-session.pcap",
                                  "iceball-enet-session.pcap", "rutentoy-lossy-v6.pcap"])
@pytest.mark.parametrize("mode", [(), ("-V",), ("-P", "-x"), ("-t", "ad", "-Y", "tcp.len > 0 || udp")],
                         ids=lambda m: " ".join(m) or "summary")
def test_tabs_output_is_tsharks(protodump_run, standard_run, name, mode):
    """-T tabs: the summary's columns, padded as in text, delimited by tabs (the arrow too: "\\t→\\t")."""
    args = ("-T", "tabs", *mode, "-r", name)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    if not mode or mode[0] == "-t":
        assert "\t→\t" in ours.stdout and "\t→\t" not in protodump_run(*args[2:]).stdout


def test_long_options_are_tshark_4_4s(protodump_run, tshark_run, request):
    """tshark's long names of -r, -Y, -R (4.2 and later: 4.0 lists them in its help but rejects them) and -P
    (4.0 too): the same output as the short ones, and as the tshark that takes them."""
    name = "rutentoy-lossy.pcap"
    pairs = [(("--read-file", name, "--display-filter", "tcp.len > 0"), ("-r", name, "-Y", "tcp.len > 0")),
             (("-2", "--read-filter", "tcp.len > 0", "-r", name), ("-2", "-R", "tcp.len > 0", "-r", name))]
    newer = tshark_run
    if " 4.0." in tshark_run.tshark.version():
        try:
            newer = request.getfixturevalue("other_run")
        except pytest.skip.Exception:
            newer = None
    for long, short in pairs:
        ours = protodump_run(*long)
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == protodump_run(*short).stdout and ours.stdout.count("\n") > 20
        if newer is not None and " 4.0." not in newer.tshark.version():
            # the frames and their protocols (the TCP tags of -2 -R differ between 4.0 and 4.4)
            shown = [line.split()[:6] for line in ours.stdout.splitlines()]
            assert shown == [line.split()[:6] for line in newer(*long).stdout.splitlines()]
    assert protodump_run("--list-interfaces").stdout == protodump_run("-D").stdout


@pytest.mark.parametrize("options", [("frames",), ("delimit",), ("noascii",), ("all", "delimit"),
                                     ("frames", "noascii"), ("noascii", "ascii"), ("delimit", "frames", "all")],
                         ids=" ".join)
@pytest.mark.parametrize("mode", [(), ("-V",), ("-P",)], ids=lambda m: " ".join(m) or "alone")
def test_hexdump_options_are_tsharks(protodump_run, standard_run, options, mode):
    """--hexdump: every data source or the frame's only (a Freeblox capture has reassembled and inflated ones), the
    ASCII text plain, between | or left out; the last option of each kind wins."""
    args = (*(a for o in options for a in ("--hexdump", o)), *mode, "-r", "freeblox-fragments.pcap")
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    sources = ours.stdout.count("Reassembled TCP (")
    assert (sources == 0) == ("frames" in options and options.index("frames") > max(
        [options.index("all")] if "all" in options else [-1]))


def test_hexdump_help_and_bad_option_are_tsharks(protodump_run, standard_run):
    bad = protodump_run("--hexdump", "xyz", "-r", "blank-bad.pcap")
    theirs = standard_run("--hexdump", "xyz", "-r", "blank-bad.pcap")
    assert bad.returncode == theirs.returncode == 1
    assert bad.stderr.replace("protodump", "tshark") == "\n".join(
        line for line in theirs.stderr.splitlines() if not line.startswith("Running as user")) + "\n"
    ours = protodump_run("--hexdump", "help")
    assert ours.returncode == 0
    listed = standard_run("--hexdump", "help").stdout.splitlines()[1:]      # (after tshark's version line)
    assert ours.stdout.replace("protodump", "tshark").splitlines() == listed


@pytest.mark.parametrize("args", [("-q",), ("-q", "-V"), ("-q", "-x"), ("-q", "-P"), ("-q", "-T", "text"),
                                  ("-q", "-O", "tcp"), ("-q", "-T", "fields", "-e", "frame.number", "-e", "ip.src"),
                                  ("-q", "-P", "-x", "-z", "conv,tcp"), ("-q", "-T", "tabs", "-z", "endpoints,ip")],
                         ids=lambda a: " ".join(a))
def test_quiet_drops_only_the_default_summary(protodump_run, standard_run, args):
    """tshark 4.0's -q drops the summary lines it would print by default; -V, -x, -O, -P and any -T print the
    packets all the same (with -z, the statistics after them)."""
    run = (*args, "-c", "12", "-r", "rutentoy-messages.pcap")
    ours, theirs = protodump_run(*run), standard_run(*run)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert bool(ours.stdout) == (args != ("-q",))
