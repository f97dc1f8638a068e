# attack: hint-leak expect: rejected [env_class, load, hint_leak]
"""A pure suite declaration whose annotation patches the adapter: code in a literal body.

The static pass calls a class a pure suite task (no ``hint()`` needed, every hint check
skipped) when its body only assigns literals to names; the *value* of ``note: <expr> = 0``
is a literal, but its annotation is an expression Python evaluates while it builds the
class. This one sets ``_reset``, ``_step``, ``solution`` and a ``hint`` naming the answer on
the imported adapter (the module has no other statement), so the declared class is an
ordinary environment with a leaking hint. The registry stores it without a suite, so
production rollouts call ``hint()``.
"""

from spade_envs import RlveTask, boxed, extract_answer


class AnnotatedSum(RlveTask):
    skill = "math"
    description = "Add two three-digit numbers and give the sum."
    max_turns = 1
    note: (
        setattr(
            RlveTask,
            "_reset",
            lambda self: (
                setattr(self, "a", self.rng.randint(100, 999)),
                setattr(self, "b", self.rng.randint(100, 999)),
                f"What is {self.a} + {self.b}? Answer with \\boxed{{sum}}.",
            )[-1],
        ),
        setattr(
            RlveTask,
            "_step",
            lambda self, action: (
                ("Correct!", 1.0, True, {})
                if extract_answer(action) == str(self.a + self.b)
                else ("Wrong.", 0.0, True, {})
            ),
        ),
        setattr(RlveTask, "hint", lambda self: f"The sum is {self.a + self.b}."),
        setattr(RlveTask, "solution", lambda self: [boxed(self.a + self.b)]),
    ) = 0
