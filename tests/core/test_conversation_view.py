"""``conversation_view.turns_of``: transcripts of each harness, in the shapes they write, read
into turns (prompt, messages, tool calls with input and result); the Claude Code lines are as
its 2.1.x transcript writes them (one line per content block, tool results as user lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Env
from the_loop.context import open_ctx
from the_loop.views.conversation import AgentFiles, conversation, turns_of


def lines(*records: dict[str, Any]) -> list[str]:
    return [json.dumps(r) for r in records]


def test_claude_code_transcript() -> None:
    turns = turns_of(
        [
            '{"type":"summary","summary":"x"}',
            "not json",
            *lines(
                {"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta"}},
                {"type": "user", "message": {"role": "user", "content": "fix the test"}},
                {"type": "assistant", "message": {"id": "m1", "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "I will run it."}]}},
                {"type": "assistant", "message": {"id": "m1", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash",
                     "input": {"command": "pytest -q", "description": "run"}}]}},
                {"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "1 passed"}]}},
                {"type": "assistant", "message": {"id": "m2", "content": [
                    {"type": "tool_use", "id": "t2", "name": "Write",
                     "input": {"file_path": "a.py", "content": "x = 1"}}]}},
            ),
        ]
    )  # fmt: skip
    assert len(turns) == 1
    turn = turns[0]
    assert turn.prompt == "fix the test"
    assert [s.kind for s in turn.steps] == ["text", "tool", "tool"]
    bash, write = turn.steps[1].tool, turn.steps[2].tool
    assert bash is not None and write is not None
    assert (bash.name, bash.input, bash.result, bash.is_error) == (
        "Bash",
        "pytest -q",
        "1 passed",
        False,
    )
    assert write.result is None and '"file_path": "a.py"' in write.input
    shown = turn.model_dump(mode="json")
    assert shown["steps"][1]["tool"]["isError"] is False  # camelCase on the wire


def test_claude_code_keeps_a_paste_in_a_wrapper_the_view_leaves_out() -> None:
    """Claude Code writes a long pasted prompt (the-loop pastes every message, whole) inside
    ``<pasted_content id=…>``; the person reads what was pasted. Anything else is left as it
    is: typed text around a paste, a lone tag, and a prompt made of thousands of opening tags
    (one match attempt, linear in its size: a regex that tried each tag would take minutes)."""
    pasted = "You are an AI coding agent started by the-loop\n\nroot asked you to: say hello"
    wrapped = f'\n\n<pasted_content id="dc47">\n{pasted}\n</pasted_content id="dc47">\n'
    mixed = 'look: <pasted_content id="a1">\nline one\n</pasted_content id="a1"> ok?'
    odd = '<pasted_content id="x">\nno end tag'
    hostile = '<pasted_content id="a">\n' * 50_000 + "x"
    turns = turns_of(
        lines(
            {"type": "user", "message": {"role": "user", "content": wrapped}},
            {"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": mixed}]}},
            {"type": "user", "message": {"role": "user", "content": odd}},
            {"type": "user", "message": {"role": "user", "content": hostile}},
        )
    )  # fmt: skip
    assert [t.prompt for t in turns][:3] == [pasted, mixed, odd]
    assert (turns[3].prompt or "").startswith('<pasted_content id="a">\n<pasted_content')


def test_codex_rollout_and_exec() -> None:
    rollout = lines(
        {"type": "session_meta", "payload": {"id": "x"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "list files"}]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell",
            "arguments": "{\"command\": [\"ls\"]}", "call_id": "c1"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
            "output": "{\"output\": \"a.py\\n\", \"metadata\": {}}"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "One file."}]}},
    )  # fmt: skip
    turns = turns_of(rollout)
    assert [t.prompt for t in turns] == ["list files"]
    tool = turns[0].steps[0].tool
    assert tool is not None and tool.name == "shell" and tool.result == "a.py\n"
    assert turns[0].steps[1].text == "One file."
    headless = lines(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i1", "type": "command_execution",
            "command": "false", "aggregated_output": "", "exit_code": 1, "status": "failed"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "Done."}},
    )  # fmt: skip
    (turn,) = turns_of(headless)
    assert turn.prompt is None and turn.steps[0].tool and turn.steps[0].tool.is_error
    assert turn.steps[1].text == "Done."


def test_gemini_stream_and_chat_file() -> None:
    stream = lines(
        {"type": "init", "session_id": "s"},
        {"type": "message", "role": "user", "content": "hello"},
        {"type": "message", "role": "assistant", "content": "Hel", "delta": True},
        {"type": "message", "role": "assistant", "content": "lo!", "delta": True},
        {"type": "tool_use", "tool_name": "read_file", "tool_id": "r1",
         "parameters": {"path": "x"}},
        {"type": "tool_result", "tool_id": "r1", "status": "error", "output": "no such file"},
        {"type": "result", "status": "success"},
    )  # fmt: skip
    (turn,) = turns_of(stream)
    assert turn.prompt == "hello" and turn.steps[0].text == "Hello!"
    assert turn.steps[1].tool and turn.steps[1].tool.is_error
    chat = {"sessionId": "s", "messages": [
        {"type": "user", "content": "hi"},
        {"type": "gemini", "content": "Hi there", "toolCalls": [
            {"id": "c", "name": "ls", "args": {"dir": "."}, "status": "success", "result": "a"}]},
    ]}  # fmt: skip
    (turn,) = turns_of([json.dumps(chat)])
    assert turn.prompt == "hi" and turn.steps[1].tool and turn.steps[1].tool.result == "a"


def test_gemini_chat_log_of_one_record_per_line() -> None:
    """The pinned Gemini (0.61) keeps its chat in ``chats/session-…-<id>.jsonl``: a header, the
    session context in a ``$set`` (no prompt of the person's), then one line per message."""
    log = lines(
        {"sessionId": "26165339-0a26", "projectHash": "d9db", "kind": "main"},
        {"$set": {"messages": [{"id": "c", "type": "user",
                                "content": [{"text": "<session_context>…</session_context>"}]}]}},
        {"id": "u1", "type": "user", "content": [{"text": "say hello"}]},
        {"$set": {"lastUpdated": "2026-12-05T12:46:55.661Z"}},
        {"id": "g1", "type": "gemini", "content": "FAKE-GEMINI-REPLY-2", "thoughts": [],
         "tokens": {"input": 10, "output": 2}, "model": "gemini-3.8-flash"},
        {"id": "u2", "type": "user", "content": [{"text": "and again"}]},
        {"id": "g2", "type": "gemini", "content": "Ran it.", "toolCalls": [
            {"id": "t", "name": "run_shell_command", "displayName": "Shell",
             "args": {"command": "ls"}, "status": "success", "resultDisplay": "a.txt"}]},
    )  # fmt: skip
    first, second = turns_of(log)
    assert (first.prompt, first.steps[0].text) == ("say hello", "FAKE-GEMINI-REPLY-2")
    assert second.prompt == "and again" and second.steps[0].text == "Ran it."
    tool = second.steps[1].tool
    assert tool is not None and (tool.name, tool.result) == ("Shell", "a.txt")


def test_a_harness_that_keeps_no_conversation_says_so(loop_env: Env, tmp_path: Path) -> None:
    """The demo agent (or a custom command) writes no conversation: its Conversation tab says
    that its screen shows its work, not "no transcript yet" for ever; Claude Code's, before its
    first turn, says "yet"."""
    loop_env.write_config()
    ctx = open_ctx(loop_env.config_path)
    demo = conversation(ctx, AgentFiles("local-demo", "demo", tmp_path))
    assert demo.turns == [] and "keeps no conversation" in demo.note, demo.note
    claude = conversation(ctx, AgentFiles("local-claude", "claude", tmp_path))
    assert claude.note == "no transcript of this claude agent yet"
