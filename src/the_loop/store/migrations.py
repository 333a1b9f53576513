"""The named schema migrations, applied in order once each and recorded in ``schema_migrations``.

Each migration is a function taking a ``Schema`` (``store.schema``): it writes the DDL of the
backend it is given, with the schema's word where SQLite and PostgreSQL spell a type
differently, and each backend's own statements where they differ in more (``db.kind``). The
recorded name is the function's without its leading ``m``. ``apply_pending`` runs those a
database has not recorded, in the order below.

Append only: a released migration is never edited, a change is a new named function.

Long because the whole schema's history is here, in the order it is applied: one place to read
what a table is and how it came to be.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from the_loop.store.schema import Migration, Schema

MIGRATIONS: list[Migration] = []


def migration(apply: Callable[[Schema], None]) -> Callable[[Schema], None]:
    """Register APPLY as the next migration, named after it (``m0001_events``: ``0001_events``)."""
    MIGRATIONS.append(Migration(apply.__name__.removeprefix("m"), apply))
    return apply


def apply_pending(
    db: Schema, applied: Collection[str], record: Callable[[str, float], object]
) -> None:
    """Apply the migrations not in APPLIED, in order, and RECORD each one's name and time (the
    times strictly increase: ``applied_migrations`` lists them in the order they ran)."""
    stamp = time.time()
    for name, apply in MIGRATIONS:
        if name in applied:
            continue
        apply(db)
        stamp = max(stamp + 1e-6, time.time())
        record(name, stamp)


@migration
def m0001_events(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE events (
            id {db.serial},
            ts {db.real} NOT NULL,
            type TEXT NOT NULL,
            level {db.int} NOT NULL,
            source TEXT NOT NULL,
            work_item TEXT,
            standing TEXT,
            session_id TEXT,
            delivery_id TEXT,
            payload TEXT NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX events_ts ON events (ts);
        CREATE INDEX events_type ON events (type, id);
        CREATE INDEX events_work_item ON events (work_item, id) WHERE work_item IS NOT NULL;
        CREATE INDEX events_standing ON events (standing, id) WHERE standing IS NOT NULL;
    """)


@migration
def m0002_sessions(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            work_item TEXT NOT NULL,
            harness TEXT NOT NULL,
            harness_session_id TEXT,
            runner TEXT NOT NULL,
            tmux_target TEXT,
            cwd TEXT NOT NULL,
            status TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL DEFAULT '',
            created_at {db.real} NOT NULL,
            started_at {db.real},
            last_event_at {db.real} NOT NULL,
            closed_at {db.real},
            close_reason TEXT
        );
        CREATE UNIQUE INDEX sessions_one_live ON sessions (work_item)
            WHERE status IN ('queued', 'active', 'paused');
        CREATE INDEX sessions_status ON sessions (status, created_at);
        CREATE INDEX sessions_work_item ON sessions (work_item, created_at);
        CREATE TABLE session_prompts (
            seq {db.serial},
            session_id TEXT NOT NULL REFERENCES sessions (id),
            delivery_id TEXT,
            prompt TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {db.real} NOT NULL,
            delivered_at {db.real}
        );
        CREATE INDEX session_prompts_session ON session_prompts (session_id, seq);
        CREATE UNIQUE INDEX session_prompts_once ON session_prompts (session_id, delivery_id)
            WHERE delivery_id IS NOT NULL
    """)


@migration
def m0003_inbox(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE inbox (
            delivery_id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            source TEXT NOT NULL,
            payload {db.blob} NOT NULL,
            status TEXT NOT NULL,
            attempts {db.int} NOT NULL DEFAULT 0,
            received_at {db.real} NOT NULL,
            updated_at {db.real} NOT NULL,
            next_attempt_at {db.real} NOT NULL,
            last_error TEXT,
            outcome TEXT
        );
        CREATE INDEX inbox_ready ON inbox (status, next_attempt_at, received_at)
    """)


@migration
def m0010_github_etags(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE github_etags (
            key TEXT PRIMARY KEY,
            etag TEXT NOT NULL,
            body {db.blob} NOT NULL,
            link TEXT,
            stored_at {db.real} NOT NULL
        );
        CREATE INDEX github_etags_stored_at ON github_etags (stored_at)
    """)


@migration
def m0004_standing(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE standing (
            name TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            harness TEXT,
            args TEXT,
            cwd TEXT,
            prompt TEXT NOT NULL DEFAULT '',
            description TEXT NOT NULL DEFAULT '',
            auto_start {db.int} NOT NULL DEFAULT 1,
            conversation_id TEXT,
            status TEXT NOT NULL,
            started_at {db.real},
            last_message_at {db.real},
            created_at {db.real} NOT NULL
        )
    """)


@migration
def m0005_poll(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE poll_items (
            repo TEXT NOT NULL,
            number {db.int} NOT NULL,
            is_pull {db.int} NOT NULL,
            state TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            baseline_at TEXT NOT NULL,
            baseline_comment_id {db.int} NOT NULL DEFAULT 0,
            first_seen {db.real} NOT NULL,
            last_seen {db.real} NOT NULL,
            PRIMARY KEY (repo, number)
        );
        CREATE TABLE poll_cycles (
            id {db.serial},
            started_at {db.real} NOT NULL,
            seconds {db.real} NOT NULL,
            repos {db.int} NOT NULL,
            requests {db.int} NOT NULL,
            not_modified {db.int} NOT NULL,
            ok {db.int} NOT NULL,
            error TEXT
        )
    """)


@migration
def m0010_outbox(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE outbox (
            id {db.serial},
            key TEXT NOT NULL UNIQUE,
            target TEXT NOT NULL,
            kind TEXT NOT NULL,
            what TEXT NOT NULL,
            work_item TEXT,
            payload TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts {db.int} NOT NULL DEFAULT 0,
            verify {db.int} NOT NULL DEFAULT 0,
            next_attempt_at {db.real} NOT NULL,
            claimed_by TEXT,
            claimed_until {db.real},
            last_error TEXT,
            result TEXT,
            created_at {db.real} NOT NULL,
            updated_at {db.real} NOT NULL
        );
        CREATE INDEX outbox_due ON outbox (status, next_attempt_at, id);
        CREATE INDEX outbox_created ON outbox (created_at)
    """)


@migration
def m0011_inbox_work(db: Schema) -> None:
    db.run("""
        ALTER TABLE inbox ADD COLUMN work TEXT;
        ALTER TABLE inbox ADD COLUMN lane TEXT
    """)


@migration
def m0012_agent_prompts(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE agent_prompts (
            seq {db.serial},
            agent TEXT NOT NULL,
            delivery_id TEXT,
            prompt TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {db.real} NOT NULL,
            delivered_at {db.real}
        );
        INSERT INTO agent_prompts (seq, agent, delivery_id, prompt, status, created_at,
            delivered_at)
            SELECT seq, session_id, delivery_id, prompt, status, created_at, delivered_at
            FROM session_prompts;
        DROP TABLE session_prompts;
        CREATE INDEX agent_prompts_agent ON agent_prompts (agent, seq);
        CREATE INDEX agent_prompts_open ON agent_prompts (agent, seq)
            WHERE status IN ('pending', 'staged');
        CREATE UNIQUE INDEX agent_prompts_once ON agent_prompts (agent, delivery_id)
            WHERE delivery_id IS NOT NULL
    """)


@migration
def m0013_seen_github_ids(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE github_seen (
            key TEXT PRIMARY KEY,
            delivery_id TEXT NOT NULL,
            work_item TEXT,
            seen_at {db.real} NOT NULL
        );
        CREATE TABLE poll_closure_checks (
            repo TEXT NOT NULL,
            number {db.int} NOT NULL,
            work_item TEXT NOT NULL,
            since {db.real} NOT NULL,
            attempts {db.int} NOT NULL DEFAULT 0,
            last_error TEXT,
            PRIMARY KEY (repo, number)
        );
        CREATE TABLE github_rate_limits (
            api_url TEXT NOT NULL,
            resource TEXT NOT NULL,
            reset_at {db.real} NOT NULL,
            secondary {db.int} NOT NULL,
            message TEXT NOT NULL,
            recorded_at {db.real} NOT NULL,
            PRIMARY KEY (api_url, resource)
        )
    """)


@migration
def m0014_attention(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE attention (
            agent TEXT PRIMARY KEY,
            work_item TEXT,
            standing TEXT,
            harness TEXT NOT NULL DEFAULT '',
            requester TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            since {db.real} NOT NULL,
            signal TEXT NOT NULL,
            rule TEXT NOT NULL DEFAULT '',
            last_message TEXT NOT NULL DEFAULT '',
            prompt_id TEXT,
            updated_at {db.real} NOT NULL
        );
        CREATE TABLE attention_prompts (
            id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            kind TEXT NOT NULL,
            tool TEXT NOT NULL DEFAULT '',
            input TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            created_at {db.real} NOT NULL,
            decision TEXT,
            actor TEXT,
            via TEXT,
            answered_at {db.real},
            closed_at {db.real},
            outcome TEXT,
            notice_at {db.real},
            followup_at {db.real}
        );
        CREATE INDEX attention_prompts_agent ON attention_prompts (agent, created_at)
    """)


@migration
def m0016_slack(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE slack_threads (
            key TEXT PRIMARY KEY,
            channel TEXT NOT NULL,
            thread_ts TEXT,
            created_at {db.real} NOT NULL,
            bound_at {db.real}
        );
        CREATE UNIQUE INDEX slack_threads_thread ON slack_threads (channel, thread_ts);
        CREATE TABLE slack_prompts (
            prompt_id TEXT PRIMARY KEY,
            thread_key TEXT NOT NULL,
            channel TEXT NOT NULL,
            ts TEXT,
            queued_at {db.real} NOT NULL,
            update_queued_at {db.real}
        )
    """)


@migration
def m0017_usage_budgets(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE usage_entries (
            agent TEXT NOT NULL,
            entry TEXT NOT NULL,
            kind TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            input_tokens {db.int} NOT NULL DEFAULT 0,
            output_tokens {db.int} NOT NULL DEFAULT 0,
            cache_creation_tokens {db.int} NOT NULL DEFAULT 0,
            cache_read_tokens {db.int} NOT NULL DEFAULT 0,
            day TEXT NOT NULL,
            at {db.real} NOT NULL,
            PRIMARY KEY (agent, entry)
        );
        CREATE INDEX usage_entries_day ON usage_entries (day);
        CREATE TABLE usage_sources (
            agent TEXT NOT NULL,
            path TEXT NOT NULL,
            read_bytes {db.int} NOT NULL DEFAULT 0,
            read_at {db.real} NOT NULL,
            PRIMARY KEY (agent, path)
        );
        CREATE TABLE spend (
            agent TEXT PRIMARY KEY,
            hold TEXT,
            hold_reason TEXT NOT NULL DEFAULT '',
            held_at {db.real},
            holds {db.int} NOT NULL DEFAULT 0,
            extra_usd {db.real} NOT NULL DEFAULT 0,
            extra_turns {db.int} NOT NULL DEFAULT 0,
            waiting_since {db.real}
        );
        ALTER TABLE attention ADD COLUMN transcript TEXT
    """)


@migration
def m0019_nodes(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE nodes (
            name TEXT PRIMARY KEY,
            pid {db.int} NOT NULL,
            url TEXT NOT NULL DEFAULT '',
            capacity {db.int} NOT NULL DEFAULT 0,
            started_at {db.real} NOT NULL,
            heartbeat_at {db.real} NOT NULL,
            dead_at {db.real}
        );
        ALTER TABLE sessions ADD COLUMN node TEXT;
        ALTER TABLE inbox ADD COLUMN node TEXT;
        ALTER TABLE inbox ADD COLUMN claimed_by TEXT;
        DROP INDEX sessions_one_live;
        CREATE UNIQUE INDEX sessions_one_live ON sessions (work_item)
            WHERE status IN ('queued', 'active', 'paused', 'orphaned');
        CREATE INDEX sessions_node ON sessions (node, status)
    """)


@migration
def m0020_transcripts(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE transcripts (
            conversation TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            bytes {db.int} NOT NULL DEFAULT 0,
            over_cap {db.int} NOT NULL DEFAULT 0,
            updated_at {db.real} NOT NULL
        );
        CREATE INDEX transcripts_agent ON transcripts (agent);
        CREATE TABLE transcript_chunks (
            conversation TEXT NOT NULL,
            start {db.int} NOT NULL,
            size {db.int} NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (conversation, start)
        )
    """)


@migration
def m0021_standing_node(db: Schema) -> None:
    db.run(f"""
        ALTER TABLE standing ADD COLUMN node TEXT;
        ALTER TABLE nodes ADD COLUMN cluster {db.int} NOT NULL DEFAULT 0
    """)


@migration
def m0022_inbox_claim_order(db: Schema) -> None:
    db.run("""
        CREATE INDEX inbox_order ON inbox (status, received_at)
    """)


@migration
def m0023_hook_channel(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE hook_tokens (
            agent TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL,
            previous_hash TEXT,
            work_item TEXT,
            transcript_root TEXT,
            issued_at {db.real} NOT NULL
        );
        CREATE TABLE hook_reports (
            id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            prompt_id TEXT,
            at {db.real} NOT NULL
        );
        CREATE INDEX hook_reports_at ON hook_reports (at)
    """)


@migration
def m0024_attention_turns(db: Schema) -> None:
    db.run(f"""
        CREATE TABLE attention_turns (
            id {db.serial},
            agent TEXT NOT NULL,
            thread_key TEXT NOT NULL,
            message TEXT NOT NULL,
            created_at {db.real} NOT NULL
        )
    """)


_INBOX_COLUMNS = (
    "delivery_id, event, source, payload, status, attempts, received_at, updated_at,"
    " next_attempt_at, last_error, outcome, work, lane, node, claimed_by"
)
_SESSION_COLUMNS = (
    "id, work_item, harness, harness_session_id, runner, tmux_target, cwd, status, title, url,"
    " created_at, started_at, last_event_at, closed_at, close_reason, node"
)


@migration
def m0025_inbox_seq(db: Schema) -> None:
    """``inbox.seq``: the order deliveries were accepted in, numbered by the database (the
    claim's tie-break between rows of one group commit, which share ``received_at``). Rows
    already there are numbered in the order the claim took them until now. On SQLite a plain
    ``INTEGER PRIMARY KEY``: a new row gets a number above every row there (rows are never
    deleted), without ``AUTOINCREMENT``'s extra page write per commit (45 µs an acceptance)."""
    if db.kind == "sqlite":
        db.run(f"""
            CREATE TABLE inbox_seq (
                seq INTEGER PRIMARY KEY,
                delivery_id TEXT NOT NULL UNIQUE,
                event TEXT NOT NULL,
                source TEXT NOT NULL,
                payload BLOB NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                received_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                next_attempt_at REAL NOT NULL,
                last_error TEXT,
                outcome TEXT,
                work TEXT,
                lane TEXT,
                node TEXT,
                claimed_by TEXT
            );
            INSERT INTO inbox_seq ({_INBOX_COLUMNS})
                SELECT {_INBOX_COLUMNS} FROM inbox ORDER BY received_at, rowid;
            DROP TABLE inbox;
            ALTER TABLE inbox_seq RENAME TO inbox;
            CREATE INDEX inbox_ready ON inbox (status, next_attempt_at, received_at)
        """)
    else:
        db.run("""
            ALTER TABLE inbox ADD COLUMN seq BIGINT;
            UPDATE inbox SET seq = arrival.n
                FROM (SELECT delivery_id, row_number() OVER (ORDER BY received_at, ctid) AS n
                      FROM inbox) AS arrival
                WHERE inbox.delivery_id = arrival.delivery_id;
            ALTER TABLE inbox ALTER COLUMN seq SET NOT NULL;
            ALTER TABLE inbox ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
            SELECT setval(pg_get_serial_sequence('inbox', 'seq'),
                          (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox), false);
            DROP INDEX inbox_order
        """)
    db.run("CREATE INDEX inbox_order ON inbox (status, received_at, seq)")


@migration
def m0026_sessions_seq(db: Schema) -> None:
    """``sessions.seq``: the order sessions were created in, numbered by the database (the
    queue's tie-break between sessions created in the same instant). Sessions already there
    are numbered in the order the queue took them until now."""
    if db.kind == "sqlite":
        db.run(f"""
            CREATE TABLE sessions_seq (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                work_item TEXT NOT NULL,
                harness TEXT NOT NULL,
                harness_session_id TEXT,
                runner TEXT NOT NULL,
                tmux_target TEXT,
                cwd TEXT NOT NULL,
                status TEXT NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                url TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL,
                started_at REAL,
                last_event_at REAL NOT NULL,
                closed_at REAL,
                close_reason TEXT,
                node TEXT
            );
            INSERT INTO sessions_seq ({_SESSION_COLUMNS})
                SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY created_at, rowid;
            DROP TABLE sessions;
            ALTER TABLE sessions_seq RENAME TO sessions;
            CREATE UNIQUE INDEX sessions_one_live ON sessions (work_item)
                WHERE status IN ('queued', 'active', 'paused', 'orphaned');
            CREATE INDEX sessions_work_item ON sessions (work_item, created_at);
            CREATE INDEX sessions_node ON sessions (node, status)
        """)
    else:
        db.run("""
            ALTER TABLE sessions ADD COLUMN seq BIGINT;
            UPDATE sessions SET seq = creation.n
                FROM (SELECT id, row_number() OVER (ORDER BY created_at, ctid) AS n
                      FROM sessions) AS creation
                WHERE sessions.id = creation.id;
            ALTER TABLE sessions ALTER COLUMN seq SET NOT NULL;
            ALTER TABLE sessions ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
            SELECT setval(pg_get_serial_sequence('sessions', 'seq'),
                          (SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions), false);
            DROP INDEX sessions_status
        """)
    db.run("CREATE INDEX sessions_status ON sessions (status, created_at, seq)")


@migration
def m0027_glob(db: Schema) -> None:
    """PostgreSQL gets SQLite's ``glob(pattern, text)``: whether TEXT matches PATTERN (``*``,
    ``?`` and ``[...]`` classes, case-sensitive), so an event filter is one text on both."""
    if db.kind == "postgresql":
        db.run(r"""
            CREATE OR REPLACE FUNCTION glob(pattern TEXT, string TEXT) RETURNS BOOLEAN
                LANGUAGE SQL IMMUTABLE STRICT AS $$ SELECT string ~ ('^' || replace(replace(
                regexp_replace(pattern, '([.+^$(){}|\\])', '\\\1', 'g'), '*', '.*'), '?', '.')
                || '$') $$;
            DROP FUNCTION IF EXISTS the_loop_glob(TEXT)
        """)


@migration
def m0028_inbox_one_status_index(db: Schema) -> None:
    """Every inbox write updated three indexes; the claim walks ``inbox_order``, so
    ``inbox_ready`` only cost a WAL page per write (decision 0068)."""
    db.run("DROP INDEX IF EXISTS inbox_ready")


@migration
def m0029_sessions_newest(db: Schema) -> None:
    """Sessions newest first (``sessions list``, the API and the Sessions page) read the newest
    rows from an index instead of sorting every session ever kept: 10,000 of them cost about
    3 ms a listing."""
    db.run("CREATE INDEX IF NOT EXISTS sessions_newest ON sessions (created_at)")


@migration
def m0030_attention_turn_at(db: Schema) -> None:
    """When each agent last showed its model at work (a finished turn, a tool it asked for) or
    was started: the messages delivered after it are the ones a turn that failed for good
    never answered (decision 0082)."""
    db.run(f"ALTER TABLE attention ADD COLUMN turn_at {db.real}")


@migration
def m0031_sessions_orphaned_from(db: Schema) -> None:
    """The status a session had when its node was declared dead (``active`` or ``paused``): a
    paused session taken over or taken back stays paused (decision 0098)."""
    db.run("ALTER TABLE sessions ADD COLUMN orphaned_from TEXT")


@migration
def m0032_attention_submitted_at(db: Schema) -> None:
    """When the agent's harness last reported taking a prompt (Claude Code's
    ``UserPromptSubmit`` hook, when it started): a delivery knows its Enter was taken
    (decision 0100)."""
    db.run(f"ALTER TABLE attention ADD COLUMN submitted_at {db.real}")


@migration
def m0033_agent_prompts_held(db: Schema) -> None:
    """Why a queued prompt waits, once that wait was reported: a wait the daemon looks at
    again every second (a person's draft in the agent's input box) is reported once
    (decision 0101)."""
    db.run("ALTER TABLE agent_prompts ADD COLUMN held TEXT")


@migration
def m0034_agent_prompts_held_at(db: Schema) -> None:
    """When a queued prompt's reported wait began, and when its requester was told of it: a
    wait behind a person's draft that lasts ``attention.notifyAfterSeconds`` is told once on
    the work item (decision 0104)."""
    db.run(f"""
        ALTER TABLE agent_prompts ADD COLUMN held_at {db.real};
        ALTER TABLE agent_prompts ADD COLUMN noticed_at {db.real}
    """)
