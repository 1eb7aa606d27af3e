"""The HTTP/1.1 upgrade that opens a WebSocket connection (RFC 6455 section 4): request and response PDUs
(each ends at CRLFCRLF, plus a Content-Length body), shown as an `http` layer with tshark's field names, the
Sec-WebSocket-Accept checked against the key, and the permessage-deflate parameters (RFC 7692) negotiated.
"""
from __future__ import annotations

import base64
import re

from ..engine.fields import Binder
from ..engine.strings import ascii_string, format_text, format_text_string
from ..engine.tree import CHAT, SEQUENCE, ExpertInfo, HiddenItem, Item, TextItem

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HEAD_LIMIT = 65536            # an HTTP head longer than this cannot be a WebSocket upgrade: stop framing
BODY_LIMIT = 1 << 20

# Header -> tshark field (http.*); other headers are http.request.line / http.response.line.
KNOWN_HEADERS = {
    "host": ("host", "Host"), "upgrade": ("upgrade", "Upgrade"), "connection": ("connection", "Connection"),
    "user-agent": ("user_agent", "User-Agent"), "server": ("server", "Server"), "date": ("date", "Date"),
    "sec-websocket-key": ("sec_websocket_key", "Sec-WebSocket-Key"),
    "sec-websocket-accept": ("sec_websocket_accept", "Sec-WebSocket-Accept"),
    "sec-websocket-version": ("sec_websocket_version", "Sec-WebSocket-Version"),
    "sec-websocket-extensions": ("sec_websocket_extensions", "Sec-WebSocket-Extensions"),
    "sec-websocket-protocol": ("sec_websocket_protocol", "Sec-WebSocket-Protocol"),
    "content-length": ("content_length_header", "Content-Length"),
    # headers a browser's upgrade and a server's refusal carry, plain strings to tshark 4.0 (Cookie, with its
    # cookie pairs, and the ones that change how a body is read are not here: they stay request/response lines)
    "accept": ("accept", "Accept"), "referer": ("referer", "Referer"),
    "accept-language": ("accept_language", "Accept-Language"),
    "accept-encoding": ("accept_encoding", "Accept Encoding"),
    "cache-control": ("cache_control", "Cache-Control"), "location": ("location", "Location"),
    "last-modified": ("last_modified", "Last-Modified"), "x-forwarded-for": ("x_forwarded_for", "X-Forwarded-For"),
    "set-cookie": ("set_cookie", "Set-Cookie"), "www-authenticate": ("www_authenticate", "WWW-Authenticate"),
}


# Status code descriptions: vals_http_status_code (packet-http.c, tshark 4.0)
STATUS_NAMES = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints", 199: "Informational - Others",
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non-authoritative Information", 204: "No Content",
    205: "Reset Content", 206: "Partial Content", 207: "Multi-Status", 208: "Already Reported", 226: "IM Used",
    299: "Success - Others", 300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other",
    304: "Not Modified", 305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect",
    399: "Redirection - Others", 400: "Bad Request", 401: "Unauthorized", 402: "Payment Required",
    403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    407: "Proxy Authentication Required", 408: "Request Time-out", 409: "Conflict", 410: "Gone",
    411: "Length Required", 412: "Precondition Failed", 413: "Request Entity Too Large",
    414: "Request-URI Too Long", 415: "Unsupported Media Type", 416: "Requested Range Not Satisfiable",
    417: "Expectation Failed", 418: "I'm a teapot", 421: "Misdirected Request", 422: "Unprocessable Entity",
    423: "Locked", 424: "Failed Dependency", 425: "Too Early", 426: "Upgrade Required",
    428: "Precondition Required", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
    451: "Unavailable For Legal Reasons", 499: "Client Error - Others", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Time-out",
    505: "HTTP Version not supported", 506: "Variant Also Negotiates", 507: "Insufficient Storage",
    508: "Loop Detected", 510: "Not Extended", 511: "Network Authentication Required",
    599: "Server Error - Others"}


# tshark 4.0's HTTP request methods (packet-http.c is_http_request_or_reply): the token before the first space,
# compared case-sensitively; an "M-" prefix (RFC 2774) is skipped.
METHODS = frozenset(b"""GET PUT COPY HEAD LOCK MOVE POLL POST BCOPY BMOVE MKCOL TRACE PATCH LABEL MERGE DELETE SEARCH
    UNLOCK REPORT UPDATE NOTIFY BDELETE CONNECT OPTIONS CHECKIN PROPFIND CHECKOUT CCM_POST SUBSCRIBE PROPPATCH
    BPROPFIND BPROPPATCH UNCHECKOUT MKACTIVITY MKWORKSPACE RPC_CONNECT RPC_IN_DATA UNSUBSCRIBE RPC_OUT_DATA
    VERSION-CONTROL BASELINE-CONTROL SSTP_DUPLEX_POST""".split())


def first_line(data: bytes) -> bytes | None:
    """The first line without its terminator (tvb_find_line_end: CR, LF or CRLF ends it), None when unended."""
    ends = [i for i in (data.find(b"\r"), data.find(b"\n")) if i >= 0]
    return data[:min(ends)] if ends else None


def is_http_start(data: bytes) -> bool:
    """tshark's HTTP heuristic over TCP (dissect_http_heur_tcp): a whole first line, not 8 bytes long, that ends
    with "HTTP/1.?" or starts with "HTTP/1." (case-insensitive)."""
    line = first_line(data)
    if line is None or len(line) == 8:
        return False
    return (len(line) > 8 and line[-8:-1].lower() == b"http/1.") or data[:7].lower() == b"http/1."


def is_request_line(line: bytes) -> bool:
    """tshark's test that a first line is a request: a known method, then a space or the end of the line."""
    if line.startswith(b"M-"):
        line = line[2:]
    return line.split(b" ", 1)[0] in METHODS


def upgrades_to_websocket(line: bytes) -> bool:
    """An "Upgrade" header line (without its line end) that makes tshark switch to WebSocket: the name exactly
    (any case), the value after leading blanks a case-insensitive prefix of "WebSocket" (packet-http.c compares
    g_ascii_strncasecmp(value, "WebSocket", value_len): trailing blanks spoil it, an empty value passes)."""
    name, sep, value = line.partition(b":")
    if not sep or name.lower() != b"upgrade":
        return False
    value = value.lstrip(b" \t").split(b"\0", 1)[0]
    return b"websocket".startswith(value.lower())


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer to `key`."""
    import hashlib       # (only for a handshake: it loads OpenSSL)
    return base64.b64encode(hashlib.sha1(key.strip().encode() + WS_GUID).digest()).decode()


def starts_message(data: bytes, pos: int) -> bool:
    """Whether an HTTP request or status line starts at pos: a method (M-GET, RPC_IN_DATA, ...) or HTTP/."""
    return re.match(rb"HTTP/|[A-Z_-]+ ", data[pos:pos + 16]) is not None


def head_length(data: bytes, pos: int) -> int:
    """pdu_length for an HTTP message: head to CRLFCRLF plus a Content-Length body; 0 need more; -1 over
    protodump's limits. Bytes that start no message are tshark's HTTP "Continuation": the rest of the data."""
    prefix = data[pos:pos + 16]
    if not starts_message(data, pos):
        return 0 if len(prefix) < 16 and re.fullmatch(rb"[A-Z_-]*", prefix) else len(data) - pos
    end = data.find(b"\r\n\r\n", pos, pos + HEAD_LIMIT)
    if end < 0:
        return 0 if len(data) - pos < HEAD_LIMIT else -1
    cut = bad_header_end(data, pos, end + 4)
    if cut is not None:
        return cut - pos
    body = re.search(rb"(?im)^content-length:[ \t]*(\d{1,9})[ \t]*\r?$", data[pos:end + 2])
    size = int(body.group(1)) if body else 0
    return -1 if size > BODY_LIMIT else end + 4 - pos + size


def line_ends(data: bytes, pos: int, end: int):
    """(start, stop, next) of each line of data[pos:end], ended as tshark's tvb_find_line_end ends them: CRLF, LF or
    a lone CR (stop: where the line's text ends, next: where the following line starts)."""
    at = pos
    while at < end:
        ends = [i for i in (data.find(b"\r", at, end), data.find(b"\n", at, end)) if i >= 0]
        stop = min(ends) if ends else end
        nxt = min(end, stop + (2 if data[stop:stop + 2] == b"\r\n" else 1))
        yield at, stop, nxt
        at = nxt


def bad_header_end(data: bytes, pos: int, end: int) -> int | None:
    """Where tshark's HTTP ends a message whose head (data[pos:end]) has a line that is no header (no colon in
    it): before that line; the bytes from it on are no longer the message's (after a 101 they are WebSocket
    frames). A header name with characters no token may hold only gets an expert. None when every line is a
    header."""
    for n, (at, stop, _) in enumerate(line_ends(data, pos, end)):
        if n == 0:
            continue
        if at == stop:
            return None
        if b":" not in data[at:stop]:
            return at
    return None


def extensions(value: str) -> dict | None:
    """permessage-deflate parameters from a Sec-WebSocket-Extensions value, or None when not negotiated."""
    for ext in value.split(","):
        parts = [p.strip() for p in ext.split(";")]
        if parts[0].lower() == "permessage-deflate":
            return {p.split("=")[0].strip().lower(): p.partition("=")[2].strip() for p in parts[1:] if p}
    return None


RESPONSE_IN = "http_response_in"      # a conversation's key for what a second pass shows (cli/two_pass_opts.py)
SECOND_PASS = "_second_pass.http_response_in"     # the prefs key under which a second pass gets it


def register(b: Binder) -> dict:
    f = {"http": b.field("http", "Hypertext Transfer Protocol", "protocol"),
         "chat": b.field("http.chat", "Formatted text", "none"),     # the expert on the first line
         "method": b.field("http.request.method", "Request Method", "string"),
         "uri": b.field("http.request.uri", "Request URI", "string"),
         "req_version": b.field("http.request.version", "Request Version", "string"),
         "resp_version": b.field("http.response.version", "Response Version", "string"),
         "code": b.field("http.response.code", "Status Code", "uint16"),
         "phrase": b.field("http.response.phrase", "Response Phrase", "string"),
         "request_line": b.field("http.request.line", "Request line", "string"),
         "response_line": b.field("http.response.line", "Response line", "string"),
         "request": b.field("http.request", "Request", "bool"),
         "response": b.field("http.response", "Response", "bool"),
         "code_desc": b.field("http.response.code.desc", "Status Code Description", "string"),
         "full_uri": b.field("http.request.full_uri", "Full request URI", "string"),
         "request_number": b.field("http.request_number", "Request number", "uint32"),
         "response_number": b.field("http.response_number", "Response number", "uint32"),
         "time": b.field("http.time", "Time since request", "string"),
         "request_in": b.field("http.request_in", "Request in frame", "uint32"),
         "response_in": b.field("http.response_in", "Response in frame", "uint32"),
         "response_for": b.field("http.response_for.uri", "Request URI", "string"),
         "body": b.field("http.file_data", "File Data", "bytes"),
         "content_length": b.field("http.content_length", "Content length", "uint64")}
    for abbrev, name in KNOWN_HEADERS.values():
        f[abbrev] = b.field(f"http.{abbrev}", name, "string")
    return f


def _expert(item: Item, abbrev: str, group: int, severity: int, message: str) -> None:
    item.expert(ExpertInfo(abbrev, group, severity, message))


def dissect_http(ctx, f: dict, conv: dict, learnt: dict | None = None) -> str:
    """One HTTP message of the upgrade into ctx.tree (already turned into the http layer). Returns the Info.
    `learnt`: on a second pass (tshark -2), request frame -> the frame of its response (the first pass's
    conversations under RESPONSE_IN, cli/two_pass_opts.py)."""
    data, pos, end, src = ctx.data, ctx.pos, ctx.end, ctx.source
    head_end = data.find(b"\r\n\r\n", pos, end)
    head_end = end if head_end < 0 else head_end + 2
    lines = [(at, data[at:nxt]) for at, _, nxt in line_ends(data, pos, head_end)]
    if not lines:
        return "HTTP"
    first_at, first = lines[0]
    # tshark labels a line with format_text (its own UTF-8 rule) and gives the fields ENC_ASCII values
    text, label = ascii_string(first), format_text(first)
    top = ctx.tree.add(TextItem(None, None, first_at, len(first), label, False, src))
    _expert(top, "http.chat", SEQUENCE, CHAT, label)
    parts = text.strip().split(" ", 2)
    response = text.startswith("HTTP/")
    if response and len(parts) >= 2 and parts[1].isdigit():
        top.add(Item(f["resp_version"], parts[0], first_at, len(parts[0]), None, False, src))
        top.add(Item(f["code"], int(parts[1]), first_at + len(parts[0]) + 1, len(parts[1]), None, False, src))
        top.add(Item(f["code_desc"], status_name(int(parts[1])), first_at + len(parts[0]) + 1, len(parts[1]), None,
                     True, src))
        if len(parts) > 2:
            top.add(Item(f["phrase"], parts[2], first_at + len(parts[0]) + len(parts[1]) + 2, len(parts[2]),
                         None, False, src))
    elif len(parts) == 3:
        top.add(Item(f["method"], parts[0], first_at, len(parts[0]), None, False, src))
        top.add(Item(f["uri"], parts[1], first_at + len(parts[0]) + 1, len(parts[1]), None, False, src))
        top.add(Item(f["req_version"], parts[2], first_at + len(parts[0]) + len(parts[1]) + 2, len(parts[2]),
                     None, False, src))
    headers, host = {}, b""
    upgrade = any(upgrades_to_websocket(line.rstrip(b"\r\n")) for _, line in lines[1:])
    for at, line in lines[1:]:
        name, sep, raw_value = line.decode("latin-1").rstrip("\r\n").partition(":")
        value = raw_value.strip()
        known = KNOWN_HEADERS.get(name.strip().lower()) if sep else None
        field = f["response_line"] if response else f["request_line"]
        if known:
            headers[name.strip().lower()] = value
            if known[0] == "host":
                host = value.encode("latin-1")
            # (its value from the first byte after the colon's blanks to the line's end, trailing blanks kept)
            header = ctx.tree.add(Item(f[known[0]], ascii_string(raw_value.lstrip(" \t").encode("latin-1")), at,
                                       len(line), format_text(line), False, src))
            if known[0] == "content_length_header" and value.isdigit() and int(value) < 1 << 63:
                # the length it states, as tshark reads it (a number, else nothing)
                header.add(Item(f["content_length"], int(value), at, len(line), None, True, src))
            # tshark adds the whole line too, hidden
            whole = ascii_string(line)
            ctx.tree.add(HiddenItem(field, whole, at, len(line), whole.rstrip("\r\n") + "\\r\\n", False, src))
        elif line != b"\r\n":
            ctx.tree.add(Item(field, ascii_string(line), at, len(line), format_text(line), False, src))
    blank_at = head_end if data[head_end:head_end + 2] == b"\r\n" else head_end - 2    # the empty line
    ctx.tree.add(TextItem(None, None, blank_at, 2, "\\r\\n", False, src))
    if head_end + 2 < end:
        ctx.tree.add(Item(f["body"], data[head_end + 2:end], head_end + 2, end - head_end - 2, None, False, src))
    if response:
        request_facts(ctx, f, conv, first_at)
        handshake_response(ctx, f, conv, parts, headers, upgrade)
    else:
        # (the host as format_text shows it, the URI as its field holds it: measured on 4.0.17)
        uri = f"http://{format_text_string(host)}{parts[1] if len(parts) == 3 else ''}"
        ctx.tree.add(Item(f["full_uri"], uri, first_at, 0, None, True, src))
        ctx.tree.add(HiddenItem(f["request"], True, first_at, 0, None, True, src))
        ctx.tree.add(Item(f["request_number"], 1, first_at, 0, "HTTP request 1/1", True, src))
        answer = learnt.get(ctx.frame) if learnt else None
        if answer is not None:
            ctx.tree.add(Item(f["response_in"], answer, first_at, 0, None, True, src))
        conv.update(key=headers.get("sec-websocket-key"), client=ctx.direction, request_frame=ctx.frame,
                    request_ns=_ns(ctx), uri=uri)
    return format_text(first.rstrip(b"\r\n")).strip() + " "     # tshark's HTTP Info: the first line and a space


def _ns(ctx) -> int | None:
    """The frame's capture time in nanoseconds (exact, unlike a float of seconds)."""
    frame = getattr(ctx.stack, "frame", None)
    return getattr(frame, "ts_ns", None)


def status_name(code: int) -> str:
    """A status code's description as tshark 4.0 names it (vals_http_status_code), else "Unknown (N)"."""
    return STATUS_NAMES.get(code, f"Unknown ({code})")


def request_facts(ctx, f: dict, conv: dict, at: int) -> None:
    """The generated lines tshark adds to a response: number, time since the request, its frame and URI."""
    src = ctx.source
    ctx.tree.add(HiddenItem(f["response"], True, at, 0, None, True, src))
    ctx.tree.add(Item(f["response_number"], 1, at, 0, "HTTP response 1/1", True, src))
    if "request_frame" not in conv:
        return
    now = _ns(ctx)
    if now is not None and conv.get("request_ns") is not None:
        delta = now - conv["request_ns"]
        text = f"{delta // 10**9}.{delta % 10**9:09d}"
        ctx.tree.add(Item(f["time"], text, at, 0, f"Time since request: {text} seconds", True, src))
    ctx.tree.add(Item(f["request_in"], conv["request_frame"], at, 0, None, True, src))
    conv[RESPONSE_IN] = {conv["request_frame"]: ctx.frame}      # for a second pass (tshark -2)
    ctx.tree.add(Item(f["response_for"], conv["uri"], at, 0, None, True, src))


def handshake_response(ctx, f: dict, conv: dict, parts: list[str], headers: dict, upgrade: bool) -> None:
    """A 101 answer with tshark's "Upgrade: websocket" (upgrades_to_websocket) switches both directions to
    WebSocket frames."""
    if len(parts) < 2 or parts[1] != "101" or not upgrade:
        return
    conv["upgraded"] = True
    conv["deflate"] = extensions(headers.get("sec-websocket-extensions", ""))
    conv["subprotocol"] = headers.get("sec-websocket-protocol", "").strip() or None
