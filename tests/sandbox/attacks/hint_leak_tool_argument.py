# attack: hint-leak expect: rejected [hint_leak]
"""Hint leak past the check: the answer is the argument of a final tool call.

secret_parts() treats a final action that is a tool call as a move, never an answer,
so nothing of it is compared with the hint. Here the only way to win is the tool call
open_vault(code=<hidden code>), and the hint says the code outright; hinted plays are
won by copying it into the call.
"""

from spade_envs import ToolEnv, ToolError

import json


class VaultTool(ToolEnv):
    skill = "logic"
    description = "Open the vault with the open_vault tool and the hidden four-digit code."
    max_turns = 6

    def _reset(self):
        self.secret = str(self.rng.randint(1000, 9999))
        return "A vault with a four-digit code. Call open_vault(code) to try a code."

    def tool_open_vault(self, code: str) -> str:
        """Try a code on the vault.

        Args:
            code: The four-digit code to try.
        """
        if str(code).strip() == self.secret:
            self.end_episode(1.0, "The vault opens.")
            return "Click."
        raise ToolError("wrong code")

    def hint(self):
        return f"The code is {self.secret}."

    def solution(self):
        call = {"name": "open_vault", "arguments": {"code": self.secret}}
        return ["<tool_call>" + json.dumps(call) + "</tool_call>"]
