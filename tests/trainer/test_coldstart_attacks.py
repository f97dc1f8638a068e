"""Cold-start attacks: validated environments whose ``solution()`` or play tries to stall,
crash or flood the cold start (and ``eval_ceiling``, which plays the same way).

Each attack is a small environment registered as ``validated`` (as if it passed the
gate) and asked for its solution, sandboxed, then played by the :class:`ScriptedModel`.
Bounded like every hostile test: the sandbox's limits, a 3 s call deadline."""

from __future__ import annotations

import pytest

from spade_envs.agent import RolloutConfig, resolve_envs
from spade_envs.llm.base import SamplingParams
from spade_envs.registry import Registry
from spade_envs.trainer.coldstart import ScriptedModel, _solutions, reference_plays
from spade_envs.validation.static import static_metadata

pytest.importorskip("transformers")

HEAD = """
from spade_envs import TextEnv
class {name}(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 9 in one try."
    max_turns = 2
    def _reset(self):
        self.secret = self.rng.randint(1, 9)
        return "Guess. Answer with \\\\boxed{{n}}."
    def _step(self, action):
        won = action.strip() == f"\\\\boxed{{{{{{self.secret}}}}}}"
        return ("Correct!" if won else "Wrong."), float(won), True
    def hint(self):
        return "odd" if self.secret % 2 else "even"
    def solution(self):
        return [f"\\\\boxed{{{{{{self.secret}}}}}}"]
"""

#: name -> (extra class body, what the cold start must make of it)
ATTACKS = {
    "Honest": ("", "won"),
    "SysExit": ("    def solution(self):\n        raise SystemExit(3)\n", "skipped"),
    "KbInt": ("    def solution(self):\n        raise KeyboardInterrupt()\n", "skipped"),
    "OsExit": ("    def solution(self):\n        import os\n        os._exit(0)\n", "skipped"),
    "Huge": ("    def solution(self):\n        return ['A' * 8192] * 10000\n", "skipped"),
    "Slow": ("    def solution(self):\n        while True: pass\n", "skipped"),
    "Ints": ("    def solution(self):\n        return [1, 2]\n", "skipped"),
    "CloseRaises": ("    def close(self):\n        raise RuntimeError('no')\n", "won"),
    # A forged report: not a bool, so not a report (the answer format decides).
    "ForgedParse": (
        "    def step(self, action):\n        o, r, t, tr, i = super().step(action)\n"
        "        i['action_parsed'] = ['yes'] * 1000\n        i['success'] = True\n"
        "        return o, r, t, tr, i\n",
        "won",
    ),
    # A claimed success is not a win.
    "ClaimsSuccess": (
        "    def step(self, action):\n        o, r, t, tr, i = super().step(action)\n"
        "        i['success'] = True\n        return o, 0.0, t, tr, i\n",
        "lost",
    ),
    # 200 turns of 8,000-character actions that win at the end: unbounded, the scripted
    # play re-encoded prompts of up to 1.6M tokens each turn (over 2 GB, minutes).
    "FloodActions": (
        "    max_turns = 200\n"
        "    def _reset(self):\n        self.n = 0\n        return 'Say the words.'\n"
        "    def _step(self, action):\n        self.n += 1\n"
        "        return 'ok', float(self.n >= 200), self.n >= 200\n"
        "    def solution(self):\n        import random\n        r = random.Random(0)\n"
        "        return [''.join(r.choice('abcdefghij ') for _ in range(8000))] * 200\n",
        "lost",
    ),
    # The same through the observations: short actions, 60,000-character answers.
    "FloodObservations": (
        "    max_turns = 200\n"
        "    def _reset(self):\n        self.n = 0\n        return 'Count.'\n"
        "    def _step(self, action):\n        self.n += 1\n"
        "        return 'x' * 60000, float(self.n >= 200), self.n >= 200\n"
        "    def solution(self):\n        return ['\\\\boxed{1}'] * 200\n",
        "lost",
    ),
}


class _Model:
    """What reference_plays needs of the trained model: a tokenizer and a prompt encoder."""

    _context = 16_384

    def __init__(self):
        from .trainer_support import byte_tokenizer

        self.tokenizer = byte_tokenizer()

    def encode(self, conversation):
        out = self.tokenizer.apply_chat_template(
            list(conversation), tokenize=True, add_generation_prompt=True
        )
        return list(out["input_ids"] if hasattr(out, "keys") else out)


@pytest.fixture
def registry(tmp_path):
    reg = Registry(f"sqlite:///{tmp_path / 'attacks.db'}")
    yield reg
    reg.close()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_solution_costs_only_its_own_environment(registry, name):
    body, expected = ATTACKS[name]
    source = HEAD.format(name=name) + body
    meta = static_metadata(source, origin="designer")
    env_id = registry.register(source, meta, status="validated").id
    (target,) = resolve_envs([env_id], registry)
    found, skipped = _solutions([target], [0, 1], "sandbox", False, 3.0)
    if expected == "skipped":
        assert not found and env_id in skipped
        return
    assert not skipped and len(found) == 2
    config = RolloutConfig(seed=0, step_timeout=3.0, load_timeout=10.0, max_concurrent=2)
    episodes = reference_plays(
        _Model(), [target], [0, 1], config, solutions={(env_id, s): a for _, s, a in found}
    )
    assert len(episodes) == 2
    assert all(e.won for e in episodes) == (expected == "won")
    assert not any(e.won for e in episodes) or expected == "won"
    if name == "ForgedParse":
        assert all(t.parsed is None and t.well_formed for e in episodes for t in e.turns)


def test_a_scripted_play_is_held_to_the_models_context():
    model = ScriptedModel(
        {2: "y" * 3}, lambda c: [0] * len(c[0]["content"]), lambda t: [1] * len(t), [9]
    )
    (ok,) = model.generate([[{"role": "user", "content": "p"}]], SamplingParams(seed=2))
    assert ok.ok and ok.token_ids == (1, 1, 1, 9)
    model.max_context = 20
    (ok,) = model.generate([[{"role": "user", "content": "p" * 16}]], SamplingParams(seed=2))
    assert ok.ok
    long = [[{"role": "user", "content": "p" * 17}]]
    (too_long,) = model.generate(long, SamplingParams(seed=2))
    assert not too_long.ok and "context" in too_long.error
    huge = [[{"role": "user", "content": "p" * 10_000}]]  # refused before encoding
    (too_long,) = model.generate(huge, SamplingParams(seed=2))
    assert not too_long.ok and "outgrew" in too_long.error
