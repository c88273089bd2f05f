"""`signoff report`: the figures of `approvals.report` as a table, as JSON, or as one HTML file
whose charts are drawn in the file itself (inline SVG and CSS: it loads nothing from anywhere,
so it can be mailed, archived or opened offline)."""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import re
import sys
from pathlib import Path

from ..approvals.policy import format_duration, parse_duration
from ..approvals.report import ActionFigures, gather, summarize
from ..approvals.service import Signoff

__all__ = ["cmd_report", "report_html", "report_text"]

_OUTCOMES = (
    ("by rule", "by_rule", "#7fb685"),
    ("approved", "approved", "#2e7d32"),
    ("rejected", "rejected", "#c62828"),
    ("expired", "expired", "#9e9e9e"),
    ("denied by policy", "by_policy", "#6a1b9a"),
    ("cancelled", "cancelled", "#bdbdbd"),
    ("pending", "pending", "#f9a825"),
)
"""How a request ended, as the charts colour it: (label, `ActionFigures` attribute, colour)."""

_WAITS = (("< 1m", 60), ("< 10m", 600), ("< 1h", 3600), ("< 4h", 14400), ("< 1d", 86400))
"""The time-to-decide chart's buckets (the last, "1d or more", takes the rest)."""


def _took(seconds: float | None) -> str:
    """A time to decide in its two largest units: 5412 seconds -> `1h30m`."""
    if seconds is None:
        return "-"
    return "".join(
        re.findall(r"\d+[a-z]", format_duration(dt.timedelta(seconds=round(seconds))))[:2]
    )


def _rate(f: ActionFigures) -> str:
    return "-" if f.approval_rate is None else f"{f.approval_rate:.0%}"


def _row(f: ActionFigures) -> list[str]:
    counts = (f.requests, f.by_rule, f.approved, f.rejected, f.expired)
    return [f.action, *map(str, counts), _rate(f), _took(f.median_seconds),
            _took(f.p90_seconds), str(len(f.quick))]  # fmt: skip


def report_text(figures: list[ActionFigures], *, since: str, quick: float) -> str:
    """The report as text: one row per action, then the quick approvals and suggested rules."""
    if not figures:
        return f"no approvals were requested in the last {since}"
    headers = ["action", "requests", "by rule", "approved", "rejected", "expired", "rate",
               "median", "p90", "quick"]  # fmt: skip
    rows = [_row(f) for f in figures]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = [f"approvals requested in the last {since}", ""]
    for line in [headers, *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    legend = (
        "rate: of the requests people decided, the share approved; median and p90: time from "
        f"request to decision; quick: approved within {quick:g}s by someone who never opened "
        "the Full payload."
    )
    lines += ["", legend]
    for f in figures:
        if f.quick:
            lines += ["", f"{f.action}: approved quickly without opening the payload:"]
            lines += [f"  {approval_id}" for approval_id in f.quick]
    suggestions = [s for f in figures for s in f.suggestions]
    if suggestions:
        lines += [
            "",
            "Suggested auto-approval rules (nothing changes until you add one to the policy):",
        ]
        for s in suggestions:
            why = (
                f"# people approved every {s.action} with {s.field} <= {s.at_most:g} they were "
                f"asked about: it would have taken {s.taken} of the last {s.of} decisions"
            )
            lines += ["", why, s.toml().rstrip()]
    return "\n".join(lines)


def _bar(f: ActionFigures, width: int = 420) -> str:
    """One action's requests as a stacked bar, a segment per outcome."""
    parts, x = [], 0.0
    for label, attr, colour in _OUTCOMES:
        n = getattr(f, attr)
        if not n:
            continue
        w = width * n / f.requests
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="18" fill="{colour}">'
            f"<title>{html.escape(label)}: {n}</title></rect>"
        )
        x += w
    return (
        f'<svg class="bar" width="{width}" height="18" role="img" '
        f'aria-label="how its {f.requests} requests ended">{"".join(parts)}</svg>'
    )


def _waits(f: ActionFigures, width: int = 300, height: int = 80) -> str:
    """How long people took to decide, as a histogram over `_WAITS`."""
    counts = [0] * (len(_WAITS) + 1)
    for seconds in f.decide_seconds:
        counts[next((i for i, (_, top) in enumerate(_WAITS) if seconds < top), len(_WAITS))] += 1
    labels = [label for label, _ in _WAITS] + ["1d+"]
    most = max(counts) or 1
    step = width / len(counts)
    bars = []
    for i, (n, label) in enumerate(zip(counts, labels)):
        h = (height - 16) * n / most
        bars.append(
            f'<rect x="{i * step + 4:.1f}" y="{height - 16 - h:.1f}" width="{step - 8:.1f}" '
            f'height="{h:.1f}" fill="#1565c0"><title>{label}: {n}</title></rect>'
            f'<text x="{i * step + step / 2:.1f}" y="{height - 3}" text-anchor="middle">'
            f"{html.escape(label)}</text>"
        )
    return (
        f'<svg class="waits" width="{width}" height="{height}" role="img" '
        f'aria-label="time to decide">{"".join(bars)}</svg>'
    )


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #212121; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 4px 10px; text-align: right; border-bottom: 1px solid #e0e0e0; }
th:first-child, td:first-child { text-align: left; }
svg text { font-size: 10px; fill: #616161; }
.key span { display: inline-block; margin-right: 1em; }
.key i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
pre { background: #f5f5f5; padding: 8px; }
"""


def report_html(figures: list[ActionFigures], *, since: str, quick: float, at: str) -> str:
    """The report as one self-contained HTML page."""
    e = html.escape
    key = "".join(
        f'<span><i style="background:{colour}"></i>{e(label)}</span>'
        for label, _, colour in _OUTCOMES
    )
    rows = "".join(
        f"<tr><td>{e(f.action)}<br><small>{e(f.tier)}</small></td><td>{f.requests}</td>"
        f"<td>{_bar(f)}</td><td>{_rate(f)}</td><td>{_took(f.median_seconds)}</td>"
        f"<td>{_took(f.p90_seconds)}</td><td>{len(f.quick)}</td><td>{_waits(f)}</td></tr>"
        for f in figures
    )
    quick_list = "".join(
        f"<li>{e(f.action)}: {', '.join(e(i) for i in f.quick)}</li>" for f in figures if f.quick
    )
    suggestions = "".join(
        f"<p>People approved every <b>{e(s.action)}</b> with {e(s.field)} &le; {s.at_most:g} "
        f"they were asked about: this rule would have taken {s.taken} of the last {s.of} "
        f"decisions.</p><pre>{e(s.toml())}</pre>"
        for f in figures
        for s in f.suggestions
    )
    body = (
        f"<table><tr><th>action</th><th>requests</th><th>how they ended</th><th>approved</th>"
        f"<th>median</th><th>p90</th><th>quick</th><th>time to decide</th></tr>{rows}</table>"
        f'<p class="key">{key}</p>'
        if figures
        else f"<p>No approvals were requested in the last {e(since)}.</p>"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>signoff report: the last {e(since)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Approvals in the last {e(since)}</h1><p>Made {e(at)}. <i>approved</i>: of the "
        "requests people decided, the share approved; <i>median</i> and <i>p90</i>: time from "
        f"request to decision; <i>quick</i>: approved within {quick:g}s by someone who never "
        f"opened the Full payload.</p>{body}"
        + (
            f"<h2>Approved quickly, payload unopened</h2><ul>{quick_list}</ul>"
            if quick_list
            else ""
        )
        + (
            "<h2>Suggested auto-approval rules</h2><p>Nothing changes until someone adds one to "
            f"the policy.</p>{suggestions}"
            if suggestions
            else ""
        )
        + "</body></html>\n"
    )


async def cmd_report(app: Signoff, args: argparse.Namespace) -> int:
    now = app.clock()
    since = now - parse_duration(args.since).total_seconds()  # checked by the parser
    asked = await gather(app.db, since)
    if args.action:
        asked = [a for a in asked if a.action in args.action]
    figures = summarize(asked, app.policy, quick=args.quick, last=args.last)
    if args.json:
        print(
            json.dumps({"since": args.since, "actions": [f.to_json() for f in figures]}, indent=2)
        )
    else:
        print(report_text(figures, since=args.since, quick=args.quick))
    if args.html:
        at = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        Path(args.html).write_text(
            report_html(figures, since=args.since, quick=args.quick, at=at), encoding="utf-8"
        )
        print(f"wrote {args.html}", file=sys.stderr if args.json else sys.stdout)
    return 0
