"""Two real daemons ("nodes": two state dirs, tmux sockets and ports) on one real PostgreSQL:
signed webhooks sent to both give one session per item and every delivery exactly once in the
pane of the node that owns the item; a node killed or paused during a burst is declared dead
within ``node.deadAfterSeconds``, its items move, and nothing is lost or delivered twice."""

from __future__ import annotations

import shlex
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.cluster import DEAD_AFTER, Node, cluster_db, declared_dead
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.store import Database, inbox
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionStatus

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def _events(db: Database, *types: str) -> list[Any]:
    return ev.query(db, ev.EventFilter(types=types, limit=None))


def _drained(db: Database) -> bool:
    return all(i.status in ("succeeded", "dead") for i in inbox.list_items(db, limit=10_000))


def _wait_drained(db: Database, timeout: float = 120, cluster: Any = None) -> None:
    """Wait until every inbox item is finished; on a timeout, say which are not and why."""
    try:
        wait_until(lambda: _drained(db), timeout=timeout, interval=0.2, what="the inbox to drain")
    except AssertionError as exc:
        left = [
            (i.delivery_id, i.status, i.attempts, i.last_error, i.outcome)
            for i in inbox.list_items(db, limit=10_000)
            if i.status not in ("succeeded", "dead")
        ]
        import psycopg  # lazy: only a failing wait asks the server what it is doing

        url = getattr(db, "url", "")
        with psycopg.connect(url, autocommit=True) as conn:
            act = conn.execute(
                "SELECT a.pid, a.state, a.wait_event_type, a.wait_event, left(a.query, 80),"
                " a.application_name, (SELECT string_agg(l.locktype || ':' || l.objid || ':' ||"
                " l.granted, ',') FROM pg_locks l WHERE l.pid = a.pid AND l.locktype ="
                " 'advisory') FROM pg_stat_activity a WHERE a.datname = current_database()"
                " AND a.pid <> pg_backend_pid()"
            ).fetchall()
        from tests.daemon import _stacks  # lazy: only a failing wait needs the stacks

        stacks = _stacks(cluster[0].daemon.proc, cluster[0].daemon.log_path) if cluster else ""
        raise AssertionError(f"{exc}: left {left}; activity {act}; A: {stacks}") from None


def _seen(cluster: list[Node]) -> Counter[str]:
    total: Counter[str] = Counter()
    for node in cluster:
        total.update(node.seen())
    return total


def _check_placement(db: Database, cluster: list[Node], items: range) -> None:
    """One session per item, and every token of an item only in its owning node's agents."""
    by_node = {node.name: node.seen() for node in cluster}
    records = session_store.list_sessions(db.connect())
    for item in items:
        mine = [r for r in records if r.work_item.endswith(f"#{item}")]
        assert len(mine) == 1, [(r.id, r.status, r.node) for r in mine]
        owner = mine[0].node
        for name, seen in by_node.items():
            tokens = [t for t in seen if t.startswith(f"{item}-")]
            assert name == owner or not tokens, f"{tokens} of item {item} reached {name}"


def test_webhooks_to_both_nodes_one_session_per_item_each_delivery_once(
    cluster: list[Node],
) -> None:
    items, per_item = range(1, 5), 4
    sent = []
    for seq in range(per_item):
        for item in items:
            node = cluster[(item + seq) % 2]
            assert node.post(item, seq) == 202
            sent.append(f"{item}-{seq}")
    db = cluster_db(cluster)
    wait_until(lambda: _drained(db), timeout=120, interval=0.2, what="the inbox to drain")
    wait_until(lambda: set(sent) <= set(_seen(cluster)), timeout=60, interval=0.2)
    seen = _seen(cluster)
    assert not {k: v for k, v in seen.items() if v > 1}, seen
    _check_placement(db, cluster, items)
    owners = {r.node for r in session_store.list_sessions(db.connect())}
    assert owners <= {"node-a", "node-b"}
    # each node took deliveries for the other's items, and handed them over
    assert _events(db, "dispatch.forwarded")
    assert not _events(db, "node.dead")
    _check_views(cluster, db)


def _check_views(cluster: list[Node], db: Database) -> None:
    """Every node lists every session with its node; a terminal view of another node's session
    names the exact command to run on the owning host (SPEC §17, decision 0032)."""
    a = cluster[0]
    listed = a.work.env.run("sessions", "list")
    assert listed.exit_code == 0, listed.stderr
    assert "NODE" in listed.stdout.splitlines()[0]
    records = session_store.list_sessions(db.connect())
    for rec in records:
        line = next(row for row in listed.stdout.splitlines() if rec.work_item in row)
        assert str(rec.node) in line
    theirs = next((r for r in records if r.node == "node-b"), None)
    assert theirs is not None, "no session started on node-b"
    logs = a.work.env.run("sessions", "logs", theirs.work_item, "-n", "5")
    assert logs.exit_code == 2 and "Traceback" not in logs.stderr
    assert "runs on node node-b" in logs.stderr
    exact = shlex.join(["the-loop", "sessions", "logs", theirs.work_item, "-n", "5"])
    assert f"ssh -t node-b {exact}" in logs.stderr
    said = a.work.env.run("sessions", "say", theirs.work_item, "--text", "hi there")
    assert said.exit_code == 2 and "runs on node node-b" in said.stderr, said.stderr
    assert shlex.join(["--text", "hi there"]) in said.stderr
    screen = a.daemon.api("GET", f"/sessions/{theirs.id}/screen")
    assert screen.status_code == 409 and "node-b" in screen.text
    mine = cluster[1].daemon.api("GET", f"/sessions/{theirs.id}/screen")
    assert mine.status_code == 200 and "FAKE-AGENT" in mine.json()["text"]


def test_100_concurrent_triggers_split_across_both_nodes_make_one_session(
    cluster: list[Node],
) -> None:
    """One new item, 100 start comments at once, every other one to each node: the item's
    database lock decides which node spawns, and every comment reaches that one session once."""
    item, total = 9, 100

    def trigger(seq: int) -> int:
        return cluster[seq % 2].post(item, seq, start=True)

    with ThreadPoolExecutor(max_workers=32) as pool:
        codes = list(pool.map(trigger, range(total)))
    assert set(codes) == {202}, Counter(codes)
    db = cluster_db(cluster)
    _wait_drained(db, cluster=cluster)
    records = session_store.list_sessions(db.connect())
    assert [r.work_item for r in records] == [f"github:octo/repo#{item}"]
    sent = {f"{item}-{seq}" for seq in range(total)}
    wait_until(lambda: sent <= set(_seen(cluster)), timeout=60, interval=0.2)
    seen = _seen(cluster)
    assert not {k: v for k, v in seen.items() if v > 1}, seen
    _check_placement(db, cluster, range(item, item + 1))
    # both nodes accepted comments, and the one that did not own the item handed its share over
    assert _events(db, "dispatch.forwarded")
    assert not [i for i in inbox.list_items(db, limit=1000) if i.status == "dead"]


@pytest.mark.parametrize("cluster", [(1, 3)], indirect=True)
def test_new_sessions_start_on_a_node_with_free_slots(cluster: list[Node]) -> None:
    for item in range(1, 5):  # all to node-a, which has one slot
        assert cluster[0].post(item, 0) == 202
    db = cluster_db(cluster)
    _wait_drained(db, cluster=cluster)
    records = session_store.list_sessions(db.connect())
    started = Counter(r.node for r in records if r.status is SessionStatus.active)
    assert started == Counter({"node-a": 1, "node-b": 3}), [(r.node, r.status) for r in records]
    wait_until(lambda: {f"{i}-0" for i in range(1, 5)} <= set(_seen(cluster)), timeout=60)
    _check_placement(db, cluster, range(1, 5))
    # the next one finds no free slot anywhere: queued (FIFO), none started beyond the slots
    assert cluster[1].post(5, 0) == 202
    _wait_drained(db, cluster=cluster)
    queued = [r for r in session_store.list_sessions(db.connect()) if r.work_item.endswith("#5")]
    assert [r.status for r in queued] == [SessionStatus.queued]


def _burst(node: Node, plan: list[tuple[int, int]], acked: set[str], stop: threading.Event) -> None:
    for item, seq in plan:
        if stop.is_set():
            return
        if node.post(item, seq) == 202:
            acked.add(f"{item}-{seq}")


def _run_burst(
    cluster: list[Node], items: range, per_item: int, victim: Node, act: Any
) -> set[str]:
    """Send a burst split over both nodes (item-wise); ACT(victim) once a third is acked."""
    acked: dict[str, set[str]] = {n.name: set() for n in cluster}
    stop = threading.Event()
    plan = [(i, s) for s in range(1, per_item) for i in items]
    threads = [
        threading.Thread(
            target=_burst, args=(n, plan[k::2], acked[n.name], stop), name=f"burst-{n.name}"
        )
        for k, n in enumerate(cluster)
    ]
    for t in threads:
        t.start()
    wait_until(
        lambda: (
            sum(map(len, acked.values())) >= len(plan) // 3
            or not any(t.is_alive() for t in threads)
        ),
        timeout=60,
    )
    act(victim)
    for t in threads:
        t.join(60)
    return set().union(*acked.values())


def _start_items(cluster: list[Node], items: range) -> None:
    for item in items:
        assert cluster[item % 2].post(item, 0) == 202
    db = cluster_db(cluster)
    wait_until(
        lambda: (
            len([r for r in session_store.list_sessions(db.connect()) if r.started_at is not None])
            >= len(items)
        ),
        timeout=120,
        interval=0.2,
        what="a started session per item",
    )


def _moved_in_flight(db: Database) -> int:
    """The prompts a dead node had in flight, counted where its sessions were taken over or
    taken back."""
    taken = _events(db, "session.moved", "session.taken_back")
    return sum(int(e.payload.get("inFlight", 0)) for e in taken)


def _story(db: Database, tokens: dict[str, int]) -> str:
    """What the log says of the items of TOKENS: a failing assertion's account."""
    items = {k.split("-")[0] for k in tokens}
    ids = {
        r.id
        for r in session_store.list_sessions(db.connect())
        if r.work_item.split("#")[-1] in items
    }
    lines = [
        f"{e.ts:%H:%M:%S.%f} {e.type} {e.source} {e.session_id} {e.delivery_id} {e.payload}"
        for e in ev.query(db, ev.EventFilter(limit=None))
        if e.session_id in ids
        or any((e.delivery_id or "").startswith(f"d-{i}-") for i in items)
        or e.type.startswith("node.")
    ]
    return f"{tokens}\n" + "\n".join(lines)


def test_a_node_killed_during_a_burst_is_declared_dead_and_its_items_move(
    cluster: list[Node],
) -> None:
    items, per_item = range(1, 7), 6
    _start_items(cluster, items)
    db = cluster_db(cluster)
    victim = cluster[1]
    theirs = sorted(
        r.id for r in session_store.list_sessions(db.connect()) if r.node == victim.name
    )
    killed_at: list[float] = []

    def kill(node: Node) -> None:
        node.daemon.stop(signal.SIGKILL)
        killed_at.append(time.time())

    acked = _run_burst(cluster, items, per_item, victim, kill)
    acked |= {f"{i}-0" for i in items}
    (report, *_) = wait_until(
        lambda: declared_dead(db, victim.name), timeout=DEAD_AFTER * 6, what="node.dead"
    )
    # reported within deadAfterSeconds of its last heartbeat (plus one check interval)
    assert report.payload["silentSeconds"] <= DEAD_AFTER + 3.0, report.payload
    assert report.ts.timestamp() - killed_at[0] <= DEAD_AFTER + 4.0
    # the next comment on each of its items respawns it on the live node
    orphaned = set(report.payload["orphaned"])
    for item in items:
        if cluster[0].post(item, per_item) == 202:
            acked.add(f"{item}-{per_item}")
    _wait_drained(db, cluster=cluster)
    wait_until(lambda: acked <= set(_seen(cluster)), timeout=60, interval=0.2)
    seen = _seen(cluster)
    doubled = {k: v for k, v in seen.items() if v > 1}
    # only a prompt the dead node had in flight (staged, maybe pasted) can come twice
    assert len(doubled) <= _moved_in_flight(db), doubled
    records = session_store.list_sessions(db.connect())
    assert all(r.node == cluster[0].name for r in records if r.id in orphaned)
    assert {r.status for r in records} <= {SessionStatus.active}
    # each of the victim's sessions moved once, and no other: the declaration orphaned some;
    # a delivery node-a processed after the victim fell silent, before the declaration, may
    # have taken over another at once (its node no longer alive), which is the same move
    assert orphaned <= set(theirs), (orphaned, theirs)
    assert sorted(e.session_id for e in _events(db, "session.moved")) == theirs


def test_a_paused_node_declared_dead_delivers_nothing_twice_when_it_wakes(
    cluster: list[Node],
) -> None:
    items, per_item = range(1, 7), 6
    _start_items(cluster, items)
    db = cluster_db(cluster)
    victim = cluster[1]

    def pause(node: Node) -> None:
        assert node.daemon.proc is not None
        node.daemon.proc.send_signal(signal.SIGSTOP)

    acked = _run_burst(cluster, items, per_item, victim, pause)
    acked |= {f"{i}-0" for i in items}
    wait_until(lambda: declared_dead(db, victim.name), timeout=DEAD_AFTER * 6, what="node.dead")
    for item in items:
        if cluster[0].post(item, per_item) == 202:
            acked.add(f"{item}-{per_item}")
    _wait_drained(db, cluster=cluster)
    wait_until(lambda: acked <= set(_seen(cluster)), timeout=60, interval=0.2)
    before, anywhere = victim.seen(), _seen(cluster)
    assert victim.daemon.proc is not None
    victim.daemon.proc.send_signal(signal.SIGCONT)
    wait_until(
        lambda: any(e.payload.get("node") == victim.name for e in _events(db, "node.rejoined")),
        timeout=DEAD_AFTER * 6,
        what="node.rejoined",
    )
    # what it had claimed before the pause was released and processed by the other node
    for item in items:  # and new comments still reach each item once, wherever it runs now
        assert cluster[item % 2].post(item, per_item + 1) == 202
        acked.add(f"{item}-{per_item + 1}")
    _wait_drained(db, cluster=cluster)
    wait_until(lambda: acked <= set(_seen(cluster)), timeout=60, interval=0.2)
    after = victim.seen()
    woke = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
    # nothing it had claimed or staged before the pause reaches its agents again; what it
    # delivers now is new: this round's comments, or a request it accepted only on waking
    # (sent while it was paused, the sender timed out: never acknowledged, never delivered)
    again = {k: v for k, v in woke.items() if anywhere[k] > 0}
    assert not again, _story(db, woke)
    seen = _seen(cluster)
    doubled = {k: v for k, v in seen.items() if v > 1}
    assert len(doubled) <= _moved_in_flight(db), _story(db, doubled)
