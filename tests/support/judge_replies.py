"""What a judge answers, as the scripted OpenAI-compatible server is told to reply."""

from __future__ import annotations


def verdict(
    score: float,
    reasoning: str = "scripted",
    met: list[str] | None = None,
    missed: list[str] | None = None,
) -> dict:
    return {"reasoning": reasoning, "score": score, "met": met or [], "missed": missed or []}
