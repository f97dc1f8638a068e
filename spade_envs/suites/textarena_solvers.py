"""Reference play for TextArena games, read from the game's own state.

A one-player game's solver returns the actions that win from the state right after
reset (the validator replays them in a fresh worker); a two-player game's player returns
a best move and the legal moves of the position. Games not listed here have neither, and
their versions are stored unproven. Each reads only what TextArena keeps (the secret
code, the full Sudoku grid, the board): nothing here changes the game.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from functools import reduce
from operator import xor
from typing import Any

__all__ = ["PLAYERS", "SOLVERS"]


def _guess_the_number(env: Any) -> list[str]:
    return [f"[{env.game_number}]"]


def _mastermind(env: Any) -> list[str]:
    return ["[" + " ".join(str(d) for d in env.state.game_state["secret_code"]) + "]"]


def _three_card_monte(env: Any) -> list[str]:
    return [f"[{env.ball_pos}]"]


def _tower_of_hanoi(env: Any) -> list[str]:
    moves: list[str] = []

    def shift(disks: int, source: str, target: str, spare: str) -> None:
        if disks:
            shift(disks - 1, source, spare, target)
            moves.append(f"[{source} {target}]")
            shift(disks - 1, spare, target, source)

    shift(len(env.state.game_state["towers"]["A"]), "A", "C", "B")
    return moves


def _sudoku(env: Any) -> list[str]:
    board = env.state.game_state["board"]
    return [
        f"[{r + 1} {c + 1} {env.full_grid[r][c]}]"
        for r in range(9)
        for c in range(9)
        if board[r][c] == 0
    ]


def _frozen_lake(env: Any) -> list[str]:
    game = env.state.game_state
    grid, start = game["grid"], tuple(game["player_pos"])
    steps = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
    paths: dict[tuple[int, int], list[str]] = {start: []}
    queue = collections.deque([start])
    while queue:  # breadth first: the shortest path around the holes
        r, c = queue.popleft()
        if grid[r][c] == "G":
            return paths[(r, c)]
        for name, (dr, dc) in steps.items():
            nr, nc = r + dr, c + dc
            inside = 0 <= nr < len(grid) and 0 <= nc < len(grid[0])
            if inside and (nr, nc) not in paths and grid[nr][nc] != "H":
                paths[(nr, nc)] = [*paths[(r, c)], f"[{name}]"]
                queue.append((nr, nc))
    raise ValueError("the goal cannot be reached from the start")


def _nim_best(env: Any) -> str:
    piles = env.state.game_state["piles"]
    total = reduce(xor, piles, 0)
    for index, pile in enumerate(piles):
        if total and pile ^ total < pile:  # leave a nim-sum of zero
            return f"[{index} {pile - (pile ^ total)}]"
    largest = max(range(len(piles)), key=lambda i: piles[i])
    return f"[{largest} 1]"


def _nim_moves(env: Any) -> list[str]:
    piles = env.state.game_state["piles"]
    return [f"[{i} {n}]" for i, pile in enumerate(piles) for n in range(1, pile + 1)]


#: One-player games whose winning line a solver reads from the state after reset.
SOLVERS: dict[str, Callable[[Any], list[str]]] = {
    "GuessTheNumber": _guess_the_number,
    "Mastermind": _mastermind,
    "ThreeCardMonte": _three_card_monte,
    "TowerOfHanoi": _tower_of_hanoi,
    "Sudoku": _sudoku,
    "FrozenLake": _frozen_lake,
}
#: Two-player games with a perfect player here: ``(best_move, legal_moves)`` of the state.
PLAYERS: dict[str, tuple[Callable[[Any], str], Callable[[Any], list[str]]]] = {
    "Nim": (_nim_best, _nim_moves),
}
