# attack: per-process expect: rejected [determinism, solution] residual: every worker of one validation sees the same date; replaying validated trajectories at first use is not built
"""State outside the instance that every worker of one validation shares: the date.

The salt is today's date, read at import (datetime is on the import allow-list). The
main and the clean worker of one validation agree (unless it runs across midnight), so
replays and the solution played in the other worker match; tomorrow the same seed is a
different episode, so stored trajectories, baselines and regret estimates no longer
describe the environment. Rejecting this needs the validator to control the clock the
environment sees (or to compare against trajectories recorded earlier).
"""

import datetime

from spade_envs import TextEnv, boxed, extract_answer

_SALT = datetime.date.today().toordinal() % 997


class CalendarSalt(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 8999) + _SALT
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
