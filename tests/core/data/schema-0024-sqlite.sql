-- The state schema at migration 0024_attention_turns, as SQLite databases have it
-- (frozen from the code before 0025_explicit_order: tests/core/test_store_upgrade.py).
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL);
-- 0001_events
CREATE TABLE events ( id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, type TEXT NOT NULL, level INTEGER NOT NULL, source TEXT NOT NULL, work_item TEXT, standing TEXT, session_id TEXT, delivery_id TEXT, payload TEXT NOT NULL DEFAULT '{}' );
CREATE INDEX events_ts ON events (ts);
CREATE INDEX events_type ON events (type, id);
CREATE INDEX events_work_item ON events (work_item, id) WHERE work_item IS NOT NULL;
CREATE INDEX events_standing ON events (standing, id) WHERE standing IS NOT NULL;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0001_events', 1700000000.001);
-- 0002_sessions
CREATE TABLE sessions ( id TEXT PRIMARY KEY, work_item TEXT NOT NULL, harness TEXT NOT NULL, harness_session_id TEXT, runner TEXT NOT NULL, tmux_target TEXT, cwd TEXT NOT NULL, status TEXT NOT NULL, title TEXT NOT NULL DEFAULT '', url TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, started_at REAL, last_event_at REAL NOT NULL, closed_at REAL, close_reason TEXT );
CREATE UNIQUE INDEX sessions_one_live ON sessions (work_item) WHERE status IN ('queued', 'active', 'paused');
CREATE INDEX sessions_status ON sessions (status, created_at);
CREATE INDEX sessions_work_item ON sessions (work_item, created_at);
CREATE TABLE session_prompts ( seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions (id), delivery_id TEXT, prompt TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL, delivered_at REAL );
CREATE INDEX session_prompts_session ON session_prompts (session_id, seq);
CREATE UNIQUE INDEX session_prompts_once ON session_prompts (session_id, delivery_id) WHERE delivery_id IS NOT NULL;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0002_sessions', 1700000000.002);
-- 0003_inbox
CREATE TABLE inbox ( delivery_id TEXT PRIMARY KEY, event TEXT NOT NULL, source TEXT NOT NULL, payload BLOB NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, received_at REAL NOT NULL, updated_at REAL NOT NULL, next_attempt_at REAL NOT NULL, last_error TEXT, outcome TEXT );
CREATE INDEX inbox_ready ON inbox (status, next_attempt_at, received_at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0003_inbox', 1700000000.003);
-- 0010_github_etags
CREATE TABLE github_etags ( key TEXT PRIMARY KEY, etag TEXT NOT NULL, body BLOB NOT NULL, link TEXT, stored_at REAL NOT NULL );
CREATE INDEX github_etags_stored_at ON github_etags (stored_at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0010_github_etags', 1700000000.004);
-- 0004_standing
CREATE TABLE standing ( name TEXT PRIMARY KEY, source TEXT NOT NULL, harness TEXT, args TEXT, cwd TEXT, prompt TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '', auto_start INTEGER NOT NULL DEFAULT 1, conversation_id TEXT, status TEXT NOT NULL, started_at REAL, last_message_at REAL, created_at REAL NOT NULL );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0004_standing', 1700000000.005);
-- 0005_poll
CREATE TABLE poll_items ( repo TEXT NOT NULL, number INTEGER NOT NULL, is_pull INTEGER NOT NULL, state TEXT NOT NULL, updated_at TEXT NOT NULL, baseline_at TEXT NOT NULL, baseline_comment_id INTEGER NOT NULL DEFAULT 0, first_seen REAL NOT NULL, last_seen REAL NOT NULL, PRIMARY KEY (repo, number) );
CREATE TABLE poll_cycles ( id INTEGER PRIMARY KEY AUTOINCREMENT, started_at REAL NOT NULL, seconds REAL NOT NULL, repos INTEGER NOT NULL, requests INTEGER NOT NULL, not_modified INTEGER NOT NULL, ok INTEGER NOT NULL, error TEXT );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0005_poll', 1700000000.006);
-- 0010_outbox
CREATE TABLE outbox ( id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, target TEXT NOT NULL, kind TEXT NOT NULL, what TEXT NOT NULL, work_item TEXT, payload TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, verify INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, claimed_by TEXT, claimed_until REAL, last_error TEXT, result TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL );
CREATE INDEX outbox_due ON outbox (status, next_attempt_at, id);
CREATE INDEX outbox_created ON outbox (created_at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0010_outbox', 1700000000.007);
-- 0011_inbox_work
ALTER TABLE inbox ADD COLUMN work TEXT;
ALTER TABLE inbox ADD COLUMN lane TEXT;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0011_inbox_work', 1700000000.008);
-- 0012_agent_prompts
CREATE TABLE agent_prompts ( seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, delivery_id TEXT, prompt TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL, delivered_at REAL );
INSERT INTO agent_prompts (seq, agent, delivery_id, prompt, status, created_at, delivered_at) SELECT seq, session_id, delivery_id, prompt, status, created_at, delivered_at FROM session_prompts;
DROP TABLE session_prompts;
CREATE INDEX agent_prompts_agent ON agent_prompts (agent, seq);
CREATE INDEX agent_prompts_open ON agent_prompts (agent, seq) WHERE status IN ('pending', 'staged');
CREATE UNIQUE INDEX agent_prompts_once ON agent_prompts (agent, delivery_id) WHERE delivery_id IS NOT NULL;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0012_agent_prompts', 1700000000.009);
-- 0013_seen_github_ids
CREATE TABLE github_seen ( key TEXT PRIMARY KEY, delivery_id TEXT NOT NULL, work_item TEXT, seen_at REAL NOT NULL );
CREATE TABLE poll_closure_checks ( repo TEXT NOT NULL, number INTEGER NOT NULL, work_item TEXT NOT NULL, since REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, PRIMARY KEY (repo, number) );
CREATE TABLE github_rate_limits ( api_url TEXT NOT NULL, resource TEXT NOT NULL, reset_at REAL NOT NULL, secondary INTEGER NOT NULL, message TEXT NOT NULL, recorded_at REAL NOT NULL, PRIMARY KEY (api_url, resource) );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0013_seen_github_ids', 1700000000.010);
-- 0014_attention
CREATE TABLE attention ( agent TEXT PRIMARY KEY, work_item TEXT, standing TEXT, harness TEXT NOT NULL DEFAULT '', requester TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, since REAL NOT NULL, signal TEXT NOT NULL, rule TEXT NOT NULL DEFAULT '', last_message TEXT NOT NULL DEFAULT '', prompt_id TEXT, updated_at REAL NOT NULL );
CREATE TABLE attention_prompts ( id TEXT PRIMARY KEY, agent TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL DEFAULT '', input TEXT NOT NULL DEFAULT '', text TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, decision TEXT, actor TEXT, via TEXT, answered_at REAL, closed_at REAL, outcome TEXT, notice_at REAL, followup_at REAL );
CREATE INDEX attention_prompts_agent ON attention_prompts (agent, created_at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0014_attention', 1700000000.011);
-- 0016_slack
CREATE TABLE slack_threads ( key TEXT PRIMARY KEY, channel TEXT NOT NULL, thread_ts TEXT, created_at REAL NOT NULL, bound_at REAL );
CREATE UNIQUE INDEX slack_threads_thread ON slack_threads (channel, thread_ts);
CREATE TABLE slack_prompts ( prompt_id TEXT PRIMARY KEY, thread_key TEXT NOT NULL, channel TEXT NOT NULL, ts TEXT, queued_at REAL NOT NULL, update_queued_at REAL );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0016_slack', 1700000000.012);
-- 0017_usage_budgets
CREATE TABLE usage_entries ( agent TEXT NOT NULL, entry TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, cache_creation_tokens INTEGER NOT NULL DEFAULT 0, cache_read_tokens INTEGER NOT NULL DEFAULT 0, day TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (agent, entry) );
CREATE INDEX usage_entries_day ON usage_entries (day);
CREATE TABLE usage_sources ( agent TEXT NOT NULL, path TEXT NOT NULL, read_bytes INTEGER NOT NULL DEFAULT 0, read_at REAL NOT NULL, PRIMARY KEY (agent, path) );
CREATE TABLE spend ( agent TEXT PRIMARY KEY, hold TEXT, hold_reason TEXT NOT NULL DEFAULT '', held_at REAL, holds INTEGER NOT NULL DEFAULT 0, extra_usd REAL NOT NULL DEFAULT 0, extra_turns INTEGER NOT NULL DEFAULT 0, waiting_since REAL );
ALTER TABLE attention ADD COLUMN transcript TEXT;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0017_usage_budgets', 1700000000.013);
-- 0019_nodes
CREATE TABLE nodes ( name TEXT PRIMARY KEY, pid INTEGER NOT NULL, url TEXT NOT NULL DEFAULT '', capacity INTEGER NOT NULL DEFAULT 0, started_at REAL NOT NULL, heartbeat_at REAL NOT NULL, dead_at REAL );
ALTER TABLE sessions ADD COLUMN node TEXT;
ALTER TABLE inbox ADD COLUMN node TEXT;
ALTER TABLE inbox ADD COLUMN claimed_by TEXT;
DROP INDEX sessions_one_live;
CREATE UNIQUE INDEX sessions_one_live ON sessions (work_item) WHERE status IN ('queued', 'active', 'paused', 'orphaned');
CREATE INDEX sessions_node ON sessions (node, status);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0019_nodes', 1700000000.014);
-- 0020_transcripts
CREATE TABLE transcripts ( conversation TEXT PRIMARY KEY, agent TEXT NOT NULL, bytes INTEGER NOT NULL DEFAULT 0, over_cap INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL );
CREATE INDEX transcripts_agent ON transcripts (agent);
CREATE TABLE transcript_chunks ( conversation TEXT NOT NULL, start INTEGER NOT NULL, size INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (conversation, start) );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0020_transcripts', 1700000000.015);
-- 0021_standing_node
ALTER TABLE standing ADD COLUMN node TEXT;
ALTER TABLE nodes ADD COLUMN cluster INTEGER NOT NULL DEFAULT 0;
INSERT INTO schema_migrations (name, applied_at) VALUES ('0021_standing_node', 1700000000.016);
-- 0022_inbox_claim_order
CREATE INDEX inbox_order ON inbox (status, received_at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0022_inbox_claim_order', 1700000000.017);
-- 0023_hook_channel
CREATE TABLE hook_tokens ( agent TEXT PRIMARY KEY, token_hash TEXT NOT NULL, previous_hash TEXT, work_item TEXT, transcript_root TEXT, issued_at REAL NOT NULL );
CREATE TABLE hook_reports ( id TEXT PRIMARY KEY, agent TEXT NOT NULL, prompt_id TEXT, at REAL NOT NULL );
CREATE INDEX hook_reports_at ON hook_reports (at);
INSERT INTO schema_migrations (name, applied_at) VALUES ('0023_hook_channel', 1700000000.018);
-- 0024_attention_turns
CREATE TABLE attention_turns ( id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, thread_key TEXT NOT NULL, message TEXT NOT NULL, created_at REAL NOT NULL );
INSERT INTO schema_migrations (name, applied_at) VALUES ('0024_attention_turns', 1700000000.019);
