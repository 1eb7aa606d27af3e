"""Display-filter sets and membership as tshark 4.0 takes them (epan/dfilter/grammar.lemon): members separated by
commas only (`{14 16 21}` is a syntax error in 4.0, as in 4.4), `a..b` ranges, a unary `+`, `not in` / `! in`,
raw strings, `any` / `all` quantifiers; only a plain field may be tested for membership; calls, unclosed strings and
arithmetic on non-integer fields refused as tshark refuses them. Each filter's frames, error text, caret, exit code
and stdout are compared with tshark + plugin on one capture."""
from __future__ import annotations

import pytest

from conftest import tshark_available
from protodump.analysis.filter import FilterError, compile_filter

pytestmark = pytest.mark.skipif(not tshark_available(), reason="tshark is not on PATH")

CAPTURE = "blank-server-session.pcap"
FILTERS = [
    # accepted
    "frame.number in {14,16,21}", "frame.number in { 14 , 16 }", "frame.number in {14..16}",
    "frame.number in {14 .. 16}", "frame.number in {14,16..18,21}", "frame.number in {16..14}",
    "frame.number in {+14}", "frame.number in {+ 14, 15..+16}", "frame.number == +14", "frame.number == +udp.port",
    "frame.number not in {14,16}", "frame.number ! in {14, 16..18}", "not frame.number not in {14,16}",
    "frame.number in {14,16} and frame.number not in {16}", "blank.type in {1, 2}", "udp.port in {12354, 1..100}",
    "frame.protocols in {r\"eth:ethertype:ip:udp:blank\"}", "frame.number in {0x0e, 016}",
    # refused: whitespace between members, empty members, no set
    "frame.number in {14 16 21}", "frame.number in {14, 16 21}", "frame.number in {14..16 21}",
    "frame.number in{14 16}", "frame.number in {14\t16}", "frame.number in {14,,16}", "frame.number in {}",
    "frame.number in {14,}", "frame.number in {,14}", "frame.number in {14..}", "frame.number in {..16}",
    "frame.number in {14..16..18}", "frame.number in {14,16", "frame.number in 14", "frame.number in {++14}",
    "frame.number not {14,16}", "frame.number not in 14", "udp not udp", "udp !", "frame.number contains +14",
    "blank.type in {1 2}", "eth.src in {00:00:00:00:00:00 11:22:33:44:55:66}",
    # a string token in a syntax error: re-quoted with C escapes
    "frame.protocols in {\"a\" \"x\"}", "frame.protocols == \"a\" \"b\\x41c\"", "frame.protocols in {\"b\" \"c\\\"d\"}",
    "frame.protocols == \"a\" \"x\\by\\fz\\rw\\vq\\\\\"", "frame.protocols == \"a\" r\"b\\\"c\"", "r\"x\" == frame.protocols",
    # quantifiers: `all` holds when every pair of values does (a set: every value equal to one member)
    "all udp.port == 12354", "any udp.port == 12354", "all udp.port in {12354, 35367}", "all udp.port in {1..40000}",
    "all udp.port != 12354", "any udp.port != 12354", "all udp.port > 1", "all udp.port > 20000",
    "all udp.port ~= 12354", "all ip.addr == 127.0.0.1", "all udp.payload contains 00", "all len(udp.port) == 2",
    "all udp.payload matches \"^\\x00\"", "all blank.type in {Login, Join}", "all udp.srcport == udp.dstport",
    "any udp.port not in {12354}", "all udp.port not in {12354}",
    "all frame.number", "any", "all frame.number and udp", "all == 1", "all not udp.port == 1", "all udp.port & 2",
    "blank.type == all",
    # a negative number for an unsigned field: tshark 4.0's run-time negation fails, so every test with it is false
    # (`all` holds vacuously; a failed range bound too)
    "frame.number > -1", "frame.number >= -1", "frame.number ~= -1", "frame.number > -0x1", "udp.port > -1",
    "frame.number in {-1..3, 5}", "all frame.number in {-1}", "all frame.number in {1..-3}",
    "frame.number == -udp.port", "frame.number != -udp.port", "frame.number ~= -udp.port", "frame.number != - 1",
    "frame.number > - 1",
    # arithmetic (tshark 4.0): + - * / % on integer fields, * / % binding tighter; a bare expression tests non-zero
    "frame.number + 1 == 15", "frame.len - 10 > 50", "frame.number+14", "frame.number - 1", "not frame.number - 1",
    "frame.number*2 == 4", "frame.number / 2 == 3", "frame.number / 0 == 1", "frame.number % 5 == 0",
    "frame.number + 2 * 3 == 13", "frame.number == 1 + 2", "udp.port + frame.number == 12370",
    "frame.number == frame.number * 2 - frame.number", "frame.protocols + 1 == 2", "frame.number + \"a\" == 2",
    "1 + 1 == frame.number", "foo + 1 == 2", "frame.number == 2 * 3 + 1", "frame.number == 2 * 3 * 2 - 5", "12 + 1",
    # arithmetic takes part in a relation only: not in a set, `contains` or `matches` (the error is at the operator)
    "frame.number * 2 in {1}", "a*a in ", "frame.number + 1 not in {3}", "frame.number*2 !in {1}",
    "frame.number - 1 contains 1", "frame.number % 2 matches \"a\"",
    # only a plain field in a set
    "foo in {1}", "1 in {1}", "\"x\" not in {1}", "foo not in {1}", "len(frame.protocols) in {1}",
    "frame.protocols[0:2] in {\"et\"}", "foo in {1", "foo in {1} and bar", "bar and foo in {1}",
    # a call parses before its function is looked up: a syntax error inside comes first
    "frame.number in {14 (}", "frame.number in {foo (}", "frame.number in {foo ()}", "foo(zzz)", "foo(zzz",
    "foo(1,}", "frame.len == foo(1 2)",
    # an unclosed string ending in a backslash: the caret on it (and tshark's scanner echoes it on stdout)
    'frame.protocols contains r"abc\\', 'r"\\', 'frame.protocols contains "abc\\', 'frame.protocols contains r"a\\\\',
    # arithmetic on fields that are not integers: tshark's type names
    "frame.time_delta * 2 > 1", "ip.src + 1 == 2", "frame.protocols + 1", "eth.src + 1", "ipv6.src / 2",
    "frame.time + 1", "tcp.analysis.ack_rtt % 2", "udp.payload * 2", "blank.login.name + 1 == 2",
    # + and - on relative times (a constant is a time: [-]s[.ns]); absolute times refused, on either side
    "frame.time_delta + 1", "frame.time_delta + 1 > 1", "frame.time_delta + 1.5 > 1", "frame.time_delta + 1 == 1",
    "frame.time_relative - frame.time_delta > 0", "frame.time_relative - frame.time_delta",
    "frame.time_delta - 0.009397 == 0", "frame.time_delta + frame.time_delta == 0.018794",
    "frame.time_relative - 0.05 > 0", "frame.time_delta - -1 > 1", "frame.time + frame.time_delta",
    "frame.time - frame.time", "frame.time_delta - frame.time", "frame.time_delta + frame.number > 1",
    "frame.number + frame.time_delta > 1", "frame.number * frame.time_delta > 1", "frame.time_delta + ip.src",
    "frame.time_delta + \"a\" > 1", "frame.time_delta + 'a' > 1", "frame.time_delta + 0x10 > 1",
    "frame.time_delta > 1e3", "frame.time_delta > \"1\"", "frame.time_delta > abc", "frame.time_delta == 0.0093970001",
    "frame.time_delta[0] == 1", "frame.time[0] == 1",
    # unary minus on an entity: a negated unsigned field is a signed number; not on "(" nor on another minus
    "-frame.time_delta", "-frame.time_delta < 0", "- frame.time_delta < 0", "frame.time_relative == -frame.time_delta",
    "frame.time_delta + -frame.time_delta == 0", "-frame.number", "-frame.number == 1", "-frame.number == -1",
    "-frame.number < -5", "-frame.number + 1 == 0", "frame.number - 1 == -frame.number + 1", "-udp.port == -12354",
    "-udp.port != -12354", "-frame.number == frame.number", "-blank.type == Login", "-len(frame.protocols) == 1",
    "-ip.src", "-frame.protocols", "-\"a\"", "-1", "-foo == 1", "--frame.number == 1", "-(frame.number)",
    "-frame.time_delta contains 1", "-frame.time_delta in {1}", "-frame.time_delta[0:1] == 1",
    "frame.number ~= -udp.port", "frame.number > -udp.port",
    # what cannot take part in contains, matches, in, &: tshark's wording (a function as "Function len")
    "len(frame.protocols) contains 1", "count(udp.port) matches \"a\"", "frame.number contains 1",
    "frame.number matches \"a\"", "blank.sequence contains 1", "blank.sequence in {1}", "blank.sequence & 1",
    "frame.time contains \"a\"", "frame.time_delta contains 1", "ip.src contains 1", "ip.src matches \"1\"",
    "frame.marked contains 1", "eth.src contains 00", "eth.src contains \"a\"", "eth.src contains 00:00:00:00:00:00:00",
    "eth.src matches \"a\"", "eth.src == 00:11", "eth.src == 1",
    # & is arithmetic (binding looser than + and -) and bitwise and of byte strings and addresses
    "frame.protocols & 1", "frame.time_delta & 1", "frame.marked & 1", "blank & 1", "udp.payload & 01",
    "udp.payload & af:b1", "udp.payload & 00:00", "ip.src & 255.0.0.0", "ip.src & 0.0.0.0",
    "eth.src & 00:00:00:00:00:01", "frame.number & 3 == 1", "frame.number & 3 + 1 == 2", "frame.number + 1 & 3 == 1",
    "frame.number & 3 > 2", "frame.number & 3 & 1", "frame.number == 3 & 1", "frame.number & 3 == frame.number & 1",
    "udp.payload & af == af", "frame.number & udp.payload == 1", "udp.payload & frame.number == 1",
    "udp.payload & upper(frame.protocols) == 1", "frame.number & \"a\"", "frame.number & 'a'",
    "ip.src & 255.0.0.0 == 127.0.0.0", "ip.src & 255.255.0.0 == 127.1.0.0", "ip.src & 255.0.0.0 == 127.0.0.1/8",
    "ip.src & frame.number == 1", "ip.src & udp.payload == 1", "frame.number & ip.src == 1",
    "udp.payload & frame.protocols == 1", "frame.number + frame.protocols",
]


@pytest.mark.parametrize("text", FILTERS)
def test_set_filter_as_tshark(text, standard_run, protodump_run):
    """Display filters, their results and their error messages, as tshark 4.0's (4.4's language differs)."""
    theirs = standard_run("-r", CAPTURE, "-Y", text)
    ours = protodump_run("-r", CAPTURE, "-Y", text)
    assert ours.returncode == theirs.returncode
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr.replace("tshark: ", "protodump: ", 1)


def test_whitespace_members_are_refused():
    """tshark 4.0 refuses members without commas (the issue's `{14 16 21}`): a test that fails if we accept it."""
    with pytest.raises(FilterError) as info:
        compile_filter("frame.number in {14 16 21}")
    assert (info.value.message, info.value.position) == ('"16" was unexpected in this context.', 20)
