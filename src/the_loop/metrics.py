"""In-process metrics of the daemon, rendered in the Prometheus text format."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

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
    """Histograms kept in memory by this process (reset on restart)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.webhook_latency = Histogram(WEBHOOK_BUCKETS)

    def observe_webhook(self, seconds: float) -> None:
        with self._lock:
            self.webhook_latency.observe(seconds)

    def render_process(self) -> list[str]:
        with self._lock:
            lines = self.webhook_latency.render(
                "the_loop_webhook_ack_seconds", "Time from request to webhook acknowledgement."
            )
        return lines


METRICS = Metrics()
