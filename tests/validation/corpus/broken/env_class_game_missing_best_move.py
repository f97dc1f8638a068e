# expect: env_class
"""A take-away game (1-3 stones per move) whose class never defines best_move()."""

from __future__ import annotations

from spade_envs import IllegalMove, TextGame


class TakeAway(TextGame):
    skill = "math"
    description = (
        "A single pile of stones. Players alternate taking 1, 2 or 3 stones; whoever takes "
        "the last stone wins. The first player can force a win: leave a multiple of 4."
    )
    num_players = 2
    max_turns = 40

    def _reset(self) -> None:
        while True:
            self.pile = self.rng.randint(9, 30)
            if self.pile % 4:
                break

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        return (
            f"Pile: {self.pile} stones. You are {agent} ({turn}). Take 1, 2 or 3 stones with "
            "\\boxed{k}; taking the last stone wins."
        )

    def _move(self, agent: str, action: str):
        move = self.parse_move(action)
        if move not in ("1", "2", "3"):
            raise IllegalMove("take 1, 2 or 3 stones")
        k = int(move)
        if k > self.pile:
            raise IllegalMove(f"only {self.pile} stones are left")
        self.pile -= k
        if self.pile == 0:
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [str(k) for k in (1, 2, 3) if k <= self.pile]

    def hint(self, agent: str) -> str:
        return f"Leave your opponent a multiple of 4 stones; the pile has {self.pile}."
