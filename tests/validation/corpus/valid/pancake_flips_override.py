# expect: valid
"""Sort a stack of pancakes by prefix reversals, within the optimal number of flips.

Written against the raw Gymnasium API: ``reset`` and ``step`` are overridden directly
(no ``_reset``/``_step`` hooks). ``reset`` seeds ``np_random`` through ``gymnasium.Env``
(``super(TextEnv, self).reset``) and draws the stack from ``self.np_random``; ``step``
does its own turn counting and truncation.
"""

from __future__ import annotations

from collections import deque

from spade_envs import TextEnv, extract_answer


def _flip(stack: tuple[int, ...], k: int) -> tuple[int, ...]:
    return tuple(reversed(stack[:k])) + stack[k:]


def _shortest_flips(stack: tuple[int, ...]) -> list[int]:
    """Breadth-first search over stacks (n <= 6, so at most 720 states)."""
    goal = tuple(sorted(stack))
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], int] | None] = {stack: None}
    queue = deque([stack])
    while queue:
        here = queue.popleft()
        if here == goal:
            break
        for k in range(2, len(here) + 1):
            nxt = _flip(here, k)
            if nxt not in parent:
                parent[nxt] = (here, k)
                queue.append(nxt)
    path: list[int] = []
    node = goal
    while parent[node] is not None:
        prev, k = parent[node]
        path.append(k)
        node = prev
    return path[::-1]


class PancakeFlipsOverride(TextEnv):
    skill = "planning"
    description = (
        "A stack of pancakes of different sizes lies on a plate (listed top to bottom). The "
        "only operation is to slide a spatula under the k-th pancake from the top and flip "
        "the top k over. Sort the stack so the smallest is on top and the largest at the "
        "bottom, using no more flips than the fewest possible. Each action is one flip, "
        "written \\boxed{k}."
    )
    max_turns = 12
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def reset(self, *, seed=None, options=None):
        # Seed np_random the Gymnasium way; our own bookkeeping follows.
        super(TextEnv, self).reset(seed=seed)
        self.options = dict(options or {})
        size = int(self.np_random.integers(4, 7))
        while True:
            order = [int(x) + 1 for x in self.np_random.permutation(size)]
            self.stack = tuple(order)
            self.plan = _shortest_flips(self.stack)
            if len(self.plan) >= 2:
                break
        self.budget = len(self.plan)
        self.turn = 0
        self.flips = 0
        self.finished = False
        observation = (
            f"Pancakes, top to bottom: {self._show()}. Sort them so that 1 is on top and "
            f"{size} at the bottom. The fewest flips that can do it is {self.budget}; you "
            f"have exactly that many. Flip the top k pancakes with \\boxed{{k}} (2 <= k <= "
            f"{size})."
        )
        self._last_observation = observation
        return observation, {"turn": 0, "flips_allowed": self.budget}

    def _show(self) -> str:
        return " ".join(str(p) for p in self.stack)

    def step(self, action):
        if not isinstance(action, str):
            action = "" if action is None else str(action)
        if self.finished:
            return self._last_observation, 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        reward, terminated = 0.0, False
        text = extract_answer(action)[:20].strip()
        if not (text.isascii() and text.isdigit()) or not 2 <= int(text) <= len(self.stack):
            observation = (
                f"Not a flip. Answer \\boxed{{k}} with 2 <= k <= {len(self.stack)}. "
                f"Stack: {self._show()}."
            )
        else:
            self.stack = _flip(self.stack, int(text))
            self.flips += 1
            if self.stack == tuple(sorted(self.stack)):
                observation = f"Sorted in {self.flips} flips: {self._show()}. Well done!"
                reward, terminated = 1.0, True
            elif self.flips >= self.budget:
                observation = f"Out of flips with the stack at {self._show()}. Not sorted."
                terminated = True
            else:
                left = self.budget - self.flips
                observation = f"Flipped the top {text}. Stack: {self._show()}. Flips left: {left}."
        truncated = not terminated and self.turn >= self.max_turns
        self.finished = terminated or truncated
        self._last_observation = observation
        info = {"turn": self.turn, "flips": self.flips}
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        ordinals = ["top", "second", "third", "fourth", "fifth", "sixth"]
        where = ordinals[self.stack.index(len(self.stack))]
        return (
            f"The largest pancake is the {where} one from the top. A good first idea: bring the "
            "largest unsorted pancake to the top, then flip it down to its final place; the "
            "optimal plan sometimes saves a flip by fixing two pancakes at once."
        )

    def solution(self) -> list[str]:
        return [f"\\boxed{{{k}}}" for k in self.plan]
