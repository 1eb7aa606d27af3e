"""-Y FILTER on the command line: compile it once, or print tshark's kind of error (message, the filter, a caret
under the culprit, and tshark's note when the text is a capture filter) and exit 2, with no traceback.

Whether a text is a valid capture filter is libpcap's answer (pcap_compile on a dead Ethernet handle, as tshark
asks it), through ctypes: libpcap is there wherever tcpdump or Wireshark is; without it the note is left out."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import click

from ..analysis.filter import DisplayFilter, FilterError, compile_filter

CAPTURE_FILTER_NOTE = ("  Note: That read filter code looks like a valid capture filter;\n"
                       "        maybe you mixed them up?")


def compile_or_exit(text: str | None) -> DisplayFilter | None:
    if text is None:
        return None
    try:
        return compile_filter(text)
    except FilterError as exc:
        click.echo(f"protodump: {exc.message}", err=True)     # tshark names no option
        caret = exc.caret(text)
        if caret:
            click.echo(caret, err=True)
        if is_capture_filter(text):
            click.echo(CAPTURE_FILTER_NOTE, err=True)
        if exc.echo:                 # (tshark's stdout, flushed at its exit)
            click.echo(exc.echo, nl=False)
        sys.exit(2)


class _BpfProgram(ctypes.Structure):
    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.c_void_p)]


def is_capture_filter(text: str) -> bool:
    """libpcap compiles `text` for Ethernet (DLT_EN10MB, snaplen 65535)."""
    name = ctypes.util.find_library("pcap")
    if name is None:
        return False
    try:
        pcap = ctypes.CDLL(name)
        pcap.pcap_open_dead.restype = ctypes.c_void_p
        pcap.pcap_open_dead.argtypes = (ctypes.c_int, ctypes.c_int)
        pcap.pcap_compile.argtypes = (ctypes.c_void_p, ctypes.POINTER(_BpfProgram), ctypes.c_char_p, ctypes.c_int,
                                      ctypes.c_uint32)
        pcap.pcap_freecode.argtypes = (ctypes.POINTER(_BpfProgram),)
        pcap.pcap_close.argtypes = (ctypes.c_void_p,)
    except (OSError, AttributeError):
        return False
    handle = pcap.pcap_open_dead(1, 65535)
    if not handle:
        return False
    program = _BpfProgram()
    try:
        ok = pcap.pcap_compile(handle, ctypes.byref(program), text.encode(), 0, 0) == 0
        if ok:
            pcap.pcap_freecode(ctypes.byref(program))
        return ok
    finally:
        pcap.pcap_close(handle)
