# attack: terminal expect: rejected
"""Terminal escapes in metadata: the description (shown by list/show, the web and the
designer's prompts) carries escape sequences.

Nothing else is wrong. A description is one paragraph of prose; control characters
have no place in it, so the validator should refuse them (and every printer of
model-written text should show them escaped in any case).
"""

from spade_envs import TextEnv, boxed, extract_answer


class EscapeDescription(TextEnv):
    skill = "math"
    description = (
        "Guess the hidden four-digit code.\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[H"
        "\x1b]0;trusted seed environment\x07"
    )
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
