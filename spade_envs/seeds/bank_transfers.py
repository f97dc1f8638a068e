"""Move money between accounts until every balance hits its target, paying a fee per transfer.

Each transfer charges the sender a flat fee, so the total money drops by the fee every
time: the number of transfers the goal allows is fixed by the totals, and one wasted
transfer makes the targets unreachable (the episode then ends with reward 0).
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError, suggest

# hole: account names (at least 6 distinct, short words)
_ACCOUNTS = ["checking", "savings", "payroll", "reserve", "travel", "tuition", "taxes"]


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class BankTransfers(ToolEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Several bank accounts must reach given target balances. Read balances with "
        "balance(account) and move money with transfer(src, dst, amount); every transfer "
        "charges the sender a flat fee and moves at most a limit. The episode is won the "
        "moment every balance equals its target; too many transfers make that impossible."
    )
    # hole: turns allowed (balance reads plus transfers need up to 11) [11, 30]
    max_turns = 16
    # hole: accounts (2-6) and transfers the hidden plan uses (1-5) [1, 6]
    knobs: ClassVar[dict[str, int]] = {"accounts": 4, "transfers": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "2 <= accounts <= 6",
        "1 <= transfers <= 5",
        "accounts <= len(_ACCOUNTS)",
        "len(_ACCOUNTS) >= 6",
    )

    def _reset(self) -> str:
        count, wanted = max(2, min(self.accounts, 6)), max(1, min(self.transfers, 5))
        names = self.rng.sample(_ACCOUNTS, count)
        self.fee = self.rng.choice([1, 2, 3, 5])
        self.limit = self.rng.choice([80, 100, 150])
        self.balances = {name: self.rng.randint(60, 300) for name in names}
        # The targets come from a hidden plan: distinct pairs, never a pair and its reverse.
        pairs = [(a, b) for a in names for b in names if a != b]
        self.rng.shuffle(pairs)
        after = dict(self.balances)
        self.plan: list[tuple[str, str, int]] = []
        for src, dst in pairs:
            room = min(self.limit, after[src] - self.fee)
            reverse = any(s == dst and d == src for s, d, _ in self.plan)
            if len(self.plan) == wanted or room < 5 or reverse:
                continue
            amount = self.rng.randint(5, room)
            after[src] -= amount + self.fee
            after[dst] += amount
            self.plan.append((src, dst, amount))
        self.targets = after
        self.made = 0
        goals = ", ".join(f"{name} {value}" for name, value in self.targets.items())
        return (
            f"Accounts: {', '.join(names)}. Make every balance equal its target: {goals}. "
            f"Each transfer costs the sender a fee of {self.fee} (on top of the amount), "
            f"moves at most {self.limit}, and may not overdraw the sender. Use "
            "balance(account) and transfer(src, dst, amount); you win as soon as all "
            "balances match. <answer>done</answer> gives up and ends the episode."
        )

    def _account(self, name: str) -> str:
        if name not in self.balances:
            hint = suggest(name[:40], self.balances)
            raise ToolError(f"no account {name[:40]!r}.{hint} Accounts: {', '.join(self.balances)}")
        return name

    def tool_balance(self, account: str) -> str:
        """Show the balance of one account.

        Args:
            account: Account name, e.g. savings.
        """
        name = self._account(account)
        return f"{name}: {self.balances[name]} (target {self.targets[name]})"

    def tool_transfer(self, src: str, dst: str, amount: int) -> str:
        """Move money from one account to another; the sender also pays the fee.

        Args:
            src: Account that sends the money and pays the fee.
            dst: Account that receives the money.
            amount: Whole amount to move, from 1 to the per-transfer limit.
        """
        src, dst = self._account(src), self._account(dst)
        if src == dst:
            raise ToolError("src and dst must be different accounts")
        if not 1 <= amount <= self.limit:
            raise ToolError(f"amount must be between 1 and {self.limit}")
        if self.balances[src] < amount + self.fee:
            raise ToolError(
                f"{src} holds {self.balances[src]}: not enough for "
                f"{amount} plus the fee of {self.fee}"
            )
        self.balances[src] -= amount + self.fee
        self.balances[dst] += amount
        self.made += 1
        report = f"Moved {amount} from {src} to {dst} (fee {self.fee}); transfers: {self.made}."
        if self.balances == self.targets:
            self.end_episode(1.0, "Every balance matches its target. Goal reached!")
        elif sum(self.balances.values()) <= sum(self.targets.values()):
            self.end_episode(
                0.0,
                "The fees have eaten the slack: the targets can no longer "
                "all be met. Episode over.",
            )
        return report

    def _answer(self, answer: str):
        wrong = [name for name in self.balances if self.balances[name] != self.targets[name]]
        return f"Gave up; accounts off target: {', '.join(wrong)}.", 0.0, True

    # hole: rule: the privileged hint (never the whole plan)
    def hint(self) -> str:
        src, dst, amount = self.plan[0]
        return (
            f"The total shrinks by {self.fee} per transfer, so exactly {len(self.plan)} "
            f"transfers are needed. One working plan starts by sending {amount} from {src} "
            f"to {dst}."
        )

    def solution(self) -> list[str]:
        reads = [_call("balance", account=name) for name in self.balances]
        moves = [_call("transfer", src=s, dst=d, amount=a) for s, d, a in self.plan]
        return reads + moves
