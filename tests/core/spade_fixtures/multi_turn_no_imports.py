"""SPADE self-play generated game"""

class HiddenPathEnv:
    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        if seed is not None:
            random.seed(seed)
        self.turn_count = 0
        self._target = random.randint(1, 50)
        self._history = deque(maxlen=3)
        return (f"I am thinking of a number from 1 to 50. Guess it with \\boxed{{n}}. "
                f"You have {self.max_turns} turns.", {})

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        match = re.search(r"\\boxed\{([^{}]+)\}", action)
        if not match:
            if truncated:
                return (f"Time's up. The answer was {self._target}.", 0.0, False, True, {})
            return ("Answer with \\boxed{n}.", 0.0, False, False, {})
        try:
            guess = int(match.group(1).strip())
        except ValueError:
            guess = None
        self._history.append(guess)
        if guess == self._target:
            return ("Correct!", 1.0, True, False, {})
        if truncated:
            return (f"Time's up. The answer was {self._target}.", 0.0, False, True, {})
        hint = "higher" if guess is not None and guess < self._target else "lower"
        return (f"Wrong, go {hint}.", 0.0, False, False, {})
