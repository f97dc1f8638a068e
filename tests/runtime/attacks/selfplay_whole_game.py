# attack: selfplay expect: quarantined
"""Nim that player_0 wins with any move when the game is played whole (self-play: the
model in every seat), told apart from a seat's play by the worker's call stack. The
validator judges wins through one seat, and a replay of the whole game wins again; the
counterfactual audit replays player_0's winning move with wrong moves, which win too,
and the version is quarantined."""

from __future__ import annotations

import dataclasses
from functools import reduce
from operator import xor

from spade_envs import IllegalMove, TextGame


def _whole_game():
    return any(f.function == "game_step" for f in dataclasses.inspect.stack(0))


class WholeGameNim(TextGame):
    skill = "math"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Several heaps of stones. Players alternate; a move takes one or more stones from "
        "one heap, written 'take K from H'. Whoever takes the last stone wins. The first "
        "player can always force a win here: keep the XOR (nim-sum) of the heaps at zero."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [60, 200]
    max_turns = 60
    # hole: number of heaps and largest heap size [2, 8]
    knobs = {"heaps": 3, "max_heap": 7}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("heaps * max_heap <= max_turns",)

    def _reset(self) -> None:
        while True:
            self.piles = [self.rng.randint(1, self.max_heap) for _ in range(self.heaps)]
            if reduce(xor, self.piles):  # nonzero nim-sum: the first player can win
                break

    def _board(self) -> str:
        return ", ".join(f"heap {i + 1}: {n}" for i, n in enumerate(self.piles))

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        return (
            f"Nim. {self._board()}. You are {agent} ({turn}). "
            "Move as \\boxed{take K from H}; taking the last stone wins."
        )

    def _parse(self, action: str) -> tuple[int, int]:
        words = self.parse_move(action).replace(",", " ").split()
        numbers = [int(w) for w in words if w.isascii() and w.isdigit() and len(w) < 6]
        if len(numbers) != 2:
            raise IllegalMove("write 'take K from H' with two whole numbers")
        count, heap = numbers
        if not 1 <= heap <= len(self.piles):
            raise IllegalMove(f"there is no heap {heap}")
        if not 1 <= count <= self.piles[heap - 1]:
            raise IllegalMove(f"heap {heap} has {self.piles[heap - 1]} stones")
        return count, heap

    def _move(self, agent: str, action: str):
        if agent == self.possible_agents[0] and _whole_game():
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        count, heap = self._parse(action)
        self.piles[heap - 1] -= count
        if sum(self.piles) == 0:
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [f"take {k} from {h + 1}" for h, n in enumerate(self.piles) for k in range(1, n + 1)]

    def best_move(self, agent: str) -> str:
        total = reduce(xor, self.piles)
        for h, n in enumerate(self.piles):
            if total and n ^ total < n:
                return f"take {n - (n ^ total)} from {h + 1}"
        biggest = max(range(len(self.piles)), key=lambda h: self.piles[h])
        return f"take 1 from {biggest + 1}"

    # hole: rule: the privileged hint for the player to move
    def hint(self, agent: str) -> str:
        total = reduce(xor, self.piles)
        if total == 0:
            return (
                "The nim-sum is 0: every move loses against perfect play; take one stone and hope."
            )
        return f"The nim-sum (XOR of heap sizes) is {total}; move so that it becomes 0."
