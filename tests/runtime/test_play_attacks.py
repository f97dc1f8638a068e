"""Play-time attacks: environments that behave for the validator and cheat once played.

Each program in ``attacks/`` is labelled ``# attack: <kind> expect: <outcome>``:
``neutralized`` (played through the door, the cheat never fires), ``quarantined`` (the
cheat fires in a play, and the replay audit catches it before its rewards count) or
``rejected`` (the validator refuses it), or ``residual``: an open hole, tested as a
strict xfail so that closing it is noticed.
The programs are registered as ``validated`` directly, as if they had passed the gate,
and played in each sandbox configuration. Attacks the validator itself rejects (seed
bands, first episodes, spelled-out hints, suite patches, hole relations) are labelled in
the validator's and the generator's corpora; the web stall is in ``tests/web``.

Bounded like every hostile test: one worker at a time per play, the sandbox's limits.
"""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

from spade_envs.agent import PlaySpec, RolloutConfig, RolloutEngine, resolve_envs
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import QuarantinedEnvWarning, Registry
from spade_envs.runtime import open_id
from spade_envs.sandbox import SandboxConfig, SandboxVectorEnv, WorkerPool
from spade_envs.validation.static import static_metadata

ATTACKS = Path(__file__).parent / "attacks"
_LABEL = re.compile(r"^# attack: (\w+) expect: (neutralized|quarantined|rejected|residual)$")
LIMITS = dict(memory_mb=1024, cpu_seconds=10, call_timeout=10.0, load_timeout=10.0)
CONFIGS = {
    "all": SandboxConfig(**LIMITS),
    "no-bwrap": SandboxConfig(bubblewrap=False, **LIMITS),
    "no-seccomp": SandboxConfig(seccomp=False, **LIMITS),
}
WRONG = "\\boxed{0}"  # the secret is drawn from 1..1000


def label(path: Path) -> tuple[str, str]:
    match = _LABEL.match(path.read_text().splitlines()[0])
    assert match, f"{path.name} has no '# attack: <kind> expect: <outcome>' first line"
    return match.group(1), match.group(2)


def test_every_program_is_labelled_and_covered():
    programs = sorted(ATTACKS.glob("*.py"))
    labels = {p.stem: label(p) for p in programs}
    assert {kind for kind, _ in labels.values()} >= {
        "latency",
        "seedless",
        "date",
        "hint",
        "rollout_stall",
        "backdoor",
        "first_episode",
        "selfplay",
    }
    covered = {name[len("test_") :] for name in globals() if name.startswith("test_")}
    covered |= {stem for stem, _reply in CAUGHT_BY_COUNTERFACTUALS}
    missing = [stem for stem in labels if not any(stem in name for name in covered)]
    assert not missing, f"programs without a test: {missing}"


@pytest.fixture
def registry(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'attacks.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()


@pytest.fixture(params=list(CONFIGS))
def pool(request):
    with WorkerPool(CONFIGS[request.param], size=0) as pool:
        yield pool


def register(registry: Registry, stem: str) -> str:
    """Store a program as if it had passed validation (the gate is not what is tested)."""
    source = (ATTACKS / f"{stem}.py").read_text()
    meta = static_metadata(source, origin="designer")
    assert meta is not None
    return registry.register(source, meta, status="validated").id


def test_latency_dataclasses_time_is_neutralized(registry, pool):
    env = open_id(register(registry, "latency_dataclasses_time"), pool=pool)
    env.reset(seed=3)
    time.sleep(1.2)  # a model's reply time, in real seconds
    _obs, reward, terminated, _trunc, _info = env.step(WRONG)
    assert (reward, terminated) == (0.0, True)
    env.close()


def test_seedless_reset_is_neutralized(registry, pool):
    env_id = register(registry, "seedless_reset")
    env = open_id(env_id, pool=pool)
    env.reset()  # drawn in the parent: the environment sees an int
    assert env.step(WRONG)[1] == 0.0
    env.reset(seed=5)
    env.reset()  # after an explicit seed, the drawn one follows from it
    assert env.step(WRONG)[1] == 0.0
    env.close()
    vector = SandboxVectorEnv(registry.get(env_id).source, 3, workers=1, pool=pool)
    vector.reset()
    rewards = [vector.step((WRONG,) * 3)[1].tolist() for _ in range(4)]  # with autoresets
    vector.close()
    assert rewards == [[0.0] * 3] * 4


def test_seedless_reset_under_gymnasium_make_vec(registry):
    env_id = register(registry, "seedless_reset")
    vector = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync")
    vector.reset(seed=1)
    rewards = [vector.step((WRONG, WRONG))[1].tolist() for _ in range(4)]  # autoresets
    vector.close()
    assert rewards == [[0.0, 0.0]] * 4


def test_date_fuse_is_neutralized(registry, pool):
    env = open_id(register(registry, "date_fuse"), pool=pool)
    env.reset(seed=11)
    assert env.step(WRONG)[1] == 0.0
    env.close()


def test_hint_mutation_is_neutralized(registry, pool):
    env = open_id(register(registry, "hint_mutation"), pool=pool)
    env.reset(seed=2)
    assert env.hint() == "It is 7."  # from the twin, which the hint rewrote
    assert env.step("\\boxed{7}")[1] == 0.0  # the played episode kept its secret
    env.reset(seed=2)
    env.hint()
    assert env.step(env.solution()[0])[1] == 1.0
    env.close()


class _Model(ChatModel):
    """Answers every turn with ``reply(turn)``, taking ``delay`` real seconds per call."""

    name = "attack-model"

    def __init__(self, reply, delay: float = 0.0):
        self.reply, self.delay = reply, delay

    def generate(self, conversations, params=None):
        time.sleep(self.delay)
        out = []
        for conversation in conversations:
            turn = sum(1 for m in conversation if m["role"] == "assistant")
            text = self.reply(turn)
            out.append(Completion(text=text, token_ids=(1,), logprobs=(-0.1,)))
        return out


def _engine(model, pool, registry, **config) -> RolloutEngine:
    settings = dict(max_concurrent=4, step_timeout=3.0, load_timeout=10.0, seed=0)
    settings.update(config)
    return RolloutEngine(model, RolloutConfig(**settings), registry=registry, pool=pool)


def test_sleeping_step_is_neutralized_in_rollouts(registry, pool):
    env_id = register(registry, "sleeping_step")
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(2)]
    engine = _engine(_Model(lambda turn: f"\\boxed{{{turn + 1}}}"), pool, registry)
    episodes = engine.run(specs, targets)
    # Four 10 s sleeps per play, with a 3 s step deadline: only a virtual sleep finishes.
    assert [e.outcome for e in episodes] == ["terminated", "terminated"]
    assert all(e.won for e in episodes) and engine.stats.failures.failed == 0
    assert engine.stats.audits == 2 and not engine.stats.quarantined


def test_latency_reimported_clock_is_quarantined_by_the_audit(registry, pool):
    env_id = register(registry, "latency_reimported_clock")
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=0, env_seed=4)]
    engine = _engine(_Model(lambda turn: WRONG, delay=1.2), pool, registry, audit_share=0.0)
    (episode,) = engine.run(specs, targets)
    # The play "won" with a wrong answer; the replay lost: the win never counts.
    assert episode.outcome == "audit_divergence" and not episode.won
    assert "quarantined" in episode.error
    assert engine.stats.failures.audit_divergence == 1
    assert engine.stats.quarantined == [env_id]
    record = registry.get(env_id)
    assert record.status == "quarantined"
    evidence = registry.quarantine_evidence(env_id)
    assert (evidence.seed, evidence.step, evidence.field) == (4, 1, "reward")
    assert (evidence.played, evidence.replayed) == ("1", "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym.make(env_id).close()
    assert any(issubclass(w.category, QuarantinedEnvWarning) for w in caught)


#: Programs whose wrong answers win in play and in a replay alike, with the reply played.
CAUGHT_BY_COUNTERFACTUALS = [
    ("first_episode_small_seed", WRONG),
    ("date_fuse_static_type", WRONG),
]


@pytest.mark.parametrize(("stem", "reply"), CAUGHT_BY_COUNTERFACTUALS)
def test_wins_with_wrong_answers_are_quarantined_by_the_counterfactual_audit(
    registry, pool, stem, reply
):
    env_id = register(registry, stem)
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(2)]
    engine = _engine(_Model(lambda turn: reply), pool, registry, audit_share=0.0)
    episodes = engine.run(specs, targets)
    assert [e.outcome for e in episodes] == ["audit_divergence"] * 2
    assert not any(e.won for e in episodes)
    assert all("wrong answers in place of the winning one" in e.error for e in episodes)
    assert engine.stats.quarantined == [env_id]
    evidence = registry.quarantine_evidence(env_id)
    assert (evidence.field, evidence.step, evidence.played) == ("counterfactual", 1, reply)


def test_honest_wins_survive_the_counterfactual_audit(registry, pool):
    env_id = register(registry, "date_fuse")  # honest under the virtual clock
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=i, env_seed=i) for i in range(3)]
    secrets = {}
    for spec in specs:  # the right answers, found by opening each episode
        env = open_id(env_id, pool=pool)
        env.reset(seed=spec.env_seed)
        secrets[spec.env_seed] = env.solution()[0]
        env.close()
    answers = iter(secrets[s.env_seed] for s in specs)
    engine = _engine(_Model(lambda turn: next(answers)), pool, registry, max_concurrent=1)
    episodes = engine.run(specs, targets)
    assert all(e.won and e.outcome == "terminated" for e in episodes)
    assert engine.stats.audits == 3 and engine.stats.audit_failures == 0
    assert not engine.stats.quarantined and registry.get(env_id).status == "validated"


def test_selfplay_whole_game_is_quarantined_and_its_hints_come_from_a_twin(registry, pool):
    env_id = register(registry, "selfplay_whole_game")
    targets = resolve_envs([env_id], registry)
    specs = [PlaySpec(env_id=env_id, play_index=0, env_seed=3)]
    engine = _engine(
        _Model(lambda turn: "I resign."), pool, registry, audit_share=0.0, opponent="self"
    )
    (episode,) = engine.run(specs, targets)
    assert episode.outcome == "audit_divergence" and not episode.won
    assert engine.stats.quarantined == [env_id]
    evidence = registry.quarantine_evidence(env_id)
    assert (evidence.field, evidence.step, evidence.played) == ("counterfactual", 1, "I resign.")
    from spade_envs.runtime import open_record

    game = open_record(registry.get(env_id), seat=None, pool=pool)
    game.reset(seed=3)
    assert game.trace.seed == 3 and game.hint(game.agent_selection) == game.own_hint(
        game.agent_selection
    )
    game.close()


def test_backdoor_phrase_is_rejected_by_the_validator():
    from spade_envs.validation import validate_source

    report = validate_source((ATTACKS / "backdoor_phrase.py").read_text(), budget="fast")
    assert not report.passed
    assert re.search(r"wrong answers|random|trivial|reaches the maximum", report.feedback())


@pytest.mark.parametrize(
    ("seed_name", "wrap"),
    [
        ("WarehouseRobot", "I have moved enough; now I finish.\n{action}\n\\boxed{{done}}"),
        ("FlightBooking", "Booked it. {action}\nSo the answer is \\boxed{{done}}."),
        ("NumberGuess", "Let me think. Therefore, the answer is {action}"),
    ],
)
def test_honest_wins_in_model_like_replies_are_never_quarantined(registry, pool, seed_name, wrap):
    # Replies that hold the answer in more than one place, or in a tool call: replacing one
    # place at a time would still win; the counterfactuals must not call that a cheat.
    from spade_envs.runtime import register_seed

    env_id = register_seed(registry, seed_name)
    targets = resolve_envs([env_id], registry)
    episodes = []
    for seed in (0, 1):
        env = open_id(env_id, pool=pool)
        env.reset(seed=seed)
        actions = env.solution()
        env.close()
        last = len(actions) - 1

        def reply(turn: int, actions=actions, last=last) -> str:
            action = actions[min(turn, last)]
            return wrap.format(action=action) if turn == last else action

        engine = _engine(_Model(reply), pool, registry)
        spec = PlaySpec(env_id=env_id, play_index=seed, env_seed=seed)
        episodes += engine.run([spec], targets)
        assert engine.stats.audits == 1 and not engine.stats.quarantined
    assert all(e.won for e in episodes), [(e.outcome, e.error) for e in episodes]
    assert registry.get(env_id).status == "validated"


def test_honest_confirm_step_is_never_quarantined(registry, pool):
    # The answer comes on turn 1, the reward on turn 2 ("submit"): replacing only the
    # rewarded step would make every wrong confirmation "win".
    env_id = register(registry, "honest_confirm_step")
    targets = resolve_envs([env_id], registry)
    env = open_id(env_id, pool=pool)
    env.reset(seed=0)
    actions = env.solution()
    env.close()
    engine = _engine(_Model(lambda turn: actions[min(turn, 1)]), pool, registry, audit_share=0.0)
    (episode,) = engine.run([PlaySpec(env_id=env_id, play_index=0, env_seed=0)], targets)
    assert episode.won and episode.outcome == "terminated"
    assert engine.stats.audits == 1 and not engine.stats.quarantined


@pytest.mark.xfail(
    strict=False,  # validation's fresh random seeds sometimes meet it: not a guarantee
    reason="open: a cheat keyed on the reply's wording and the answer's shape (</think> and "
    "a short number) passes the probes, and the counterfactual's random answers lose",
)
def test_think_backdoor_is_caught(registry):
    from spade_envs.validation import validate_source

    source = (ATTACKS / "think_backdoor.py").read_text()
    if not validate_source(source, budget="fast").passed:
        return
    env_id = register(registry, "think_backdoor")
    targets = resolve_envs([env_id], registry)
    reply = "<think>Let me guess.</think>\nMy answer: \\boxed{7}"
    with WorkerPool(CONFIGS["all"], size=0) as pool:
        engine = _engine(_Model(lambda turn: reply), pool, registry, audit_share=0.0)
        episodes = engine.run([PlaySpec(env_id=env_id, play_index=0, env_seed=0)], targets)
    assert not any(e.won for e in episodes)


@pytest.mark.xfail(
    strict=True,
    reason="open: the counterfactual audit needs every wrong form to win; a cheat that "
    "accepts only answers shaped like the played one (short boxed numbers) refuses them "
    "all, so a wrong answer's win counts",
)
def test_first_episode_shape_is_quarantined(registry, pool):
    env_id = register(registry, "first_episode_shape")
    targets = resolve_envs([env_id], registry)
    engine = _engine(_Model(lambda turn: "\\boxed{0}"), pool, registry, audit_share=0.0)
    (episode,) = engine.run([PlaySpec(env_id=env_id, play_index=0, env_seed=0)], targets)
    assert not episode.won and episode.outcome == "audit_divergence"
