"""SPADE self-play generated game"""


class BrokenResetEnv:
    def reset(self, seed=None):
        return self._board.render(), {}

    def step(self, action):
        return "Done.", 0.0, True, False, {}
