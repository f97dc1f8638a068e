# expect: solution
"""Unlock a vault through tools; the solution's tool call has one closing brace too few."""

from __future__ import annotations

from spade_envs import ToolEnv, ToolError


class VaultConsole(ToolEnv):
    skill = "code"
    description = (
        "A vault console has tools to read the audit log and to submit a PIN. The PIN is "
        "the sum of the three amounts flagged in the log. Submit the right PIN to open it."
    )
    max_turns = 6

    def _reset(self) -> str:
        self.entries = []
        for i in range(8):
            self.entries.append(
                {"id": i + 1, "amount": self.rng.randint(100, 999), "flagged": False}
            )
        for entry in self.rng.sample(self.entries, 3):
            entry["flagged"] = True
        self.pin = sum(e["amount"] for e in self.entries if e["flagged"])
        return (
            "Open the vault. Read the audit log with read_log, add up the amounts of the "
            "flagged entries, and call submit_pin(pin) with that sum."
        )

    def tool_read_log(self) -> list[dict]:
        """Read the vault's audit log (id, amount, flagged)."""
        return [dict(e) for e in self.entries]

    def tool_submit_pin(self, pin: int) -> str:
        """Try a PIN on the vault door. A wrong PIN locks the vault for good.

        Args:
            pin: The PIN to try.
        """
        if pin < 0:
            raise ToolError("a PIN is a non-negative whole number")
        if pin == self.pin:
            self.end_episode(1.0, "The vault opens.")
            return "PIN accepted."
        self.end_episode(0.0, "The vault locks for good.")
        return "PIN rejected."

    def hint(self) -> str:
        ids = [e["id"] for e in self.entries if e["flagged"]]
        return f"The flagged entries are ids {ids[0]}, {ids[1]} and {ids[2]}."

    def solution(self) -> list[str]:
        return [
            '<tool_call>{"name": "read_log", "arguments": {}}</tool_call>',
            f'<tool_call>{{"name": "submit_pin", "arguments": {{"pin": {self.pin}}}</tool_call>',
        ]
