# expect: fuzz
"""Find the missing number in an arithmetic progression; int() on an unchecked answer."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class MissingTerm(TextEnv):
    skill = "pattern"
    description = (
        "An arithmetic progression of seven numbers is shown with one term replaced by '?'. "
        "Reply with the missing term in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        start, step = self.rng.randint(-20, 40), self.rng.choice([-7, -5, -3, 3, 4, 6, 9, 11])
        self.terms = [start + i * step for i in range(7)]
        self.gap = self.rng.randint(1, 5)
        shown = [str(t) if i != self.gap else "?" for i, t in enumerate(self.terms)]
        return f"Sequence: {', '.join(shown)}. Reply with the missing term as \\boxed{{n}}."

    def _step(self, action: str):
        answer = extract_answer(action).replace(" ", "")
        left = self.max_turns - self.turn
        if not all(ch in "-0123456789" for ch in answer):
            return f"Answer with a whole number only. Attempts left: {left}.", 0.0, left == 0
        if int(answer) == self.terms[self.gap]:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Take the difference of two neighbouring known terms; it is constant."

    def solution(self) -> list[str]:
        return [boxed(self.terms[self.gap])]
