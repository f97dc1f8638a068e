# attack: hint-leak expect: rejected [env_class, load, hint_leak]
"""A pure suite declaration whose adapter the module patches: the suite exemption by patching.

The static pass calls a class a pure suite task (no ``hint()`` needed, every hint check
skipped) when it derives from an imported ``RlveTask`` and its body only sets literals;
it never looks at module-level statements. Here the module assigns its own ``_reset``,
``_step``, ``solution`` and a ``hint`` naming the answer onto the imported adapter class
itself (in the worker that loads it), so the declared class is an ordinary environment
with a leaking hint. The registry stores it without a suite, so production rollouts call
``hint()``.
"""

from spade_envs import RlveTask, boxed, extract_answer


def _reset(self):
    self.a = self.rng.randint(100, 999)
    self.b = self.rng.randint(100, 999)
    return f"What is {self.a} + {self.b}? Answer with \\boxed{{sum}}."


def _step(self, action):
    if extract_answer(action) == str(self.a + self.b):
        return "Correct!", 1.0, True, {}
    return "Wrong.", 0.0, True, {}


def _reveal(self):
    return f"The sum is {self.a + self.b}."


def _solution(self):
    return [boxed(self.a + self.b)]


RlveTask._reset = _reset
RlveTask._step = _step
RlveTask.hint = _reveal
RlveTask.solution = _solution


class PatchedSum(RlveTask):
    skill = "math"
    description = "Add two three-digit numbers and give the sum."
    max_turns = 1
