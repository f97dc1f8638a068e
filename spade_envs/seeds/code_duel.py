"""Code duel: two players extend one program; whoever makes ``x`` equal the target wins.

The program starts with ``x = <start>``. Players alternately append one instruction from
a small seeded instruction set (always including ``x += 1``). An instruction that would
push ``x`` past the target is illegal. The observation shows the program but not the
value of ``x``: each turn the player must trace the code. Every instruction strictly
increases ``x``, so a game lasts at most ``target - start`` moves. ``best_move`` reads a
table, filled from the target downwards, of how many moves remain from each value of ``x``
under perfect play: an odd count means the player to move wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from spade_envs import IllegalMove, TextGame

# Each instruction with what it does; all strictly increase any x >= 1.
INSTRUCTIONS: tuple[tuple[str, Callable[[int], int]], ...] = (
    ("x += 1", lambda x: x + 1),
    ("x += 2", lambda x: x + 2),
    ("x += 4", lambda x: x + 4),
    ("x *= 2", lambda x: x * 2),
    ("x *= 3", lambda x: x * 3),
    ("x = 2 * x + 1", lambda x: 2 * x + 1),
    ("x += x % 3 + 1", lambda x: x + x % 3 + 1),
    ("x += x // 4 + 1", lambda x: x + x // 4 + 1),
)


def _compact(code: str) -> str:
    return code.replace(" ", "").strip(".;`")


class CodeDuel(TextGame):
    skill = "code"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Code duel: a shared Python program starts with 'x = <start>'. Players alternately "
        "append one instruction from a small allowed set (such as 'x *= 2' or 'x += x % 3 + 1'); "
        "an instruction that would make x exceed the target is illegal. Whoever makes x "
        "exactly equal to the target wins. The current value of x is not shown: trace the "
        "program. The first player can force a win."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [50, 150]
    max_turns = 60
    # hole: largest target (20-50) and instructions besides x += 1 (1-7) [1, 50]
    knobs: ClassVar[dict[str, int]] = {"max_target": 40, "extra_instructions": 2}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("20 <= max_target <= 50", "1 <= extra_instructions <= 7")

    def _reset(self) -> None:
        extra = min(max(self.extra_instructions, 1), len(INSTRUCTIONS) - 1)
        while True:
            self.start = self.rng.randint(1, 5)
            self.target = self.rng.randint(20, min(max(self.max_target, 20), 50))
            chosen = sorted(self.rng.sample(range(1, len(INSTRUCTIONS)), extra))
            self.ops = [INSTRUCTIONS[0]] + [INSTRUCTIONS[i] for i in chosen]
            self.left = self._solve()
            after = [self.left[r] % 2 for r in self._results(self.start)]
            # Won, a careless move loses, and no single instruction repeated wins.
            if self.left[self.start] % 2 and any(after) and not self._repeating_wins():
                break
        self.x = self.start
        self.program = [(f"x = {self.start}", "start")]

    def _solve(self) -> list[int]:
        """left[v]: moves still to come from x == v under perfect play.

        The winner hurries and the loser stalls. Reaching the target ends the game, so
        left[target] == 0; the player to move wins exactly when left[v] is odd.
        """
        left = [0] * (self.target + 1)
        for v in range(self.target - 1, 0, -1):  # every instruction increases x
            after = [left[r] for r in self._results(v)]
            winning = [m for m in after if m % 2 == 0]
            left[v] = 1 + (min(winning) if winning else max(after))
        return left

    def _repeating_wins(self) -> bool:
        """Whether playing one instruction every turn beats the best opponent from the start
        (such a game needs no tracing at all)."""
        for _, op in self.ops:
            self.x, mover = self.start, 0
            for _ in range(self.max_turns):
                if mover == 0 and op(self.x) <= self.target:
                    self.x = op(self.x)
                elif mover == 1:
                    text = self.best_move("")
                    self.x = next(o for t, o in self.ops if t == text)(self.x)
                if self.x == self.target:
                    if mover == 0:
                        return True
                    break
                mover = 1 - mover
        return False

    def _results(self, v: int) -> list[int]:
        """Values of x that the legal instructions make from x == v."""
        return [op(v) for _, op in self.ops if op(v) <= self.target]

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        code = "\n".join(f"{line:<18}# {who}" for line, who in self.program)
        allowed = " | ".join(text for text, _ in self.ops)
        return (
            f"Code duel. Target: x == {self.target}. Program so far:\n{code}\n"
            f"Allowed instructions: {allowed}. You are {agent} ({turn}). Append one "
            "instruction; it must not make x exceed the target, and whoever makes x equal "
            "the target wins. Move as \\boxed{x += 1} (one allowed instruction)."
        )

    def _move(self, agent: str, action: str):
        move = _compact(self.parse_move(action))
        found = [(text, op) for text, op in self.ops if _compact(text) == move]
        if not found:
            raise IllegalMove("append exactly one of the allowed instructions")
        text, op = found[0]
        if op(self.x) > self.target:
            raise IllegalMove(f"'{text}' would make x exceed the target {self.target}")
        self.x = op(self.x)
        self.program.append((text, agent))
        if self.x == self.target:
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [text for text, op in self.ops if op(self.x) <= self.target]

    def best_move(self, agent: str) -> str:
        legal = [
            (self.left[op(self.x)], text) for text, op in self.ops if op(self.x) <= self.target
        ]
        if not legal:
            return "x += 1"
        winning = [move for move in legal if move[0] % 2 == 0]
        if winning:  # the quickest win
            return min(winning, key=lambda move: move[0])[1]
        return max(legal, key=lambda move: move[0])[1]  # a lost game: stall

    # hole: rule: the privileged hint for the player to move
    def hint(self, agent: str) -> str:
        lost = [str(v) for v in range(self.x + 1, self.target) if self.left[v] % 2 == 0]
        return (
            f"Tracing the program, x is now {self.x}. Values that lose for the player to "
            f"move: {', '.join(lost) or 'none left'}. Leave x at one of them, or hit the "
            "target directly."
        )
