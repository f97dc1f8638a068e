# expect: trivial
"""Name the chemical element for a symbol; accepted spellings are checked with `in` on a string."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_ELEMENTS = {
    "Fe": ["iron"], "Na": ["sodium"], "K": ["potassium"], "Ag": ["silver"],
    "Au": ["gold"], "Pb": ["lead"], "Sn": ["tin"], "Hg": ["mercury"],
    "Cu": ["copper"], "W": ["tungsten", "wolfram"], "Sb": ["antimony", "stibium"],
}


class ElementSymbol(TextEnv):
    skill = "science"
    description = (
        "Given a chemical symbol whose letters do not match the English name (like Fe), "
        "reply with the element's name in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.symbol = self.rng.choice(sorted(_ELEMENTS))
        self.accepted = " / ".join(_ELEMENTS[self.symbol])
        return f"Which element has the symbol {self.symbol}? Reply with \\boxed{{name}}."

    def _step(self, action: str):
        guess = extract_answer(action).strip().lower()
        left = self.max_turns - self.turn
        if guess in self.accepted:
            return f"Correct: {self.accepted}.", 1.0, True
        return f"No. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        name = _ELEMENTS[self.symbol][0]
        return f"Its English name has {len(name)} letters; the symbol comes from an older name."

    def solution(self) -> list[str]:
        return [boxed(_ELEMENTS[self.symbol][0])]
