# expect: determinism
"""Find the finishing order of four runners from 'how many are in place' feedback."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_RUNNERS = ["Ada", "Ben", "Cyd", "Dot"]
_RECENT: list[tuple[str, ...]] = []  # orders used lately, so the agent sees variety


class RaceOrder(TextEnv):
    skill = "logic"
    description = (
        "Four runners (Ada, Ben, Cyd, Dot) finished a race in a hidden order. Propose an "
        "order as \\boxed{Ada, Ben, Cyd, Dot}; the reply says how many runners are in their "
        "correct place. Find the order within ten proposals."
    )
    max_turns = 10

    def _reset(self) -> str:
        while True:
            order = tuple(self.rng.sample(_RUNNERS, len(_RUNNERS)))
            if order not in _RECENT:
                break
        _RECENT.append(order)
        del _RECENT[:-12]
        self.order = order
        return (
            "Runners: Ada, Ben, Cyd, Dot. Propose the finishing order, first to last, as "
            "\\boxed{name, name, name, name}. You have 10 proposals."
        )

    def _step(self, action: str):
        names = [n.strip().capitalize() for n in extract_answer(action).split(",")]
        left = self.max_turns - self.turn
        if sorted(names) != sorted(_RUNNERS):
            return f"Name each runner once, comma-separated. Proposals left: {left}.", 0.0, False
        if tuple(names) == self.order:
            return "Correct, that is the finishing order.", 1.0, True
        placed = sum(a == b for a, b in zip(names, self.order))
        if left == 0:
            return (
                f"{placed} in place. No proposals left: it was {', '.join(self.order)}.",
                0.0,
                False,
            )
        return f"{placed} of 4 in their correct place. Proposals left: {left}.", 0.0, False

    def hint(self) -> str:
        return f"{self.order[0]} beat {self.order[3]}, and {self.order[1]} finished second."

    def solution(self) -> list[str]:
        return [boxed(", ".join(self.order))]
