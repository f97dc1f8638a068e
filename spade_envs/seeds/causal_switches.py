"""Find which switches are not wired to a lamp by designing experiments."""

from __future__ import annotations

import itertools
import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer, extract_boxed

_SET = re.compile(r"set((?:[\s,]*[a-z]\s*=\s*[01])+)")
_LETTERS = re.compile(r"[a-z](?:[\s,&/]+[a-z])*")


class CausalSwitches(TextEnv):
    skill = "science"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A lamp is wired to some of several on/off switches through a hidden logic "
        "circuit of AND, OR and NOT; a known number of switches are not connected at all. "
        "Run experiments that set every switch and observe the lamp, then name the "
        "switches that have no effect. A switch proves it is wired only when flipping it "
        "alone changes the lamp, so experiments must be designed in pairs."
    )
    # hole: turns allowed (experiments plus the answer need up to 9) [9, 30]
    max_turns = 10
    # hole: switches (3-6) and unconnected switches among them (1 up to switches - 2) [1, 6]
    knobs: ClassVar[dict] = {"switches": 5, "dead": 2}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("3 <= switches <= 6", "1 <= dead <= switches - 2", "switches - 4 <= dead")

    def _reset(self) -> str:
        self.switches = min(max(self.switches, 3), 6)
        # At most four connected switches, so one pair of experiments each fits in max_turns.
        self.dead = min(max(self.dead, 1, self.switches - 4), self.switches - 2)
        self.names = "ABCDEF"[: self.switches]
        live = self.rng.sample(self.names, self.switches - self.dead)
        self.dead_names = sorted(set(self.names) - set(live))
        self.circuit = self._build(live)
        return (
            f"Switches {', '.join(self.names)} control a lamp through a hidden circuit of "
            f"AND, OR and NOT. Exactly {self.dead} of the switches are not connected and "
            "never affect the lamp. Run an experiment with a line such as "
            f"'set {' '.join(f'{n}=1' for n in self.names)}' (switches you leave out are 0) "
            "and I report the lamp. When you know which switches are not connected, answer "
            "with their letters in \\boxed{}, separated by commas. You have "
            f"{self.max_turns} turns in total, and one answer."
        )

    def _build(self, live: list[str]):
        """A random read-once formula: every live switch appears once, so each matters."""
        if len(live) == 1:
            return ("not", live[0]) if self.rng.random() < 0.3 else live[0]
        cut = self.rng.randint(1, len(live) - 1)
        op = self.rng.choice(["and", "or"])
        return (op, self._build(live[:cut]), self._build(live[cut:]))

    def lamp(self, setting: dict[str, int], node=None) -> bool:
        node = self.circuit if node is None else node
        if isinstance(node, str):
            return bool(setting[node])
        if node[0] == "not":
            return not setting[node[1]]
        left, right = self.lamp(setting, node[1]), self.lamp(setting, node[2])
        return (left and right) if node[0] == "and" else (left or right)

    def _formula(self, node=None) -> str:
        if node is None:
            return "lamp = " + self._formula(self.circuit)
        if isinstance(node, str):
            return node
        if node[0] == "not":
            return f"not {node[1]}"
        return f"({self._formula(node[1])} {node[0]} {self._formula(node[2])})"

    def _step(self, action: str):
        text = extract_answer(action)[:300].strip().lower()
        found = _SET.fullmatch(text)
        if found:
            pairs = re.findall(r"([a-z])\s*=\s*([01])", found.group(1))
            letters = [k.upper() for k, _ in pairs]
            if any(k not in self.names for k in letters) or len(set(letters)) != len(letters):
                return self.not_understood(
                    f"Set each of the switches {', '.join(self.names)} at most once."
                )
            setting = {n: 0 for n in self.names} | {k.upper(): int(v) for k, v in pairs}
            state = "ON" if self.lamp(setting) else "OFF"
            shown = " ".join(f"{n}={v}" for n, v in setting.items())
            return f"{shown} -> the lamp is {state}.", 0.0, False
        answer = (extract_boxed(action) or "")[:300].lower()  # answers must be boxed
        text = re.sub(r"\b(?:and|switch|switches)\b", " ", answer).strip()
        if not _LETTERS.fullmatch(text):
            return self.not_understood("Run 'set A=1 B=0 ...' or answer \\boxed{letters}.")
        named = sorted({ch.upper() for ch in text if ch.isalpha()})
        if len(named) != self.dead or any(n not in self.names for n in named):
            return self.not_understood(
                f"Name exactly {self.dead} of the switches {', '.join(self.names)}."
            )
        if named == self.dead_names:
            return f"Correct! The circuit is {self._formula()}.", 1.0, True
        return f"Wrong. The circuit is {self._formula()}.", 0.0, True

    def _witness(self, switch: str) -> dict[str, int]:
        """A setting (dead switches at 0) where flipping ``switch`` flips the lamp."""
        for bits in itertools.product([0, 1], repeat=len(self.names)):
            setting = dict(zip(self.names, bits))
            if any(setting[d] for d in self.dead_names) or setting[switch]:
                continue
            if self.lamp(setting) != self.lamp(setting | {switch: 1}):
                return setting
        raise AssertionError("read-once circuits depend on every live switch")

    # hole: rule: the privileged hint (never all the unconnected switches)
    def hint(self) -> str:
        switch = next(n for n in self.names if n not in self.dead_names)
        others = " ".join(f"{n}={v}" for n, v in self._witness(switch).items() if n != switch)
        return f"Switch {switch} is connected: with {others}, flipping {switch} changes the lamp."

    def solution(self) -> list[str]:
        # For each connected switch, run a pair of experiments that differ only in it.
        actions = []
        for switch in self.names:
            if switch not in self.dead_names:
                base = self._witness(switch)
                for setting in (base, base | {switch: 1}):
                    line = "set " + " ".join(f"{n}={v}" for n, v in setting.items())
                    if line not in actions:
                        actions.append(line)
        return actions + [boxed(", ".join(self.dead_names))]
