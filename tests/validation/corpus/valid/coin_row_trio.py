# expect: valid
"""Three players take coins from either end of a row; the biggest purse wins.

player_0 moves first, then player_1, then player_2, round and round. The seeded row
is chosen so that player_0 has a forced win against ANY behaviour of the other two:
the search below is "paranoid" (both opponents cooperate against player_0) and even
lets them pass (an illegal move forfeits the turn, which is a pass). Starts where
always taking the left coin, or always the right coin, wins are rejected, so
player_0 has to plan.
"""

from __future__ import annotations

from functools import lru_cache

from spade_envs import IllegalMove, TextGame

MOVES = ("take left", "take right")
# Verified eight-coin starts, used if 30 random rows in a row fail the tests below
# (rare; it keeps every reset fast).
FALLBACK_ROWS = (
    (9, 9, 6, 4, 8, 9, 8, 9), (2, 3, 4, 8, 6, 2, 1, 7), (3, 2, 1, 3, 7, 1, 1, 9),
    (9, 6, 4, 9, 8, 5, 7, 7), (9, 1, 7, 8, 4, 4, 9, 4), (5, 6, 4, 2, 1, 2, 2, 5),
)


@lru_cache(maxsize=64)
def _solver(coins: tuple[int, ...]):
    """A memoised test for one row: does player_0 win by force from a search state?

    A state is (l, r, turn, d1, d2): the coins left are coins[l..r], ``turn`` is the seat
    to move and d1/d2 are player_0's lead over player_1/player_2.
    """
    memo: dict[tuple[int, int, int, int, int], bool] = {}

    def forced(l: int, r: int, turn: int, d1: int, d2: int) -> bool:
        key = (l, r, turn, d1, d2)
        if key in memo:
            return memo[key]
        if l > r:
            result = d1 > 0 and d2 > 0
        elif turn == 0:
            result = forced(l + 1, r, 1, d1 + coins[l], d2 + coins[l]) or forced(
                l, r - 1, 1, d1 + coins[r], d2 + coins[r]
            )
        elif turn == 1:  # each opponent may take either end, or pass
            result = (
                forced(l + 1, r, 2, d1 - coins[l], d2)
                and forced(l, r - 1, 2, d1 - coins[r], d2)
                and forced(l, r, 2, d1, d2)
            )
        else:
            result = (
                forced(l + 1, r, 0, d1, d2 - coins[l])
                and forced(l, r - 1, 0, d1, d2 - coins[r])
                and forced(l, r, 0, d1, d2)
            )
        memo[key] = result
        return result

    return forced


def _forced(coins: tuple[int, ...], l: int, r: int, turn: int, d1: int, d2: int) -> bool:
    return _solver(coins)(l, r, turn, d1, d2)


class CoinRowTrio(TextGame):
    skill = "planning"
    description = (
        "Three players share a row of coins. In turn (player_0, player_1, player_2, ...) "
        "each takes the coin at the left or the right end of the row ('take left' / 'take "
        "right'). When the row is empty, the player with the strictly largest total wins. "
        "player_0 can force a win from the start, whatever the others do, but greedy play "
        "is not enough."
    )
    num_players = 3
    max_turns = 36
    knobs = {"coins": 8}

    def _reset(self) -> None:
        count = max(5, min(self.coins, 10))
        tries = 0
        while True:
            tries += 1
            if tries > 30 and count == 8:
                self.row = self.rng.choice(FALLBACK_ROWS)
            else:
                self.row = tuple(self.rng.randint(1, 9) for _ in range(count))
            self.left, self.right = 0, count - 1
            self.totals = {a: 0 for a in self.possible_agents}
            self.seat = 0
            if not _forced(self.row, 0, count - 1, 0, 0, 0):
                continue
            if not any(self._fixed_policy_wins(m) for m in MOVES):
                return

    def _fixed_policy_wins(self, move: str) -> bool:
        """Would player_0 win by always playing ``move`` against best_move opponents?"""
        l, r, totals, seat = self.left, self.right, dict(self.totals), self.seat
        while self.left <= self.right:
            agent = self.possible_agents[self.seat]
            self._take(agent, move if self.seat == 0 else self.best_move(agent))
        won = self._winner() == "player_0"
        self.left, self.right, self.totals, self.seat = l, r, totals, seat
        return won

    # ----- rules ------------------------------------------------------------------------
    def _take(self, agent: str, move: str) -> None:
        if move == "take left":
            coin, self.left = self.row[self.left], self.left + 1
        else:
            coin, self.right = self.row[self.right], self.right - 1
        self.totals[agent] += coin
        self.seat = (self.possible_agents.index(agent) + 1) % 3

    def _winner(self) -> str | None:
        best = max(self.totals.values())
        leaders = [a for a, t in self.totals.items() if t == best]
        return leaders[0] if len(leaders) == 1 else None

    def _move(self, agent: str, action: str):
        move = self.parse_move(action).strip(" .!")
        move = {"left": "take left", "right": "take right"}.get(move, move)
        if move not in MOVES:
            self.seat = (self.possible_agents.index(agent) + 1) % 3
            raise IllegalMove("write 'take left' or 'take right'")
        self._take(agent, move)
        if self.left > self.right:
            winner = self._winner()
            return {a: (1.0 if a == winner else 0.0) for a in self.agents}
        return None

    def _observe(self, agent: str) -> str:
        row = " ".join(str(c) for c in self.row[self.left : self.right + 1]) or "(empty)"
        purses = ", ".join(f"{a}: {t}" for a, t in self.totals.items())
        turn = "your move" if agent == self.agent_selection else f"{self.agent_selection} to move"
        if self.left > self.right:
            turn = "the row is empty: game over"
        return (
            f"Coin row (left to right): {row}\nPurses: {purses}\nYou are {agent} ({turn}). "
            "Take the coin at either end with \\boxed{take left} or \\boxed{take right}. "
            "Largest purse at the end wins."
        )

    # ----- reference play ---------------------------------------------------------------
    def legal_moves(self, agent: str) -> list[str]:
        return list(MOVES) if self.left <= self.right else []

    def _after(self, move: str) -> tuple:
        """Search state after the player to move plays ``move``."""
        l, r = self.left, self.right
        coin = self.row[l] if move == "take left" else self.row[r]
        l, r = (l + 1, r) if move == "take left" else (l, r - 1)
        d1 = self.totals["player_0"] - self.totals["player_1"]
        d2 = self.totals["player_0"] - self.totals["player_2"]
        if self.seat == 0:
            d1, d2 = d1 + coin, d2 + coin
        elif self.seat == 1:
            d1 -= coin
        else:
            d2 -= coin
        return self.row, l, r, (self.seat + 1) % 3, d1, d2

    def best_move(self, agent: str) -> str:
        if self.left > self.right:
            return MOVES[0]
        bigger = MOVES[0] if self.row[self.left] >= self.row[self.right] else MOVES[1]
        ordered = [bigger] + [m for m in MOVES if m != bigger]
        if agent == "player_0":
            keep = [m for m in ordered if _forced(*self._after(m))]
            return keep[0] if keep else bigger
        spoil = [m for m in ordered if not _forced(*self._after(m))]
        return spoil[0] if spoil else bigger

    def hint(self, agent: str) -> str:
        if agent == "player_0" and self.seat == 0 and self.left <= self.right:
            good = [m for m in MOVES if _forced(*self._after(m))]
            if len(good) == 2:
                return "Either end keeps your guaranteed win here."
            if good:
                return (
                    "Only one end keeps your guaranteed win. Look two moves ahead: whatever "
                    "you leave exposed, the next two players can grab; grabbing the larger "
                    "coin now is not always right."
                )
        return "Count what each end exposes: after you move, the next players take the ends."
