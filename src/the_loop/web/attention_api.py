"""``/api/v1`` attention routes: who waits on a person, why, and answering a permission."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from the_loop.agent.attention import service as attention
from the_loop.agent.attention.service import Answered, AttentionView, PromptView, QuestionAnswered
from the_loop.context import Ctx
from the_loop.web.dashboard_auth import has_bearer, viewer


class PermissionIn(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    decision: Literal["allow", "deny"] = Field(..., description="allow or deny the tool.")
    prompt_id: str | None = Field(
        None, description="The prompt this answers; refused (409) when another is pending."
    )
    actor: str | None = Field(
        None, description="Who answers (default: api; dashboard from its page).", max_length=100
    )


class AnswerIn(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    choice: int | None = Field(None, ge=1, le=99, description="The number of a choice shown.")
    text: str | None = Field(None, max_length=4000, description="A typed answer instead.")
    prompt_id: str | None = Field(
        None, description="The question this answers; refused (409) when another is pending."
    )
    actor: str | None = Field(
        None, description="Who answers (default: api; dashboard from its page).", max_length=100
    )


def attention_router(get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]) -> APIRouter:
    """The attention routes; READ and WRITE are the dependencies guarding each kind."""
    router = APIRouter()

    @router.get("/attention", tags=["attention"], dependencies=read)
    async def list_attention() -> list[AttentionView]:
        """Every live session waiting on a person (needs-input, needs-permission), oldest
        first, with its question or the tool awaiting permission."""
        return await asyncio.to_thread(attention.list_attention, get_ctx())

    @router.get("/attention-history/{ref:path}", tags=["attention"], dependencies=read)
    async def get_history(ref: str) -> list[PromptView]:
        """A session's prompts, newest first: what each asked and who answered it, how and
        from where."""
        return await asyncio.to_thread(attention.history, get_ctx(), ref)

    @router.get("/attention/{ref:path}", tags=["attention"], dependencies=read)
    async def explain(ref: str) -> AttentionView:
        """One session's attention state with the signal and rule that decided it."""
        return await asyncio.to_thread(attention.explain, get_ctx(), ref)

    @router.post("/sessions/{session_id:path}/permission", tags=["attention"], dependencies=write)
    async def post_permission(request: Request, session_id: str, body: PermissionIn) -> Answered:
        """Answer the permission prompt the session's agent waits on: only while that very
        prompt is pending (409 with the reason otherwise); the first answer wins."""
        prompt_id, via = attention.parse_prompt_id(body.prompt_id), _via(request)
        return await asyncio.to_thread(
            attention.answer_permission,
            get_ctx(),
            session_id,
            body.decision,
            body.actor or via,
            via,
            prompt_id,
        )

    @router.post("/sessions/{session_id:path}/answer", tags=["attention"], dependencies=write)
    async def post_answer(request: Request, session_id: str, body: AnswerIn) -> QuestionAnswered:
        """Answer the question the session's agent asks (a numbered choice of its dialog, or a
        typed answer): only while that very question is shown (409 otherwise)."""
        prompt_id, via = attention.parse_prompt_id(body.prompt_id), _via(request)
        return await asyncio.to_thread(
            lambda: attention.answer_question(
                get_ctx(),
                session_id,
                body.actor or via,
                via,
                choice=body.choice,
                text=body.text,
                prompt_id=prompt_id,
            )
        )

    return router


def _via(request: Request) -> str:
    """Where an answer came from: ``dashboard`` for a person logged in to it (its cookie, the
    write guard having checked its CSRF token), else ``api`` (a bearer token)."""
    return "dashboard" if not has_bearer(request) and viewer(request) is not None else "api"
