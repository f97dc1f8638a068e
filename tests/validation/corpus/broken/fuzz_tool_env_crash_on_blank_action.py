# expect: fuzz
"""Stock-room lookup through tools; a logging pre-step reads the first line of the action."""

from __future__ import annotations

from spade_envs import ToolEnv, ToolError, answers_match

_ITEMS = ["bolts", "nuts", "washers", "hinges", "springs", "brackets", "rivets", "clamps"]


class StockRoom(ToolEnv):
    skill = "logic"
    description = (
        "A stock room has shelves of items. Use the tools to find which item has the "
        "lowest stock and answer with <answer>item</answer>."
    )
    max_turns = 8

    def _reset(self) -> str:
        items = self.rng.sample(_ITEMS, 5)
        counts = self.rng.sample(range(3, 90), 5)
        self.stock = dict(zip(items, counts))
        self.answer = min(self.stock, key=self.stock.get)
        self.log: list[str] = []
        return (
            "Which item in the stock room has the lowest stock? Use list_items and "
            "count(item), then reply <answer>item</answer>."
        )

    def tool_list_items(self) -> list[str]:
        """List the items kept in the stock room."""
        return sorted(self.stock)

    def tool_count(self, item: str) -> int:
        """How many units of an item are in stock.

        Args:
            item: Item name as listed by list_items.
        """
        if item not in self.stock:
            raise ToolError(f"no item {item!r}; call list_items to see the names")
        return self.stock[item]

    def _step(self, action: str):
        self.log.append(action.strip().splitlines()[0][:80])  # keep a short transcript
        return super()._step(action)

    def _answer(self, answer: str):
        if answers_match(answer, self.answer):
            return f"Correct: {self.answer}.", 1.0, True
        return "Wrong item.", 0.0, True

    def hint(self) -> str:
        return f"The lowest count is {self.stock[self.answer]}; find the item with that count."

    def solution(self) -> list[str]:
        calls = ['<tool_call>{"name": "list_items", "arguments": {}}</tool_call>']
        for item in sorted(self.stock):
            calls.append(f'<tool_call>{{"name": "count", "arguments": {{"item": "{item}"}}}}</tool_call>')
        return calls + [f"<answer>{self.answer}</answer>"]
