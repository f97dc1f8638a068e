"""SPADE self-play generated game"""


class ConsolationEnv:
    """Any answer ends the game with a positive reward: by SPADE's rule (a final reward
    above zero) every answer wins, so the win rule must not weaken the verdict."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._n = random.Random(seed).randint(100, 999)
        return f"Guess my number from 100 to 999 as \\boxed{{n}}.", {}

    def solution(self):
        return str(self._n)

    def step(self, action):
        found = re.search(r"\\boxed\{(\d+)\}", action)
        if found and int(found.group(1)) == self._n:
            return "Correct!", 1.0, True, False, {}
        return "Nice try, here is a consolation prize.", 0.05, True, False, {}
