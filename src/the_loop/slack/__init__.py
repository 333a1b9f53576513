"""Slack: a thin edge on the one core (SPEC §10, decision 0025, docs/slack.md).

In: ``web.slack_webhooks`` verifies Slack's signature, parses an event or a button press
(``slack.intake``) and commits it to the durable inbox before answering; the inbox worker hands
it to ``slack.inbound``, which delivers through ``standing.say`` / ``sessions.say`` and answers
permissions through ``attention.answer_permission``. Out: ``slack.outbound`` queues Web API
calls in the outbox with the decision that caused them; ``slack.sender`` drains them through
``slack_sdk``; ``slack.notices`` posts attention prompts into bound threads.
"""

__all__ = [
    "intake",
    "signature",
]
