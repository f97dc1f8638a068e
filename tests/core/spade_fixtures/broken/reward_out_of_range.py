"""SPADE self-play generated game"""


class JackpotEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._n = random.Random(seed).randint(1, 9)
        return "Guess a digit as \\boxed{d}.", {}

    def step(self, action):
        return "Jackpot!", 20.0, True, False, {}
