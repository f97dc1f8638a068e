"""Play-time attacks written in SPADE's dialect (``attacks/spade/``): the cheats of
``test_play_attacks.py`` where the adapter passes SPADE's raw seeds through, reseeds the
module-level ``random``, and scores wins by SPADE's rule (a final reward above zero).

Each program is labelled ``# attack: <kind> expect: <outcome>`` as in ``attacks/``:
``neutralized``, ``quarantined``, ``rejected`` or ``residual`` (an open hole, tested as
a strict xfail so that closing it is noticed). The programs are registered as
``validated`` directly, as if they had passed the gate, and played with every sandbox
layer on (the layers are not what is tested here; ``test_play_attacks.py`` runs the
configuration matrix). Bounded like every hostile test: one worker at a time per play,
the sandbox's limits.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spade_envs.agent import PlaySpec, RolloutConfig, RolloutEngine, resolve_envs
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry
from spade_envs.runtime import open_id
from spade_envs.sandbox import SandboxConfig, WorkerPool
from spade_envs.validation.static import static_metadata

ATTACKS = Path(__file__).parent / "attacks" / "spade"
_LABEL = re.compile(r"^# attack: (\w+) expect: (neutralized|quarantined|rejected|residual)$")
LIMITS = dict(memory_mb=1024, cpu_seconds=10, call_timeout=10.0, load_timeout=10.0)
WRONG = "\\boxed{0}"  # the secrets are drawn from 1..1000


def label(path: Path) -> tuple[str, str]:
    match = _LABEL.match(path.read_text().splitlines()[0])
    assert match, f"{path.name} has no '# attack: <kind> expect: <outcome>' first line"
    return match.group(1), match.group(2)


def test_every_spade_program_is_labelled_and_covered():
    programs = sorted(ATTACKS.glob("*.py"))
    labels = {p.stem: label(p) for p in programs}
    covered = {name[len("test_") :] for name in globals() if name.startswith("test_")}
    missing = [stem for stem in labels if not any(stem in name for name in covered)]
    assert not missing, f"programs without a test: {missing}"


@pytest.fixture
def registry(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'attacks.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()


@pytest.fixture
def pool():
    with WorkerPool(SandboxConfig(**LIMITS), size=0) as pool:
        yield pool


#: The validator's corpus; a program the gate rejects is played here from the same file.
VALIDATION_ATTACKS = Path(__file__).parents[1] / "validation" / "spade_attacks"


def register(registry: Registry, stem: str, corpus: Path = ATTACKS) -> str:
    """Store a program as if it had passed validation (the gate is not what is tested)."""
    source = (corpus / f"{stem}.py").read_text()
    meta = static_metadata(source, origin="designer")
    assert meta is not None
    return registry.register(source, meta, status="validated").id


class _Model(ChatModel):
    """Answers every turn with ``reply(turn)``."""

    name = "attack-model"

    def __init__(self, reply):
        self.reply = reply

    def generate(self, conversations, params=None):
        out = []
        for conversation in conversations:
            turn = sum(1 for m in conversation if m["role"] == "assistant")
            out.append(Completion(text=self.reply(turn), token_ids=(1,), logprobs=(-0.1,)))
        return out


def _engine(model, pool, registry, **config) -> RolloutEngine:
    settings = dict(max_concurrent=2, step_timeout=5.0, load_timeout=10.0, seed=0)
    settings.update(config)
    return RolloutEngine(model, RolloutConfig(**settings), registry=registry, pool=pool)


def test_first_episode_small_seed_is_quarantined_under_spades_win_rule(registry, pool):
    env_id = register(registry, "first_episode_small_seed")
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(2)]
    engine = _engine(_Model(lambda turn: WRONG), pool, registry, audit_share=0.0)
    episodes = engine.run(specs, targets)
    assert [e.outcome for e in episodes] == ["audit_divergence"] * 2
    assert not any(e.won for e in episodes)
    assert engine.stats.quarantined == [env_id]
    evidence = registry.quarantine_evidence(env_id)
    assert (evidence.field, evidence.step, evidence.played) == ("counterfactual", 1, WRONG)


def test_hint_mutation_is_neutralized_in_spades_dialect(registry, pool):
    env = open_id(register(registry, "hint_mutation"), pool=pool)
    try:
        env.reset(seed=2)
        assert env.win_rule == "final_reward"
        assert env.hint() == "It is 7."  # from the twin, which the hint rewrote
        _obs, reward, terminated, _trunc, _info = env.step("\\boxed{7}")
        assert (reward, terminated) == (0.0, True)  # the played episode kept its secret
        env.reset(seed=2)
        env.hint()
        assert env.step(env.solution()[0])[1] == 1.0
    finally:
        env.close()


def test_seedless_reset_is_neutralized_in_spades_dialect(registry, pool):
    env = open_id(register(registry, "seedless_reset"), pool=pool)
    try:
        env.reset()  # drawn in the parent: the game sees an int
        assert env.step(WRONG)[1] == 0.0
        env.reset(seed=None)
        assert env.step(WRONG)[1] == 0.0
    finally:
        env.close()


def test_global_random_reseed_is_neutralized_in_plays_and_replays(registry, pool):
    env_id = register(registry, "global_random_reseed")
    env = open_id(env_id, pool=pool)
    try:
        for seed in (None, 0, 3):
            env.reset(seed=seed)
            assert env.step(WRONG)[1] == 0.0
    finally:
        env.close()
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(2)]
    engine = _engine(_Model(lambda turn: WRONG), pool, registry)
    episodes = engine.run(specs, targets)
    assert not any(e.won for e in episodes)
    assert not engine.stats.quarantined


def _vault_replies(turn: int) -> str:
    # The model never reads a shelf: it opens the backdoor and answers a wrong code.
    if turn == 0:
        return '<tool_call>{"name": "audit_mode", "arguments": {}}</tool_call>'
    return "<answer>000000</answer>"


@pytest.mark.xfail(
    strict=True,
    reason="open: at play time the counterfactual cannot tell a backdoor tool call from a "
    "tool call the win needs (it replaces both); the validator rejects this game now that "
    "its tools are in the load metadata (tests/validation/spade_attacks/spade_tool_backdoor.py), "
    "so only a version registered without validation plays it",
)
def test_tool_backdoor_wins_with_a_wrong_code_are_caught(registry, pool):
    env_id = register(registry, "spade_tool_backdoor", VALIDATION_ATTACKS)
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(2)]
    engine = _engine(_Model(_vault_replies), pool, registry, audit_share=0.0)
    episodes = engine.run(specs, targets)
    # Bounded by the step limit, not a clock: no play or replay ran out of time.
    assert engine.stats.failures.timeout == 0 and engine.stats.audit_failures == 0
    assert engine.stats.audits == 2  # both plays were audited (replay and counterfactual)
    # A wrong code must never count as a win: voided by the audit, or lost.
    assert not any(e.won for e in episodes), [(e.outcome, e.episode_return) for e in episodes]


def test_a_hint_that_leaks_only_from_its_second_call_never_reaches_a_play(registry, pool):
    """The validator asks hint() once, as the first call in its worker, and takes the
    version to have none (tests/validation/spade_attacks/spade_hint_second_call.py). A
    play's hint is the first call in a twin's fresh worker too, so it never leaks."""
    from spade_envs.error import SpadeError

    env = open_id(register(registry, "spade_hint_second_call", VALIDATION_ATTACKS), pool=pool)
    try:
        for seed in (1, 2):
            env.reset(seed=seed)
            for _ in range(3):
                with pytest.raises(SpadeError):
                    env.hint()
    finally:
        env.close()
