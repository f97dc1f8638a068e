"""Twenty questions over a listed catalogue: find the hidden object with yes/no questions."""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, answers_match, boxed, extract_answer

QUESTIONS = {
    "alive": "Is it alive?",
    "animal": "Is it an animal?",
    "tame": "Do people keep it as a pet or farm animal?",
    "legs": "Does it have legs?",
    "fly": "Can it fly?",
    "water": "Does it live or travel in water?",
    "big": "Is it bigger than a person?",
    "metal": "Is it mostly made of metal?",
    "wheels": "Does it have wheels?",
    "powered": "Does it need electricity or fuel?",
    "edible": "Do people eat it?",
    "kitchen": "Is it usually found in a kitchen?",
}
# Object -> the questions answered "yes" (every other question is "no").
CATALOGUE = {
    "eagle": "alive animal legs fly",
    "penguin": "alive animal legs water",
    "shark": "alive animal water big",
    "elephant": "alive animal legs big",
    "horse": "alive animal tame legs big",
    "chicken": "alive animal tame legs edible",
    "goldfish": "alive animal tame water",
    "apple": "alive edible kitchen",
    "oak tree": "alive big",
    "cactus": "alive",
    "bicycle": "metal wheels",
    "truck": "metal wheels big powered",
    "airplane": "metal wheels big powered fly",
    "sailboat": "water big",
    "submarine": "metal water big powered",
    "refrigerator": "metal big powered kitchen",
    "toaster": "metal powered kitchen",
    "frying pan": "metal kitchen",
    "chair": "legs",
    "piano": "legs big",
    "laptop": "powered",
    "kite": "fly",
    "drone": "fly powered",
    "table": "legs kitchen",
}
_BY_TEXT = {q.lower().rstrip("?"): key for key, q in QUESTIONS.items()}  # full questions work too
_ASK = re.compile(r"ask\s*:?\s*([a-z ]{1,40}?)\s*\??")


class TwentyQuestions(TextEnv):
    skill = "logic"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "One object from a listed set of candidates is hidden, and the yes-attributes of "
        "every candidate are shown. Ask yes/no questions from a fixed vocabulary ('ask "
        "metal') to narrow the candidates down, then guess the object with \\boxed{name}. "
        "Questions are scarce: pick those that split the remaining candidates evenly."
    )
    # hole: turns allowed: questions plus the single guess [5, 20]
    max_turns = 6
    # hole: candidates listed (2-24) [2, 24]
    knobs: ClassVar[dict] = {"candidates": 12}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("max_turns < candidates",)

    def _reset(self) -> str:
        count = min(max(self.candidates, 2), len(CATALOGUE))
        self.names = sorted(self.rng.sample(list(CATALOGUE), count))
        self.secret = self.rng.choice(self.names)
        others = [n for n in self.names if n != self.secret]
        self.ruled_out = sorted(self.rng.sample(others, len(others) // 2))
        table = "\n".join(f"- {n}: {', '.join(CATALOGUE[n].split())}" for n in self.names)
        vocabulary = "\n".join(f"- {key}: {q}" for key, q in QUESTIONS.items())
        return (
            f"I am thinking of one of these {count} objects; each is listed with the "
            f"questions whose answer is yes for it (all others are no):\n{table}\n"
            f"Questions you may ask:\n{vocabulary}\nEach turn either ask one question as "
            "'ask KEY' (e.g. 'ask metal') or make your single guess as \\boxed{name}. You "
            f"have {self.max_turns} turns in total."
        )

    def _yes(self, name: str, key: str) -> bool:
        return key in CATALOGUE[name].split()

    def _step(self, action: str):
        text = extract_answer(action)[:200].strip().lower()
        asked = _ASK.fullmatch(text)
        if asked:
            key = asked.group(1).strip()
            key = _BY_TEXT.get(key, key)
            if key not in QUESTIONS:
                return self.not_understood(f"Unknown question; ask one of: {', '.join(QUESTIONS)}.")
            reply = "Yes" if self._yes(self.secret, key) else "No"
            return f"{QUESTIONS[key]} {reply}.", 0.0, False
        text = re.sub(r"^guess\s*:?\s*", "", text)
        guess = next((n for n in self.names if answers_match(text, n)), None)
        if guess is None:
            return self.not_understood("Ask 'ask KEY' or guess one listed object as \\boxed{name}.")
        if guess == self.secret:
            return f"Yes, it is the {self.secret}!", 1.0, True
        return f"No, it was the {self.secret}.", 0.0, True

    # hole: rule: the privileged hint (never the object itself)
    def hint(self) -> str:
        return f"It is none of these: {', '.join(self.ruled_out)}."

    def solution(self) -> list[str]:
        # Greedy decision tree: ask the question that splits the remaining candidates
        # most evenly, keep those that agree with the answer, guess when one is left.
        left, actions = list(self.names), []
        while len(left) > 1:
            key = min(
                QUESTIONS,
                key=lambda k: max(
                    sum(self._yes(n, k) for n in left), sum(not self._yes(n, k) for n in left)
                ),
            )
            actions.append(f"ask {key}")
            left = [n for n in left if self._yes(n, key) == self._yes(self.secret, key)]
        return actions + [boxed(left[0])]
