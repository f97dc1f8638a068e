# attack: forgery expect: rejected [fuzz, check_env]
"""Forgery: switch Hypothesis off inside the worker.

run_state_machine_as_test, given and settings are replaced by no-ops, so a fuzzer
running in this process would run nothing. The fuzzer runs in the validating process;
this environment crashes on any action with a control character, which the probe
episodes and the state machine find.
"""

from spade_envs import TextEnv, boxed, extract_answer

try:
    import hypothesis
    import hypothesis.stateful

    hypothesis.stateful.run_state_machine_as_test = lambda *args, **kwargs: None
    hypothesis.given = lambda *args, **kwargs: lambda fn: fn
    hypothesis.settings = lambda *args, **kwargs: lambda fn: fn
except Exception:
    pass


class ForgedFuzz(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if any(ord(c) < 32 for c in action):
            raise RuntimeError("control characters crash this environment")
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
