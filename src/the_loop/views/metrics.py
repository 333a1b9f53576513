"""Metrics in the Prometheus text format: figures read from the state (sessions, deliveries,
inbox, poll cycles) and histograms kept in memory by this process (webhook latency)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pydantic import BaseModel

from the_loop.context import Ctx
from the_loop.runner.tmux_screens import Tally
from the_loop.store import events, inbox
from the_loop.store.inbox import InboxStatus
from the_loop.store.intake_writer import writer_for
from the_loop.store.sessions import SessionStatus, counts_by_status, delivered_total
from the_loop.supervise import board_for, task_metric_lines

WEBHOOK_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    samples: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.samples += 1

    def render(self, name: str, help_text: str) -> list[str]:
        lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
        for bound, count in zip(self.buckets, self.counts, strict=True):
            lines.append(f'{name}_bucket{{le="{bound}"}} {count}')
        lines.append(f'{name}_bucket{{le="+Inf"}} {self.samples}')
        lines.append(f"{name}_sum {self.total:.6f}")
        lines.append(f"{name}_count {self.samples}")
        return lines


class Metrics:
    """Histograms and counters kept in memory by this process (reset on restart).

    Every refused request is counted here, including those the event log only samples:
    ``webhook_rejections`` by (HTTP status, reason code), ``refused_requests`` (heads refused
    by the server's limits, by status) and ``client_disconnects`` (bodies cut short)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.webhook_latency = Histogram(WEBHOOK_BUCKETS)
        self.webhook_rejections: dict[tuple[int, str], int] = {}
        self.refused_requests: dict[int, int] = {}
        self.client_disconnects = 0
        self.shed: dict[str, int] = {}

    def observe_webhook(self, seconds: float) -> None:
        with self._lock:
            self.webhook_latency.observe(seconds)

    def count_rejection(self, status: int, code: str) -> None:
        with self._lock:
            key = (status, code)
            self.webhook_rejections[key] = self.webhook_rejections.get(key, 0) + 1

    def count_refused_request(self, status: int) -> None:
        with self._lock:
            self.refused_requests[status] = self.refused_requests.get(status, 0) + 1

    def count_disconnect(self) -> None:
        with self._lock:
            self.client_disconnects += 1

    def count_shed(self, what: str) -> None:
        """A connection, login, terminal or event stream shed by a bound (``web.limits``)."""
        with self._lock:
            self.shed[what] = self.shed.get(what, 0) + 1

    def render_process(self) -> list[str]:
        with self._lock:
            lines = self.webhook_latency.render(
                "the_loop_webhook_ack_seconds", "Time from request to webhook acknowledgement."
            )
            lines += [
                "# HELP the_loop_webhook_rejections_total Webhooks refused, by status and reason.",
                "# TYPE the_loop_webhook_rejections_total counter",
            ]
            lines += [
                f'the_loop_webhook_rejections_total{{status="{s}",reason="{c}"}} {n}'
                for (s, c), n in sorted(self.webhook_rejections.items())
            ]
            lines += [
                "# HELP the_loop_http_refused_total Requests refused by the server's limits.",
                "# TYPE the_loop_http_refused_total counter",
            ]
            lines += [
                f'the_loop_http_refused_total{{status="{s}"}} {n}'
                for s, n in sorted(self.refused_requests.items())
            ]
            lines += [
                "# TYPE the_loop_client_disconnects_total counter",
                f"the_loop_client_disconnects_total {self.client_disconnects}",
                "# HELP the_loop_shed_total Connections, logins, terminals and streams shed.",
                "# TYPE the_loop_shed_total counter",
            ]
            lines += [
                f'the_loop_shed_total{{what="{w}"}} {n}' for w, n in sorted(self.shed.items())
            ]
        return lines


METRICS = Metrics()


class Figures(BaseModel):
    """What the state says: sessions and inbox items by status (every status, zeros included),
    prompts delivered and poll cycles run."""

    sessions: dict[str, int]
    deliveries: int
    inbox: dict[str, int]
    poll_cycles: int


def figures(ctx: Ctx) -> Figures:
    """The figures of CTX's state database."""
    conn = ctx.db.connect()
    by_status = counts_by_status(conn)
    in_inbox = inbox.counts(ctx.db)
    return Figures(
        sessions={s.value: by_status.get(s.value, 0) for s in SessionStatus},
        deliveries=delivered_total(conn),
        inbox={s.value: in_inbox.get(s.value, 0) for s in InboxStatus},
        poll_cycles=events.count_of_type(ctx.db, "poll.cycle"),
    )


def prometheus_text(ctx: Ctx) -> str:
    """The ``/metrics`` document: CTX's figures, then this process's histograms."""
    found = figures(ctx)
    lines = [
        "# HELP the_loop_sessions Work-item sessions by status.",
        "# TYPE the_loop_sessions gauge",
    ]
    lines += [f'the_loop_sessions{{status="{k}"}} {v}' for k, v in found.sessions.items()]
    lines += [
        "# TYPE the_loop_deliveries_total counter",
        f"the_loop_deliveries_total {found.deliveries}",
        "# HELP the_loop_inbox Inbox items by status.",
        "# TYPE the_loop_inbox gauge",
    ]
    lines += [f'the_loop_inbox{{status="{k}"}} {v}' for k, v in found.inbox.items()]
    lines += [
        "# TYPE the_loop_poll_cycles_total counter",
        f"the_loop_poll_cycles_total {found.poll_cycles}",
    ]
    lines += task_metric_lines(board_for(ctx.db).snapshot())
    lines += METRICS.render_process()
    lines += [
        "# HELP the_loop_tmux_pane_captures_total Panes this process read (capture-pane).",
        "# TYPE the_loop_tmux_pane_captures_total counter",
        f"the_loop_tmux_pane_captures_total {Tally.panes}",
        "# HELP the_loop_tmux_commands_total tmux commands this process ran.",
        "# TYPE the_loop_tmux_commands_total counter",
        f"the_loop_tmux_commands_total {Tally.commands}",
    ]
    commits = writer_for(ctx.db).figures
    lines += [
        "# HELP the_loop_intake_commits_total Fully-synced group commits of acceptances.",
        "# TYPE the_loop_intake_commits_total counter",
        f"the_loop_intake_commits_total {commits.commits}",
        "# TYPE the_loop_intake_acceptances_total counter",
        f"the_loop_intake_acceptances_total {commits.acceptances}",
        "# TYPE the_loop_intake_commit_seconds_total counter",
        f"the_loop_intake_commit_seconds_total {commits.commit_seconds:.6f}",
        "# TYPE the_loop_intake_largest_batch gauge",
        f"the_loop_intake_largest_batch {commits.largest_batch}",
    ]
    return "\n".join(lines) + "\n"
