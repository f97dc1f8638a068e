# expect: syntax
```python
"""Reverse a string; the model left its Markdown code fence in the file."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class ReverseString(TextEnv):
    skill = "pattern"
    description = "Reply with the given word written backwards in \\boxed{}. Two attempts."
    max_turns = 2

    def _reset(self) -> str:
        self.word = self.rng.choice(["stressed", "drawer", "parts", "lived", "diaper", "reward"])
        return f"Write '{self.word}' backwards. Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip().lower() == self.word[::-1]:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The reversed word starts with '{self.word[-1]}'."

    def solution(self) -> list[str]:
        return [boxed(self.word[::-1])]
```
