"""SPADE self-play generated game"""


class CoinGame:
    def reset(self, seed=None):
        return "Heads or tails?", {}

    def step(self, action):
        return "Done.", 1.0, True, False, {}
