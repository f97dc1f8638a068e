# expect: hint_leak
"""Find which employee approved an order through tools; the hint gives the name away."""

from __future__ import annotations

from spade_envs import ToolEnv, ToolError, answers_match

_NAMES = ["Priya", "Tomasz", "Chidi", "Ingrid", "Mateo", "Yuki", "Amara", "Lars"]


class OrderApproval(ToolEnv):
    skill = "logic"
    description = (
        "An order database records who approved each order. Use the tools to find who "
        "approved the largest order and answer with <answer>name</answer>."
    )
    max_turns = 6

    def _reset(self) -> str:
        names = self.rng.sample(_NAMES, 4)
        totals = self.rng.sample(range(200, 9000), 6)
        self.orders = [
            {"order": 100 + i, "total": totals[i], "approver": self.rng.choice(names)}
            for i in range(6)
        ]
        self.biggest = max(self.orders, key=lambda o: o["total"])
        return (
            "Who approved the largest order (by total)? Use list_orders and approver(order), "
            "then answer <answer>name</answer>."
        )

    def tool_list_orders(self) -> list[dict]:
        """List order numbers and totals."""
        return [{"order": o["order"], "total": o["total"]} for o in self.orders]

    def tool_approver(self, order: int) -> str:
        """Who approved an order.

        Args:
            order: The order number.
        """
        for o in self.orders:
            if o["order"] == order:
                return o["approver"]
        raise ToolError(f"no order {order}; call list_orders for the numbers")

    def _answer(self, answer: str):
        if answers_match(answer, self.biggest["approver"]):
            return "Correct.", 1.0, True
        return "Wrong person.", 0.0, True

    def hint(self) -> str:
        o = self.biggest
        return f"Order {o['order']} (total {o['total']}) is the largest; {o['approver']} signed it off."

    def solution(self) -> list[str]:
        return [
            '<tool_call>{"name": "list_orders", "arguments": {}}</tool_call>',
            f'<tool_call>{{"name": "approver", "arguments": {{"order": {self.biggest["order"]}}}}}</tool_call>',
            f"<answer>{self.biggest['approver']}</answer>",
        ]
