# attack: parent-dos expect: rejected [solution] only: all
"""Parent CPU: a solution whose answer is 400,000 characters long.

Everything crosses the wire within the 4 MB message limit, and the environment does
almost no work itself. The parent does: the hint-leak check builds a regular expression
from the answer and from each of its encodings (reversed, hex, base64, spaced out...)
and searches the hint with each: about 12 s of parent CPU per million characters and
seed, outside every per-call limit (the per-call and per-check limits only time calls
into the worker, so a check overruns by one whole iteration, and a last iteration that
overruns still passes). On the fuzzer's fixed seeds 0, 1 and 2 the passphrase is short,
so the state machine stays fast.

No agent can send such an action (the action space holds 8192 characters), so this
solution is not a solution; the validator should say so at once. Parent work does not
depend on the sandbox layers, so this program runs in one configuration only.
"""

from spade_envs import TextEnv, boxed

_LENGTH = 400_000


class HugeAnswer(TextEnv):
    skill = "math"
    description = "Type the hidden passphrase exactly; it is very long."
    max_turns = 2

    def reset(self, *, seed=None, options=None):
        self.seed = seed
        return super().reset(seed=seed, options=options)

    def _reset(self):
        length = 8 if self.seed in (0, 1, 2) else _LENGTH
        self.phrase = "".join(self.rng.choice("ab") for _ in range(8)) * (length // 8)
        return "Type the passphrase. Answer with \\boxed{passphrase}."

    def _step(self, action):
        # C-speed comparison: the worker stays well inside its per-call CPU limit.
        if action.strip() == boxed(self.phrase):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "It is made of the letters a and b."

    def solution(self):
        return [boxed(self.phrase)]
