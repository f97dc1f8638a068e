# expect: valid
"""A word ladder, written SPADE-style: a plain class named ``*Env``, no spade_envs base.

``reset(seed=None)`` returns the first observation string and ``step(action)`` returns
``(observation, reward, done, info)`` with plain int rewards (0 or 1); ``hint()`` and
``solution()`` complete the protocol. All randomness comes from ``random.Random(seed)``.
"""

import random
import string
from collections import deque

WORDS = """
bake bale ball band bane bank bare bark barn base bass bast bath bead beak beam bean
bear beat beds beef been beer bees bell belt bend bent best bike bile bill bind bird
bite bode bold bole bolt bond bone book boom boot bore born boss both bowl bows cake
call calm came camp cane cape card care cart case cash cast cave cell cold colt comb
come cone cook cool cope cord core corn cost cove cows dare dark darn dart dash date
dawn days dead deal dean dear deed deep deer dell dent desk dial dice dine dire dirt
dish dive dock dole dome done doom door dose dote dove down fail fall fame fare farm
fast fate fawn fear feat feed feel fees fell felt fern file fill film find fine fire
firm fish fist five fold folk fond font food fool foot ford fore fork form fort foul
four gale game gate gave gaze gear gold golf gone good gore gown hail hair hale hall
halt hand hang hare harm hate have head heal heap hear heat held hell helm herd here
hero hide hill hind hint hire hold hole home hood hook hope horn hose host hour
""".split()
INDEX = {w: i for i, w in enumerate(WORDS)}


def _neighbours(word):
    found = []
    for i in range(len(word)):
        for letter in string.ascii_lowercase:
            candidate = word[:i] + letter + word[i + 1:]
            if candidate != word and candidate in INDEX:
                found.append(candidate)
    return found


GRAPH = {w: _neighbours(w) for w in WORDS}


def _shortest(start, goal):
    parent = {start: None}
    queue = deque([start])
    while queue:
        word = queue.popleft()
        if word == goal:
            break
        for nxt in GRAPH[word]:
            if nxt not in parent:
                parent[nxt] = word
                queue.append(nxt)
    if goal not in parent:
        return None
    path = [goal]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return path[::-1]


class WordLadderEnv:
    """Turn the start word into the goal word by changing one letter per turn; every
    intermediate word must be an English word from the game's list."""

    skill = "pattern"
    description = (
        "Word ladder: change the start word into the goal word one letter at a time. Each "
        "turn, write the next word (4 letters, one letter different from the current "
        "word, and in the game's word list). Reach the goal within the turn limit."
    )
    max_turns = 12

    def __init__(self):
        self.rng = random.Random(0)
        self.current = ""
        self.goal = ""
        self.turns = 0
        self.done = True

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        while True:
            start, goal = self.rng.sample(WORDS, 2)
            path = _shortest(start, goal)
            if path is not None and 4 <= len(path) <= 7:
                break
        self.start, self.goal, self.best = start, goal, path
        self.current = start
        self.used = [start]
        self.turns = 0
        self.done = False
        return (
            f"Word ladder from '{start.upper()}' to '{goal.upper()}'. Each turn write one "
            "word that differs from the current word in exactly one letter (same "
            f"positions). You have {self.max_turns} turns; the shortest ladder needs "
            f"{len(path) - 1} steps. Answer with just the word, e.g. \\boxed{{word}}."
        )

    def _read(self, action):
        text = str(action)[:200].strip()
        if "\\boxed{" in text:
            text = text.rsplit("\\boxed{", 1)[1].split("}", 1)[0]
        return text.strip().strip(".").lower()

    def step(self, action):
        if self.done:
            return "The game is over.", 0, True, {"turns": self.turns}
        self.turns += 1
        word = self._read(action)
        out_of_turns = self.turns >= self.max_turns
        if word not in INDEX:
            message = f"'{word[:20]}' is not a 4-letter word from the list. Still at {self.current.upper()}."
        elif word not in GRAPH[self.current]:
            message = f"{word.upper()} does not differ from {self.current.upper()} in exactly one letter."
        else:
            self.current = word
            self.used.append(word)
            if word == self.goal:
                self.done = True
                return f"{word.upper()}! Ladder complete in {self.turns} turns.", 1, True, {"turns": self.turns}
            message = f"Now at {word.upper()}. Goal: {self.goal.upper()}."
        if out_of_turns:
            self.done = True
            message += " Out of turns."
        return message, 0, self.done, {"turns": self.turns}

    def hint(self):
        if len(self.best) > 2:
            return f"A shortest ladder starts {self.start.upper()} -> {self.best[1].upper()}."
        return "Look at which letter differs from the goal."

    def solution(self):
        return [f"\\boxed{{{w}}}" for w in self.best[1:]]
