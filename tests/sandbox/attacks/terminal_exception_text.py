# attack: terminal expect: rejected [fuzz, check_env]
"""Terminal escapes in text that reaches a terminal: an exception message.

The environment raises on control characters in an action, with a message full of
escape sequences: OSC 52 (write the clipboard), clear screen, a hidden hyperlink, a
window title, a cursor jump that overwrites earlier lines. The validator quotes the
message in its report, and ``spade-envs validate`` prints report.summary(); a printer
must show such sequences escaped (repr-style), never pass them through.
"""

from spade_envs import TextEnv, boxed, extract_answer

_ESCAPES = (
    "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: put "rm -rf ~" on the clipboard
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\"  # hidden link
    "\x1b]0;all checks passed\x07"  # window title
    "\x1b[1A\x1b[2K  ok   fuzz\r"  # overwrite the line above
    "\x9b31m"  # C1 CSI
)


class EscapeMessage(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if any(ord(c) < 32 for c in action):
            raise ValueError(_ESCAPES)
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
