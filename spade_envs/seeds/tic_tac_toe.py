"""Tic-tac-toe from a seeded mid-game position where the player to move can force a win.

The start is made by random legal moves, retried until X (player_0, to move) has a
forced win that needs planning: no single move wins at once and at most half of X's
moves keep the win, so X must find the move that sets up a fork.
``best_move`` is memoised negamax that prefers the fastest win and the slowest loss.
"""

from __future__ import annotations

import re
from functools import cache
from typing import ClassVar

from spade_envs import IllegalMove, TextGame

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MOVE = re.compile(r"([abc]) ?([123])")


def _name(i: int) -> str:
    """Square index 0..8 as a coordinate: column letter a-c, then row number 1-3."""
    return "abc"[i % 3] + str(i // 3 + 1)


def _wins(board: str, mark: str) -> bool:
    return any(all(board[i] == mark for i in line) for line in LINES)


@cache
def _value(board: str, mark: str) -> int:
    """Negamax score for ``mark`` to move.

    1 + empties left after a win, negative for a loss, 0 for a draw.
    """
    other = "O" if mark == "X" else "X"
    best = None
    for i, square in enumerate(board):
        if square != ".":
            continue
        after = board[:i] + mark + board[i + 1 :]
        score = after.count(".") + 1 if _wins(after, mark) else -_value(after, other)
        best = score if best is None else max(best, score)
    return 0 if best is None else best  # a full board without a line is a draw


class TicTacToe(TextGame):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Tic-tac-toe on a 3x3 grid from a mid-game position. Players alternate placing their "
        "mark on an empty square, written as column letter then row number (e.g. 'b2'); "
        "three in a row, column or diagonal wins, a full board is a draw. player_0 (X) moves "
        "first and can force a win, usually by creating two threats at once (a fork)."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [9, 40]
    max_turns = 20
    # hole: most random opening moves before the puzzle starts (2, 4 or 6 are used) [2, 7]
    knobs: ClassVar[dict[str, int]] = {"max_opening_moves": 4}

    def _reset(self) -> None:
        self.marks = {"player_0": "X", "player_1": "O"}
        while True:
            board = ["."] * 9
            for k in range(2 * self.rng.randint(1, min(max(self.max_opening_moves // 2, 1), 3))):
                free = [i for i in range(9) if board[i] == "."]
                board[self.rng.choice(free)] = "XO"[k % 2]
            self.board = "".join(board)
            if _wins(self.board, "O") or any(self._completes(i, "X") for i in self._free()):
                continue  # already decided, or won in one move: no planning needed
            winning = sum(1 for score, _ in self._scores("player_0") if score > 0)
            if 0 < 2 * winning <= len(self._free()):  # a win exists, and most moves lose it
                return

    def _free(self) -> list[int]:
        return [i for i, square in enumerate(self.board) if square == "."]

    def _completes(self, i: int, mark: str) -> bool:
        return _wins(self.board[:i] + mark + self.board[i + 1 :], mark)

    def _render_board(self) -> str:
        rows = [f"{r + 1}   " + " | ".join(self.board[3 * r : 3 * r + 3]) for r in range(3)]
        return "    a   b   c\n" + "\n".join(rows)

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        return (
            "Tic-tac-toe, mid-game ('.' is empty; columns a-c, rows 1-3):\n"
            f"{self._render_board()}\n"
            f"You are {agent} ({self.marks[agent]}; {turn}). Three in a line wins. "
            "Move as \\boxed{b2}: column letter, then row number, of an empty square."
        )

    def _move(self, agent: str, action: str):
        found = MOVE.fullmatch(self.parse_move(action).strip(" ."))
        if not found:
            raise IllegalMove("write a square as column letter a-c then row 1-3, like b2")
        i = "abc".index(found.group(1)) + 3 * (int(found.group(2)) - 1)
        if self.board[i] != ".":
            raise IllegalMove(f"{_name(i)} is already taken")
        mark = self.marks[agent]
        self.board = self.board[:i] + mark + self.board[i + 1 :]
        if _wins(self.board, mark):
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        if "." not in self.board:
            return {a: 0.0 for a in self.agents}  # draw
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [_name(i) for i in self._free()]

    def _scores(self, agent: str) -> list[tuple[int, int]]:
        """(score for ``agent``, square) of every free square, ``agent`` to move."""
        mark = self.marks[agent]
        other = "O" if mark == "X" else "X"
        scores = []
        for i in self._free():
            after = self.board[:i] + mark + self.board[i + 1 :]
            won = _wins(after, mark)
            scores.append((after.count(".") + 1 if won else -_value(after, other), i))
        return scores

    def best_move(self, agent: str) -> str:
        scores = self._scores(agent)
        if not scores:
            return "a1"
        best = max(score for score, _ in scores)
        return _name(next(i for score, i in scores if score == best))

    def hint(self, agent: str) -> str:
        scores = self._scores(agent)
        winning = sum(1 for score, _ in scores if score > 0)
        if not winning:
            return (
                "Against perfect play you cannot win from here: "
                "block every threat and aim for a draw."
            )
        other = "O" if self.marks[agent] == "X" else "X"
        threat = any(self._completes(i, other) for i in self._free())
        return (
            f"You can force a win: {winning} of your {len(scores)} possible squares keep it. "
            + ("First block the opponent's open line. " if threat else "")
            + "Aim for a fork: one mark that makes two lines of two at once, "
            + "so only one can be blocked."
        )
