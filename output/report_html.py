"""The session report as one self-contained HTML page: the plots are inline SVG drawn by matplotlib (the optional
extra `protodump[report]`), the style is inline, there is no script from elsewhere, no font, no image to fetch:
the page shows the same with no network. Data from analysis.report_data.
"""
from __future__ import annotations

import html
import io

from ..engine.tree import SEVERITY_NAMES

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ddd; padding: 2px 6px; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.plot { margin: .5em 0; } .plot svg { max-width: 100%; height: auto; }
.note { color: #666; } .Error { color: #b00; } .Warning { color: #a60; }
"""

# Marks, after load, how many plots have a drawn area: what the headless-browser test reads back.
CHECK = """
window.addEventListener('load', function () {
  var drawn = 0, rects = [];
  document.querySelectorAll('.plot svg').forEach(function (s) {
    var r = s.getBoundingClientRect();
    if (r.width > 50 && r.height > 50 && s.querySelectorAll('path').length > 0) drawn++;
    rects.push([r.left, r.top, r.width, r.height].map(Math.round).join(','));
  });
  document.body.setAttribute('data-plots-drawn', String(drawn));
  document.body.setAttribute('data-plot-rects', rects.join(';'));
});
"""


class ReportUnavailable(RuntimeError):
    """matplotlib is missing (install protodump[report])."""


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ReportUnavailable("the report needs matplotlib: pip install 'protodump[report]'") from exc
    plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "figure.dpi": 96, "svg.hashsalt": "protodump"})
    return plt


def svg(fig) -> str:
    """A figure as inline SVG (no XML prolog, no DOCTYPE: an element of the page)."""
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg"):]


def e(value) -> str:
    return html.escape(str(value), quote=True)


def render(data: dict, title: str) -> str:
    plt = _pyplot()
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>",
             f"<style>{STYLE}</style><script>{CHECK}</script></head><body>",
             f"<h1>Session report: {e(title)}</h1>",
             f"<p>{data['packets']} packets, {data['conversations']} game conversations.</p>"]
    parts += summary_table(data)
    for n, conv in enumerate(data["detail"]):
        parts += conversation(plt, n, conv)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def summary_table(data) -> list[str]:
    rows = ["<h2>Conversations</h2><table><tr><th>Client</th><th>Server</th><th>Protocols</th><th>Packets</th>"
            "<th>Bytes</th><th>Start (s)</th><th>Duration (s)</th><th>Players</th><th>Expert infos</th></tr>"]
    for c in data["summary"]:
        rows.append(f"<tr><td>{e(c['client'])}</td><td>{e(c['server'])}</td><td>{e('/'.join(c['protocols']))}</td>"
                    f"<td class=n>{c['packets']}</td><td class=n>{c['bytes']}</td><td class=n>{c['start']:.3f}</td>"
                    f"<td class=n>{c['duration']:.3f}</td><td>{e(', '.join(c['players']))}</td>"
                    f"<td class=n>{c['experts']}</td></tr>")
    rows.append("</table>")
    if data["summary_omitted"]:
        rows.append(f"<p class=note>{data['summary_omitted']} more conversations are not listed.</p>")
    if len(data["detail"]) < len(data["summary"]):
        rows.append(f"<p class=note>The {len(data['detail'])} busiest conversations are shown in detail.</p>")
    return rows


def conversation(plt, n, c) -> list[str]:
    out = [f"<h2 id=\"conv{n}\">{e(c['client'])} &harr; {e(c['server'])} ({e('/'.join(c['protocols']))})</h2>",
           f"<p>{c['packets']} packets, {c['bytes']} bytes, {c['duration']:.3f} s from {c['start']:.3f} s."
           "</p>"]
    out += players(plt, c)
    out.append(plot(plt, bandwidth_figure, c))
    if c.get("enet"):
        out.append(plot(plt, enet_figure, c))
        out.append("<table><tr><th>Peer</th><th>Datagrams</th><th>RTT min/avg/max (ms)</th><th>libenet RTT</th>"
                   "<th>Retransmissions</th><th>Late</th><th>Unacknowledged</th><th>Loss</th></tr>")
        for p in c["enet"]:
            rtt = "/".join("-" if p[k] is None else f"{p[k]:.3f}" for k in ("rtt_min", "rtt_avg", "rtt_max"))
            out.append(f"<tr><td>{e(p['peer'])}</td><td class=n>{p['datagrams']}</td><td class=n>{rtt}</td>"
                       f"<td class=n>{e(p['libenet_rtt'] if p['libenet_rtt'] is not None else '-')}</td>"
                       f"<td class=n>{p['retransmissions']}</td><td class=n>{p['late']}</td>"
                       f"<td class=n>{p['unacknowledged']}</td>"
                       f"<td class=n>{100 * p['loss']:.2f}%</td></tr>")
        out.append("</table>")
    if c["transfers"]:
        out.append(plot(plt, transfers_figure, c))
        out.append("<table><tr><th>Kind</th><th>Name</th><th>Start (s)</th><th>End (s)</th><th>Size</th>"
                   "<th>Status</th></tr>")
        out += [f"<tr><td>{e(t['kind'])}</td><td>{e(t['name'])}</td><td class=n>{t['start']:.3f}</td>"
                f"<td class=n>{t['end']:.3f}</td><td class=n>{e(t['size'])}</td><td>{e(t['status'])}</td></tr>"
                for t in c["transfers"]]
        out.append("</table>")
        if c["transfers_omitted"]:
            out.append(f"<p class=note>{c['transfers_omitted']} more transfers are not listed.</p>")
    out += experts(c)
    return out


def players(plt, c) -> list[str]:
    out = []
    if c["player_timeline"]:
        out.append(plot(plt, players_figure, c))
        out.append("<table><tr><th>Player</th><th>How</th><th>From (s)</th><th>To (s)</th><th>Left</th></tr>")
        out += [f"<tr><td>{e(p['name'])}</td><td>{e(p['how'])}</td><td class=n>{p['joined']:.3f}</td>"
                f"<td class=n>{p['left']:.3f}</td><td>{e(p['left_how'])}</td></tr>" for p in c["player_timeline"]]
        out.append("</table>")
    if c["chat"]:
        out.append("<table><tr><th>Time (s)</th><th>Direction</th><th>Chat</th></tr>")
        out += [f"<tr><td class=n>{m['time']:.3f}</td><td>{e(m['direction'])}</td><td>{e(m['text'])}</td></tr>"
                for m in c["chat"]]
        out.append("</table>")
    return out


def experts(c) -> list[str]:
    if not c["experts"]:
        return ["<p class=note>No expert infos.</p>"]
    out = ["<table><tr><th>Severity</th><th>Protocol</th><th>Count</th><th>Message</th></tr>"]
    for x in c["experts"]:
        sev = SEVERITY_NAMES.get(x["severity"], str(x["severity"]))
        out.append(f"<tr class=\"{e(sev)}\"><td>{e(sev)}</td><td>{e(x['protocol'])}</td>"
                   f"<td class=n>{x['count']}</td><td>{e(x['message'])}</td></tr>")
    out.append("</table>")
    if c["experts_omitted"]:
        out.append(f"<p class=note>{c['experts_omitted']} more expert infos are not listed.</p>")
    return out


def plot(plt, draw, c) -> str:
    fig, ax = plt.subplots(figsize=(9, 2.6))
    try:
        draw(ax, c)
        ax.grid(True, alpha=.3)
        return f"<div class=\"plot\">{svg(fig)}</div>"
    finally:
        plt.close(fig)


def bandwidth_figure(ax, c):
    for kind, points in sorted(c["bandwidth"].items(), key=lambda kv: -sum(v for _, v in kv[1])):
        xs = [x for x, _ in points]
        ys = [y / 1000 for _, y in points]
        ax.plot(xs, ys, drawstyle="steps-post", marker="o" if len(xs) < 4 else None, markersize=3, label=kind,
                linewidth=1.2)
    ax.set_title(f"Bandwidth by message type (kbit/s, {c['bin']:.3g} s bins)")
    ax.set_xlabel("time (s)")
    ax.legend(fontsize=7, loc="upper right", ncol=2)


def enet_figure(ax, c):
    for p in c["enet"]:
        if p["rtt"]:
            ax.plot([t for t, _ in p["rtt"]], [v for _, v in p["rtt"]], ".", markersize=3,
                    label=f"RTT measured by {p['peer']}")
    ax.set_ylabel("RTT (ms)")
    ax.set_xlabel("time (s)")
    ax.set_title("ENet round-trip time and losses (retransmitted or late reliable commands)")
    ax2 = ax.twinx()
    for p in c["enet"]:
        series = p["retransmission_series"]
        pts = [(c["start"], 0), *series, (c["start"] + c["duration"], series[-1][1] if series else 0)]
        ax2.step([t for t, _ in pts], [v for _, v in pts], where="post", linestyle="--",
                 label=f"retransmitted or late, from {p['peer']}")
    ax2.set_ylabel("retransmitted or late")
    lines = ax.get_legend_handles_labels()
    more = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper right")


def transfers_figure(ax, c):
    colors = {"file": "tab:blue", "texture": "tab:green", "asset": "tab:purple"}
    names = []
    for i, t in enumerate(c["transfers"][:40]):
        width = max(t["end"] - t["start"], c["duration"] / 300 or 0.001)
        bad = t["status"] not in ("complete", "ok") and t["kind"] == "file" or t["status"] == "hash mismatch"
        ax.broken_barh([(t["start"], width)], (i - .4, .8), color="tab:red" if bad else colors[t["kind"]])
        names.append(str(t["name"])[:40])
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title("Transfers (red: aborted, refused, incomplete or bad hash)")
    ax.figure.set_size_inches(9, 1.2 + .25 * len(names))


def players_figure(ax, c):
    names = []
    for i, p in enumerate(c["player_timeline"]):
        ax.broken_barh([(p["joined"], max(p["left"] - p["joined"], c["duration"] / 300 or 0.001))], (i - .35, .7),
                       color="tab:orange")
        names.append(str(p["name"])[:30])
    for m in c["chat"]:
        ax.axvline(m["time"], color="tab:gray", alpha=.4, linewidth=.8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlim(c["start"], c["start"] + max(c["duration"], 1e-3))
    ax.set_xlabel("time (s)")
    ax.set_title("Players (bars) and chat (lines)")
    ax.figure.set_size_inches(9, 1.2 + .3 * len(names))
