"""Write-backs: what the-loop tells GitHub about the work it picked up (SPEC §7).

- 👀 (``eyes``) on pickup — on the comment that asked, or on the item itself;
- 🎉 (``hooray``) or 😕 (``confused``) when the first delivery into a new session succeeded or
  failed;
- one announcement comment per spawn (the text is passed in), and any other comment the-loop
  posts, always carrying ``SELF_MARKER``; a comment sent through the outbox also carries a
  hidden ``outbox_marker`` so that a post whose answer was lost can be found again.

Reactions are switched by ``github.reactions``, the announcement by ``github.announce``; a
switched-off write-back returns None without a request. The rest raise the client's typed
errors (``GitHubUnavailable``/``RateLimited`` transient, ``GitHubError`` permanent): callers
treat write-backs as best effort and decide what a failure means.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.github.markers import mark

if TYPE_CHECKING:
    from datetime import datetime

    from the_loop.config import GitHubConfig
    from the_loop.github.api import Comment, GitHubClient, Reaction, ReactionContent
    from the_loop.refs import WorkItemRef

PICKUP: ReactionContent = "eyes"
DELIVERED: ReactionContent = "hooray"
FAILED: ReactionContent = "confused"


async def react(
    client: GitHubClient,
    config: GitHubConfig,
    ref: WorkItemRef,
    content: ReactionContent,
    *,
    comment_id: int | None = None,
) -> Reaction | None:
    """React with CONTENT on COMMENT_ID when given, else on the work item REF.

    None (nothing sent) when ``github.reactions`` is off. Idempotent: GitHub answers a repeated
    reaction with the existing one.
    """
    if not config.reactions:
        return None
    if comment_id is not None:
        return await client.add_reaction(ref.full_name, content, comment_id=comment_id)
    return await client.add_reaction(ref.full_name, content, number=ref.number)


async def react_pickup(
    client: GitHubClient, config: GitHubConfig, ref: WorkItemRef, *, comment_id: int | None = None
) -> Reaction | None:
    """👀 on the request (COMMENT_ID) or the item: the-loop picked the work up."""
    return await react(client, config, ref, PICKUP, comment_id=comment_id)


async def react_first_delivery(
    client: GitHubClient,
    config: GitHubConfig,
    ref: WorkItemRef,
    ok: bool,
    *,
    comment_id: int | None = None,
) -> Reaction | None:
    """🎉 when the first delivery into a new session succeeded (OK), 😕 when it failed."""
    return await react(client, config, ref, DELIVERED if ok else FAILED, comment_id=comment_id)


async def announce(
    client: GitHubClient, config: GitHubConfig, ref: WorkItemRef, text: str
) -> Comment | None:
    """Post the spawn announcement TEXT (marked) on REF; None when ``github.announce`` is off."""
    if not config.announce:
        return None
    return await post_comment(client, ref, text)


async def post_comment(client: GitHubClient, ref: WorkItemRef, text: str) -> Comment:
    """Post TEXT on REF with the self-marker appended (unless it already carries one)."""
    return await client.create_comment(ref.full_name, ref.number, mark(text))


def outbox_marker(token: str) -> str:
    """The hidden marker naming one outbox post (beside the self-marker, never instead)."""
    return f"<!-- the-loop-outbox {token} -->"


def with_outbox_marker(text: str, token: str) -> str:
    """TEXT marked as the-loop's and as the outbox post TOKEN: the exact body to post."""
    return f"{mark(text)}\n{outbox_marker(token)}"


async def find_outbox_comment(
    client: GitHubClient, ref: WorkItemRef, token: str, since: datetime | None = None
) -> Comment | None:
    """The comment on REF carrying the outbox marker TOKEN (updated at or after SINCE), if any:
    how a post whose answer was lost is found before it is sent again."""
    marker = outbox_marker(token)
    listing = await client.list_item_comments(ref.full_name, ref.number, since=since)
    return next((c for c in listing.items if marker in c.body), None)
