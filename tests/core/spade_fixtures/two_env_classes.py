"""SPADE self-play generated game"""


class SumTargetEnv:
    """Give two numbers from the list that add up to the target."""

    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._numbers = rng.sample(range(1, 60), 6)
        a, b = rng.sample(self._numbers, 2)
        self._target = a + b
        return (f"Numbers: {self._numbers}. Name two of them that sum to {self._target}, "
                "as \\boxed{a, b}.", {})

    def solution(self):
        for a, b in combinations(self._numbers, 2):
            if a + b == self._target:
                return f"{a}, {b}"
        return ""

    def step(self, action):
        self.turn_count += 1
        found = re.search(r"\\boxed\{([^{}]*)\}", action)
        picked = []
        if found:
            picked = [int(x) for x in re.findall(r"-?\d+", found.group(1))]
        if len(picked) == 2 and picked[0] != picked[1] and all(p in self._numbers for p in picked) \
                and sum(picked) == self._target:
            return "Correct!", 1.0, True, False, {}
        if self.turn_count >= self.max_turns:
            return "Out of turns.", 0.0, False, True, {}
        return "Not a pair that sums to the target.", 0.0, False, False, {}


class HelperEnv:
    """A second *Env class: SPADE's loader ignores it (it takes the first)."""

    def reset(self, seed=None):
        return "unused", {}

    def step(self, action):
        return "unused", 1.0, True, False, {}
