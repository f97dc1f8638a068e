"""A subtraction game: take an allowed number of stones from one pile; the last to move wins.

Each game seeds a pile size and a set of three allowed takes (e.g. 1, 3 or 4). A pile is
won for the player to move when some allowed take leaves a lost pile; a pile too small for
any take is lost. Dynamic programming over pile sizes counts the moves left under perfect
play, which also lets the winner hurry and the loser stall. The start is seeded until the
pile is won for player_0 (who moves first) but some take would throw the win away.
"""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import IllegalMove, TextGame

MOVE = re.compile(r"(?:take ?)?([0-9]{1,3})(?: stones?)?")


def _moves_left(size: int, takes: list[int]) -> list[int]:
    """left[n]: moves still to come from a pile of n when both sides play perfectly.

    The winner hurries and the loser stalls. A pile is won for the player to move
    exactly when left[n] is odd: that player then makes the last move.
    """
    left = [0] * (size + 1)
    for n in range(size + 1):
        after = [left[n - t] for t in takes if t <= n]
        winning = [m for m in after if m % 2 == 0]  # leave an even count: the opponent loses
        if winning:
            left[n] = 1 + min(winning)
        elif after:
            left[n] = 1 + max(after)
    return left


class SubtractionGame(TextGame):
    skill = "math"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A subtraction game: one pile of stones and a fixed set of allowed takes, e.g. "
        "{1, 3, 4}. Players alternate removing exactly one allowed number of stones, written "
        "'take K'. A player who cannot move (the pile is smaller than every allowed take) "
        "loses, so the last player to move wins. The first player can force a win: work out "
        "which pile sizes are lost for the player to move, and always leave one."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [40, 150]
    max_turns = 60
    # hole: largest pile (10-40, drawn from half of it up) and largest allowed take (3-12) [3, 40]
    knobs: ClassVar[dict[str, int]] = {"max_pile": 30, "largest_take": 7}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("10 <= max_pile <= 40", "3 <= largest_take <= 12")

    def _reset(self) -> None:
        largest = min(max(self.largest_take, 3), 12)
        top = min(max(self.max_pile, 10), 40)
        while True:
            self.takes = sorted(self.rng.sample(range(1, largest + 1), 3))
            self.pile = self.rng.randint(top // 2, top)
            self.left = _moves_left(self.pile, self.takes)
            after = [self.left[self.pile - t] % 2 for t in self.takes if t <= self.pile]
            if self.left[self.pile] % 2 and any(after):  # won, and a careless take loses
                return

    def _rules(self) -> str:
        return ", ".join(str(t) for t in self.takes[:-1]) + f" or {self.takes[-1]}"

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        return (
            f"Subtraction game. Pile: {self.pile} stones. Allowed takes: {self._rules()} stones. "
            f"You are {agent} ({turn}). A player who cannot take an allowed amount loses "
            "(the last player to move wins). Move as \\boxed{take K}."
        )

    def _move(self, agent: str, action: str):
        found = MOVE.fullmatch(self.parse_move(action).strip(" ."))
        if not found:
            raise IllegalMove("write 'take K' with K one of the allowed amounts")
        k = int(found.group(1))
        if k not in self.takes:
            raise IllegalMove(f"you may only take {self._rules()} stones")
        if k > self.pile:
            raise IllegalMove(f"the pile has only {self.pile} stones")
        self.pile -= k
        if self.pile < self.takes[0]:  # the next player cannot move
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [f"take {t}" for t in self.takes if t <= self.pile]

    def best_move(self, agent: str) -> str:
        legal = [t for t in self.takes if t <= self.pile]
        if not legal:
            return f"take {self.takes[0]}"
        winning = [t for t in legal if self.left[self.pile - t] % 2 == 0]
        if winning:  # the quickest win
            return f"take {min(winning, key=lambda t: self.left[self.pile - t])}"
        return f"take {max(legal, key=lambda t: self.left[self.pile - t])}"  # stall a lost game

    # hole: rule: the privileged hint for the player to move
    def hint(self, agent: str) -> str:
        lost = [str(n) for n in range(self.pile + 1) if self.left[n] % 2 == 0]
        if self.left[self.pile] % 2:
            return (
                "Pile sizes (up to the current one) lost for the player to move: "
                f"{', '.join(lost)}. Always leave your opponent one of these."
            )
        return "This pile is lost against perfect play: every take leaves a winning pile."
