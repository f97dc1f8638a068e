"""SPADE self-play generated game"""


class BoardEnv:
    def reset(self, seed=None):
        return "A board.", {}


class BoardGameEnv:
    def reset(self, seed=None):
        return "A board.", {}

    def step(self, action):
        return "Done.", 1.0, True, False, {}
