"""Run every benchmark (``make bench``), then write ``docs/performance.md`` from the results.

Each script runs in its own process, in its own temporary installation; its output streams
through. The figures land in ``bench/results/*.json`` (scratch) and the plots in
``docs/perf/*.svg``; the markdown is regenerated from them, with ``bench/analysis.md``
(hand-written: causes of misses, what was fixed) included verbatim.

    .venv/bin/python bench/run_all.py                 # everything (about 5 minutes)
    .venv/bin/python bench/run_all.py --only cli_latency
    .venv/bin/python bench/run_all.py --report-only   # rebuild the markdown from results
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

import common
from common import REPO, RESULTS, Figure, Report, load_report

SCRIPTS = [
    "daemon_rss",
    "webhook_ack",
    "agent_latency",
    "poll_cycle",
    "cli_latency",
    "many_sessions",
    "idle",
    "attention",
    "dashboard",
    "terminal",
    "slack",
    "spend",
    "claude_agents",
    "scale",
    "cluster",
    "sandbox",
    "github_broker",
    "worktree",
]
# SPEC §13 order for the summary table; figures not listed follow in script order.
ORDER = [
    "ack.new.p50",
    "ack.new.p99",
    "ack.new.rate32",
    "ack.new.p99_32",
    "ack.new.rate8",
    "ack.new.p99_8",
    "reject.new.rate8",
    "reject.new.rate32",
    "ack.p50",
    "ack.p99",
    "ack.rate",
    "ack.concurrent.p99",
    "resume.p50",
    "resume.p99",
    "spawn.p50",
    "close.p50",
    "close.ack.first",
    "close.ack.p50",
    "poll.requests.1",
    "poll.cost.1",
    "poll.304.1",
    "poll.requests.10",
    "poll.cost.10",
    "poll.304.10",
    "poll.requests.50",
    "poll.cost.50",
    "poll.304.50",
    "cli.version",
    "cli.sessions.1000",
    "cli.sessions.10000",
    "cli.events.100000",
    "cli.events.1000000",
    "api.events.100000",
    "api.events.1000000",
    "slack.ack.p50",
    "slack.ack.p99",
    "slack.reply.p50",
    "slack.reply.p99",
    "many.deliver.p50",
    "many.deliver.p99",
    "many.all_live",
    "idle.cpu.10",
    "idle.cpu.50",
    "idle.cpu.200",
    "dash.sessions.p50",
    "terminal.first_screen.p50",
    "terminal.keystroke.p50",
    "rss.idle.defaults",
    "rss.idle.all",
]
DOC = REPO / "docs" / "performance.md"
ANALYSIS = common.BENCH / "analysis.md"


def run(names: list[str]) -> dict[str, tuple[int, float]]:
    """Run each script; returns name -> (exit status, seconds)."""
    outcome: dict[str, tuple[int, float]] = {}
    for name in names:
        print(f"\n######## bench/{name}.py", flush=True)
        t0 = time.monotonic()
        code = subprocess.call([sys.executable, str(common.BENCH / f"{name}.py")], cwd=REPO)
        outcome[name] = (code, time.monotonic() - t0)
        print(f"######## bench/{name}.py: exit {code} in {outcome[name][1]:.0f} s", flush=True)
    return outcome


def _row(fig: Figure) -> str:
    cells = [
        f"{fig.label} ({fig.note})" if fig.note else fig.label,
        common.fmt_value(fig.value, fig.unit),
        common.target_text(fig),
        common.earlier_text(fig),
        common.fmt_ratio(fig.vs_target),
        common.fmt_ratio(fig.vs_earlier),
        {True: "✅ met", False: "❌ missed", None: ""}[fig.met],
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


HEADER = (
    "| Figure | Measured | Target (SPEC §13) | Earlier system | \u00d7 better than target "
    "| \u00d7 better than earlier | |\n|---|---:|---:|---:|---:|---:|---|"
)


def summary(reports: list[Report]) -> list[str]:
    figures = {f.key: f for r in reports for f in r.figures}
    keys = [k for k in ORDER if k in figures]
    keys += [k for r in reports for k in (f.key for f in r.figures) if k not in keys]
    lines = [HEADER]
    lines += [_row(figures[k]) for k in keys]
    met = sum(1 for k in keys if figures[k].met)
    missed = [figures[k].label for k in keys if figures[k].met is False]
    verdict = f"{met} of {met + len(missed)} targets met"
    if missed:
        verdict += "; missed: " + "; ".join(missed)
    compared = [figures[k] for k in keys if figures[k].vs_earlier is not None]
    behind = [f.label for f in compared if (f.vs_earlier or 0) < 1]
    versus = f"Better than the earlier system on {len(compared) - len(behind)} of {len(compared)}"
    versus += " figures it was measured on"
    versus += "; not on: " + "; ".join(behind) + "." if behind else "."
    return [verdict + ". " + versus, "", *lines]


def section(report: Report) -> list[str]:
    lines = [
        f"## {report.title}",
        "",
        f"`bench/{report.name}.py` — {report.seconds:.0f} s, "
        f"load average {report.facts.get('load', '?')} at the start, "
        f"{report.load_end or '?'} at the end.",
        "",
    ]
    lines += [_method(report.method), ""]
    if report.distributions:
        lines += [
            "| Distribution | n | median | p95 | p99 | max |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for d in report.distributions.values():
            s, unit = d["summary"], d["unit"]
            cells = [
                d["label"],
                str(s["n"]),
                *(_num(s[k], unit) for k in ("p50", "p95", "p99", "max")),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [HEADER, *(_row(f) for f in report.figures), ""]
    for note in report.notes:
        lines.append(f"- {note}")
    if report.notes:
        lines.append("")
    for plot in report.plots:
        lines += [f"![{Path(plot).stem}]({plot})", ""]
    return lines


def _num(value: float, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.2f} {unit}" if value < 100 else f"{value:.0f} {unit}"


def _method(doc: str) -> str:
    """The script's docstring without its first line (the title)."""
    body = doc.strip().split("\n", 1)
    return body[1].strip() if len(body) > 1 else ""


def write_doc(reports: list[Report], outcome: dict[str, tuple[int, float]]) -> None:
    facts = reports[0].facts if reports else common.machine_facts()
    total = sum(r.seconds for r in reports)
    lines = [
        "# Performance",
        "",
        "<!-- Generated by bench/run_all.py from bench/results/*.json; the analysis comes from",
        "     bench/analysis.md. Rerun `make bench` instead of editing this file. -->",
        "",
        f"Latest run: {facts.get('date', '?')}, {total / 60:.1f} minutes of benchmarks, on:",
        "",
        "| CPU | cores | RAM | kernel | Python | SQLite | tmux | the-loop |",
        "|---|---|---|---|---|---|---|---|",
        "| "
        + " | ".join(
            facts.get(k, "?")
            for k in ("cpu", "cores", "ram", "kernel", "python", "sqlite", "tmux", "the-loop")
        )
        + " |",
        "",
        "The earlier system's figures are the ones SPEC §13 quotes (same kind of 2-core machine,",
        'same fakes). "\u00d7 better" is how many times better than the target or the earlier',
        "figure (above 1 is better; for latencies target ÷ measured, for throughput measured ÷",
        "target). Each benchmark's section below states its method, its distributions",
        "(samples, median, p95, p99) and its plots. The load average is printed because this",
        "machine is shared: other work running at the same time widens the tails.",
        "",
        "## How to rerun",
        "",
        "```sh",
        "make bench                                   # every script, then this page",
        ".venv/bin/python bench/webhook_ack.py        # one script alone (prints its figures)",
        ".venv/bin/python bench/run_all.py --only agent_latency many_sessions",
        ".venv/bin/python bench/run_all.py --report-only   # rebuild this page from results",
        "```",
        "",
        "Scripts: " + ", ".join(f"`bench/{n}.py`" for n in SCRIPTS) + ". Each runs against a",
        "throw-away installation (temporary state dir, config and `HOME`, a private tmux server",
        "`tmux -L the-loop-bench-<random>`), talks only to loopback, and removes everything",
        "when it ends. Raw results: `bench/results/*.json` (not committed).",
        "",
        "## Summary",
        "",
        *summary(reports),
        "",
    ]
    failed = [f"`{n}` (exit {c})" for n, (c, _) in outcome.items() if c != 0]
    if failed:
        lines += [f"**Failed in this run:** {', '.join(failed)}.", ""]
    if ANALYSIS.exists():
        lines += [ANALYSIS.read_text("utf-8").rstrip(), ""]
    for report in reports:
        lines += section(report)
    DOC.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {DOC.relative_to(REPO)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the benchmarks; write docs/performance.md")
    parser.add_argument("--only", nargs="+", choices=SCRIPTS, help="run only these scripts")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the markdown")
    args = parser.parse_args()

    common.print_facts(common.machine_facts())
    started = time.monotonic()
    outcome = {} if args.report_only else run(args.only or SCRIPTS)
    reports = [
        load_report(RESULTS / f"{n}.json") for n in SCRIPTS if (RESULTS / f"{n}.json").exists()
    ]
    write_doc(reports, outcome)
    print(f"\n======== summary ({(time.monotonic() - started) / 60:.1f} min)")
    for fig in sorted((f for r in reports for f in r.figures), key=lambda f: _rank(f.key)):
        print(
            f"{fig.label:<58} {common.fmt_value(fig.value, fig.unit):>12}  "
            f"target {common.target_text(fig):>12}  {common.verdict(fig)}"
        )
    if any(code != 0 for code, _ in outcome.values()):
        sys.exit(1)


def _rank(key: str) -> int:
    return ORDER.index(key) if key in ORDER else len(ORDER)


if __name__ == "__main__":
    main()
