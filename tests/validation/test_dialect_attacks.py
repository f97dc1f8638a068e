"""Hostile environments aimed at SPADE's dialect and win rule (``spade_attacks/``): each is
validated at the ``fast`` budget, in the real sandbox, and must end ``rejected`` for the
reason its label names; ``residual`` programs are open holes, tested as strict xfails
(see ``spade_attacks/README.md``). Also the parts of the checks they lean on, in-process.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spade_envs.sandbox import SandboxConfig
from spade_envs.validation import Validator

ATTACKS = Path(__file__).with_name("spade_attacks")
LABEL = re.compile(
    r"^# attack: (?P<category>[a-z0-9_-]+) expect: (?P<expect>rejected|residual) "
    r"\[(?P<checks>[a-z_, ]+)\] reason: (?P<reason>.+?)\s*$"
)
OPEN = re.compile(r"^# open: (?P<why>.+?)\s*$")
#: The hostile corpus's limits: a regression fails a test instead of harming the machine.
LIMITS = SandboxConfig(memory_mb=1024, cpu_seconds=10, max_processes=16, call_timeout=10.0)


def _label(path: Path) -> tuple[str, tuple[str, ...], str, str]:
    lines = path.read_text(encoding="utf-8").split("\n", 2)
    match = LABEL.match(lines[0])
    assert match, f"{path.name}: malformed label {lines[0]!r}"
    why = ""
    if match["expect"] == "residual":
        found = OPEN.match(lines[1])
        assert found, f"{path.name}: a residual program says why on its second line (# open:)"
        why = found["why"]
    checks = tuple(c.strip() for c in match["checks"].split(","))
    return match["expect"], checks, match["reason"], why


def _cases() -> list:
    cases = []
    for path in sorted(ATTACKS.glob("*.py")):
        expect, _checks, _reason, why = _label(path)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if expect == "residual" else []
        cases.append(pytest.param(path, id=path.stem, marks=marks))
    return cases


@pytest.fixture(scope="module")
def validator():
    with Validator("fast", config=LIMITS, pool_size=2, seed=25) as validator:
        yield validator


def test_the_corpus_holds_the_dialect_attacks():
    names = {p.stem for p in ATTACKS.glob("*.py")}
    assert {
        "native_final_reward_farm",
        "spade_wrong_answers_farm",
        "spade_tool_backdoor",
        "spade_hint_attribute_leak",
        "native_raises_unproven",
        "spade_no_solution_empty_wins",
    } <= names


@pytest.mark.parametrize("path", _cases())
def test_attack_is_rejected_for_the_labelled_reason(path, validator):
    _expect, checks, reason, _why = _label(path)
    report = validator.validate(path.read_text(encoding="utf-8"), filename=path.name)
    failed = {c.name: c.reason for c in report.failures}
    assert report.verdict() == "rejected", f"{path.name}: {report.verdict()}\n{report.summary()}"
    matching = [c for c in checks if c in failed and re.search(reason, failed[c], re.I)]
    assert matching, f"{path.name}: expected one of {checks} to fail matching {reason!r}: {failed}"


# ----- the parts, in-process ------------------------------------------------------------------
_SPADE_GAME = '''"""SPADE self-play generated game"""
class CoinEnv:
    def reset(self, seed=None):
        self._side = random.Random(seed).choice(["heads", "tails"])
        return "Heads or tails? Answer as \\\\boxed{side}.", {}
    def step(self, action):
        won = self._side in action
        return ("Yes." if won else "No."), float(won), True, False, {}
    def hint(self):
        return "Flip it."
    def solution(self):
        return self._side
'''


def test_hinted_plays_are_scored_by_the_envs_win_rule():
    from spade_envs.core.episodes import repeated
    from spade_envs.core.loader import load_env_class
    from spade_envs.validation.checks import _play_after_hint

    env = load_env_class(_SPADE_GAME)()
    assert env.win_rule == "final_reward" and env.reward_range == (-10.0, 10.0)
    env.reset(seed=1)
    answer = env.solution()[0]
    episode = _play_after_hint(env, repeated(answer), 1, "a hinted play")
    # The right answer ends the episode with reward 1.0: a win by SPADE's rule (a return of
    # 1 is far from the top of (-10, 10), so the return rule calls it lost).
    assert episode.won
