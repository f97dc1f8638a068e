"""End to end with the real SmolLM2-135M on CPU: generate -> parse -> validate -> register.

A 135M-parameter model fails nearly every validation; this test checks the pipeline's
accounting on real replies, not the model's quality.
"""

from __future__ import annotations

import os

import pytest

from spade_envs import describe, seed_class
from spade_envs.corpus import sample_corpus
from spade_envs.generator import STAGES, AttemptStage, Designer, DesignerConfig
from spade_envs.llm import load_model
from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads

pytestmark = SMOLLM2_MARKS


def short_documents():
    # Documents cut at 120 words: a prompt of ~1,600 tokens instead of ~2,500. Prefilling
    # them is most of these tests' time on a CPU, and what they check (every attempt
    # accounted for) does not depend on a document's length.
    return sample_corpus(max_words=120)


@pytest.fixture(scope="module")
def smollm2():
    threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else None
    with (
        torch_threads(threads),
        load_model("smollm2", cache_dir=model_cache()) as m,
    ):
        yield m


def test_a_real_batch_is_fully_accounted_for(smollm2, tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    registry.register(
        seed_source("NumberGuess"), describe(seed_class("NumberGuess")), status="validated"
    )
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    config = DesignerConfig(
        n=2,
        batch_size=2,
        skill="math",
        mode="new",
        repair_rounds=1,
        budget="fast",
        # Replies are cut at 64 tokens (a whole module needs more): cut replies are what
        # a 135M model mostly sends, and their repair round is accounted for the same way.
        max_tokens=64,
        seed=7,
    )
    report = Designer(smollm2, registry, memory, short_documents(), config).run()
    counts = report.counts
    assert counts["requested"] == 2 and counts["generated"] == 2  # the model answered
    assert [counts[s] for s in STAGES] == sorted((counts[s] for s in STAGES), reverse=True)
    for attempt in report.attempts:
        assert attempt.rounds in (1, 2) and attempt.reply
        assert (attempt.stage == "registered") == (attempt.reason == "")
        assert attempt.document_id is not None and attempt.prompt_sha256
    assert sum(report.reasons.values()) == 2 - counts["registered"]
    assert registry.count() == 1 + counts["registered"]
    assert "top rejection reasons" in report.table() or counts["registered"] == 2
    registry.close()


def test_auto_mode_scaffolds_with_the_real_model_and_accounts_for_every_attempt(smollm2, tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    registry.register_seeds()
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    config = DesignerConfig(n=4, batch_size=4, budget="fast", max_tokens=64, seed=1)
    designer = Designer(smollm2, registry, memory, short_documents(), config)
    assert designer.mode == "scaffold"  # auto, for a 135M model
    report = designer.run()
    assert report.counts["generated"] == 4 and report.mode == "scaffold"
    for attempt in report.attempts:
        assert attempt.parent_id.startswith("spade/") and attempt.document_id is None
        assert (attempt.stage is AttemptStage.REGISTERED) == (attempt.failure is None)
        if attempt.stage == "registered":
            record = registry.get(attempt.env_id)
            assert record.parents == (attempt.parent_id,) and record.extra["scaffold"]["filled"]
    registry.close()
