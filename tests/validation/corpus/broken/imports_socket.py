# expect: imports
"""Decide whether an IPv4 address is inside a subnet; socket.inet_aton parses addresses."""

from __future__ import annotations

import socket

from spade_envs import TextEnv, boxed, extract_answer


class SubnetCheck(TextEnv):
    skill = "code"
    description = (
        "Given an IPv4 subnet in CIDR notation and an address, reply \\boxed{yes} if the "
        "address is inside the subnet, otherwise \\boxed{no}. One answer."
    )
    max_turns = 1

    def _reset(self) -> str:
        prefix = self.rng.choice([8, 16, 20, 24, 28])
        base = [10, self.rng.randint(0, 255), self.rng.randint(0, 255), 0]
        self.subnet = f"{'.'.join(map(str, base))}/{prefix}"
        address = list(base)
        address[self.rng.choice([1, 2, 3])] = self.rng.randint(0, 255)
        self.address = ".".join(map(str, address))
        mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
        net = int.from_bytes(socket.inet_aton(".".join(map(str, base))), "big")
        ip = int.from_bytes(socket.inet_aton(self.address), "big")
        self.answer = "yes" if (ip & mask) == (net & mask) else "no"
        return f"Is {self.address} inside {self.subnet}? Reply \\boxed{{yes}} or \\boxed{{no}}."

    def _step(self, action: str):
        if extract_answer(action).strip().lower() == self.answer:
            return "Correct.", 1.0, True
        return "Wrong.", 0.0, True

    def hint(self) -> str:
        return "Compare only the first prefix-length bits of the two addresses."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
