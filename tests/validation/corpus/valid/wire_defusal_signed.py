# expect: valid
"""Defuse a device by cutting its wires in the one order the manual's clues allow.

Rewards are signed: each correct cut earns 1/n, a wrong cut costs -1 and ends the
episode, so returns lie in [-1, 1] and only cutting every wire in order reaches 1.
"""

from __future__ import annotations

from spade_envs import TextEnv, extract_answer, normalize_text

COLOURS = ["red", "blue", "green", "yellow", "white", "black", "orange", "purple", "brown"]

TEMPLATES = (
    "The {a} wire is cut immediately before the {b} wire.",
    "Right after cutting {a}, cut {b}.",
    "{b} comes directly after {a} in the cutting order.",
    "Nothing is cut between {a} and {b}, and {a} goes first.",
)


class WireDefusalSigned(TextEnv):
    skill = "logic"
    description = (
        "A device has several coloured wires that must be cut in one exact order. A "
        "scrambled manual gives clues, each linking two wires that are cut one right after "
        "the other. Deduce the order and cut the wires one per turn ('cut red'). Each "
        "correct cut earns part of the reward; a wrong cut sets the device off (reward -1)."
    )
    max_turns = 14
    reward_range = (-1.0, 1.0)
    knobs = {"wires": 5}

    def _reset(self) -> str:
        count = max(3, min(self.wires, len(COLOURS)))
        self.order = self.rng.sample(COLOURS, count)
        clues = [
            self.rng.choice(TEMPLATES).format(a=a, b=b) for a, b in zip(self.order, self.order[1:])
        ]
        self.rng.shuffle(clues)
        self.cut: list[str] = []
        self.step_reward = 1.0 / count
        shown = sorted(self.order)
        manual = "\n".join(f"  - {c[0].upper()}{c[1:]}" for c in clues)
        return (
            f"The device has {count} wires: {', '.join(shown)}.\nManual (scrambled):\n{manual}\n"
            "Cut one wire per turn by writing 'cut COLOUR' (or \\boxed{COLOUR}). A wrong cut "
            "detonates the device."
        )

    def _colour(self, action: str) -> str | None:
        words = normalize_text(extract_answer(action)[:100]).replace(".", " ").split()
        if words and words[0] == "cut":
            words = words[1:]
        if words[-1:] == ["wire"]:
            words = words[:-1]
        if len(words) == 1 and words[0] in self.order:
            return words[0]
        return None

    def _step(self, action: str):
        colour = self._colour(action)
        if colour is None:
            colours = ", ".join(sorted(self.order))
            return f"Write 'cut COLOUR' with one of: {colours}.", 0.0, False
        if colour in self.cut:
            return (
                f"The {colour} wire is already cut. Cut so far: {', '.join(self.cut)}.",
                0.0,
                False,
            )
        expected = self.order[len(self.cut)]
        if colour != expected:
            return f"BANG. The {colour} wire was not next. The device went off.", -1.0, True
        self.cut.append(colour)
        if len(self.cut) == len(self.order):
            # The last share tops the return up to exactly 1.0.
            reward = 1.0 - self.step_reward * (len(self.order) - 1)
            return "Click. The device is defused!", reward, True
        left = len(self.order) - len(self.cut)
        return f"Snip. The {colour} wire is cut; {left} to go.", self.step_reward, False

    def hint(self) -> str:
        return (
            f"Find the wire that never appears second in a clue: it is the start. The "
            f"{self.order[0]} wire is the one to begin with."
        )

    def solution(self) -> list[str]:
        return [f"cut {c}" for c in self.order]
