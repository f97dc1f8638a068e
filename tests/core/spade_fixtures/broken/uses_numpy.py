"""SPADE self-play generated game"""


class MatrixTraceEnv:
    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._m = np.random.default_rng(seed).integers(0, 9, size=(3, 3))
        return f"Trace of {self._m.tolist()}? Answer \\boxed{{n}}.", {}

    def step(self, action):
        ok = action.strip() == f"\\boxed{{{int(np.trace(self._m))}}}"
        return ("Correct!" if ok else "Wrong."), float(ok), True, False, {}
