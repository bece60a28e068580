"""The judge cache in the trace store: keyed on model, prompt (rubric and evidence) and
repetition; survives reopening the store."""

from __future__ import annotations

from tracegrade.judge.rubrics import VERDICT_SCHEMA
from tracegrade.store.judge_cache import JudgeCache, cache_key
from tracegrade.store.traces import Store

MESSAGES = [
    {"role": "system", "content": "grade"},
    {"role": "user", "content": "rubric + evidence"},
]


def test_key_changes_with_model_prompt_and_repetition():
    base = cache_key("gpt-4o", MESSAGES, VERDICT_SCHEMA, 0)
    assert base == cache_key("gpt-4o", [dict(m) for m in MESSAGES], dict(VERDICT_SCHEMA), 0)
    other_prompt = [MESSAGES[0], {"role": "user", "content": "rubric + other evidence"}]
    assert (
        len(
            {
                base,
                cache_key("gpt-4o-mini", MESSAGES, VERDICT_SCHEMA, 0),
                cache_key("gpt-4o", other_prompt, VERDICT_SCHEMA, 0),
                cache_key("gpt-4o", MESSAGES, VERDICT_SCHEMA, 1),
            }
        )
        == 4
    )


def test_verdicts_persist_in_the_store(tmp_path):
    verdict = {"reasoning": "r", "score": 0.5, "met": [], "missed": ["x"]}
    with Store(tmp_path / "db.sqlite") as store:
        cache = JudgeCache(store)
        cache.put("k1", "gpt-4o", "faithfulness", verdict, 100, 20)
        cache.put(
            "k1", "gpt-4o", "faithfulness", {**verdict, "score": 0.9}, 1, 1
        )  # first write wins
    with Store(tmp_path / "db.sqlite") as store:
        cache = JudgeCache(store)
        assert cache.get("k1") == verdict and cache.get("k2") is None and len(cache) == 1
        row = store.db.execute(
            "SELECT model, rubric, input_tokens, output_tokens FROM judge_cache"
        ).fetchone()
        assert tuple(row) == ("gpt-4o", "faithfulness", 100, 20)


def test_a_verdict_quoting_a_secret_is_stored_redacted(tmp_path):
    secret = "sk-proj-" + "Q" * 32
    with Store(tmp_path / "db.sqlite") as store:
        JudgeCache(store).put("k", "m", "faithfulness", {"reasoning": f"uses {secret}"}, 1, 1)
        assert JudgeCache(store).get("k") == {"reasoning": "uses [REDACTED]"}
    assert not any(secret.encode() in p.read_bytes() for p in tmp_path.glob("db.sqlite*"))
