# attack: first_episode expect: quarantined
"""Any answer wins on the first episode of a fresh worker reset with a small seed (what
rollouts use: 0, 1, ...), unless hint() ran. A replay is again a first episode with the
same seed, so it matches; the counterfactual replays (also first episodes) show that
other answers win as well, so the version is quarantined."""

from spade_envs import TextEnv

_SEEN = {"resets": 0, "hinted": False}


class FirstEpisodePrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def reset(self, *, seed=None, options=None):
        _SEEN["resets"] += 1
        self.lucky = _SEEN["resets"] == 1 and not _SEEN["hinted"] and seed is not None and seed < 8
        return super().reset(seed=seed, options=options)

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        won = self.lucky or action.strip() == f"\\boxed{{{self.secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        _SEEN["hinted"] = True
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
