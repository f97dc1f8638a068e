"""Predict the final top of stack of a tiny stack-machine program that contains a loop.

The agent may run the program for its first few instructions ("step N") to check its
reading of the instruction set, a limited number of times, before answering.
"""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

_INT = re.compile(r"[+-]?[0-9]{1,12}")
_STEP = re.compile(r"\bstep\s+([0-9]{1,4})\b", re.IGNORECASE)
_BINARY = {"ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b}
# Loop bodies act on the accumulator (top of stack while the counter sits below it).
_BODIES = {
    "adds {k}": [("PUSH", "k"), ("ADD", None)],
    "subtracts {k}": [("PUSH", "k"), ("SUB", None)],
    "multiplies it by {k}": [("PUSH", "k"), ("MUL", None)],
    "doubles it": [("DUP", None), ("ADD", None)],
}


def _execute(program: list[tuple], limit: int = 1000) -> list[list[int]]:
    """Run ``program``; return the stack after each executed instruction."""
    stack, pc, trace = [], 0, []
    while 0 <= pc < len(program) and len(trace) < limit:
        op, arg = program[pc]
        pc += 1
        if op == "PUSH":
            stack.append(arg)
        elif op == "POP":
            stack.pop()
        elif op == "DUP":
            stack.append(stack[-1])
        elif op == "SWAP":
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif op in _BINARY:
            b, a = stack.pop(), stack.pop()
            stack.append(_BINARY[op](a, b))
        elif op == "JZ":
            if stack.pop() == 0:
                pc = arg
        elif op == "JMP":
            pc = arg
        trace.append(list(stack))
    return trace


class StackMachine(TextEnv):
    skill = "code"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Read a short stack-machine program (PUSH, POP, ADD, SUB, MUL, DUP, SWAP, JZ, JMP) "
        "with a counting loop and predict the number on top of the stack when it halts. "
        "The agent may run the first few instructions ('step N') a limited number of times."
    )
    # hole: turns allowed: peeks plus 2 answers [2, 10]
    max_turns = 5
    # hole: peeks allowed, largest N for 'step N', and largest loop count (at least 2) [1, 12]
    knobs: ClassVar[dict[str, int]] = {"peeks": 2, "max_step": 8, "max_count": 4}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("max_count >= 2",)

    def _reset(self) -> str:
        rng = self.rng
        start = rng.randint(2, 9)
        program = [("PUSH", start)]
        if rng.random() < 0.5:
            program += [("PUSH", rng.randint(2, 6)), (rng.choice(["ADD", "MUL"]), None)]
        self.count = rng.randint(2, max(2, self.max_count))
        program.append(("PUSH", self.count))
        loop = len(program)
        self.effects = []
        body = [("DUP", None), ("JZ", None), ("SWAP", None)]
        for effect in rng.sample(sorted(_BODIES), rng.randint(1, 2)):
            k = rng.randint(2, 3) if "multiplies" in effect else rng.randint(1, 9)
            self.effects.append(effect.format(k=k))
            body += [(op, k if arg == "k" else arg) for op, arg in _BODIES[effect]]
        body += [("SWAP", None), ("PUSH", 1), ("SUB", None), ("JMP", loop)]
        program += body
        program[loop + 1] = ("JZ", len(program))  # exit the loop to the POP below
        program.append(("POP", None))
        if rng.random() < 0.5:
            program += [("PUSH", rng.randint(1, 20)), (rng.choice(["ADD", "SUB"]), None)]
        self.program, self.loop = program, loop
        self.trace = _execute(program)
        self.answer = self.trace[-1][-1]
        self.peeks_left, self.wrong = self.peeks, 0
        listing = "\n".join(
            f"{i:02d} {op}" + ("" if arg is None else f" {arg}")
            for i, (op, arg) in enumerate(program)
        )
        return (
            "A stack machine runs this program from instruction 00 and halts when it runs past "
            "the end. PUSH n pushes n; POP drops the top; DUP copies the top; SWAP swaps the top "
            "two; ADD/SUB/MUL pop b (the top) then a and push a+b, a-b, a*b; JZ t pops a value "
            "and jumps to t if it is 0; JMP t always jumps.\n\n" + listing + "\n\nWhat number "
            f"is on top of the stack at the end? Reply 'step N' (N at most {self.max_step}) to see "
            f"the stack after the first N instructions ({self.peeks} times at most), or answer "
            "with \\boxed{integer}; you have 2 attempts."
        )

    def _step(self, action: str):
        step = _STEP.search(action[:200])
        if step and "\\boxed" not in action:
            if self.peeks_left == 0:
                return "No steps left; answer with \\boxed{integer}.", 0.0, False
            n = int(step.group(1))
            if not 1 <= n <= min(self.max_step, len(self.trace)):
                return f"N must be from 1 to {self.max_step}.", 0.0, False
            self.peeks_left -= 1
            stack, left = self.trace[n - 1], self.peeks_left
            message = f"After {n} instructions the stack is {stack} (top last). Steps left: {left}."
            return message, 0.0, False
        text = extract_answer(action).replace(" ", "")
        if not _INT.fullmatch(text):
            return self.not_understood("Reply 'step N' or answer with \\boxed{integer}.")
        if int(text) == self.answer:
            return f"Correct: the program ends with {self.answer} on top.", 1.0, True
        self.wrong += 1
        if self.wrong >= 2:
            return f"Wrong again; the top of stack is {self.answer}.", 0.0, True
        return "Wrong; 1 attempt left.", 0.0, False

    def hint(self) -> str:
        end = self.program[self.loop + 1][1]
        effects = ", then ".join(self.effects)
        text = (
            f"Instructions {self.loop:02d} to {end - 1:02d} are a loop that runs {self.count} "
            f"times; each pass takes the value under the counter and {effects}."
        )
        if str(self.answer) in text:  # never give the answer away
            text = "Each loop pass changes the value under the counter, then counts it down."
        return text

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
