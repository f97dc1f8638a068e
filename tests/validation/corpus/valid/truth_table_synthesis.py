# expect: valid
"""Write a Boolean formula that reproduces a hidden truth table (a tiny code-synthesis task).

The agent's formula is parsed by a hand-written recursive-descent parser (no eval):
tokens are variables, 0/1, and/or/xor/not (or & | ^ ! ~) and parentheses. The input
length and nesting depth are bounded before parsing, so hostile text cannot recurse deeply.
"""

from __future__ import annotations

import itertools
import re

from spade_envs import TextEnv, extract_answer

TOKEN = re.compile(r"\s*(?:(and|or|xor|not|true|false)\b|([a-d])\b|([01])\b|(&&|\|\||[&|^!~()]))")
WORD_OPS = {"&&": "and", "&": "and", "||": "or", "|": "or", "^": "xor", "!": "not", "~": "not"}


class ParseError(ValueError):
    pass


def tokenize(text: str) -> list[str]:
    tokens, i = [], 0
    text = text.strip().lower()
    while i < len(text):
        found = TOKEN.match(text, i)
        if not found or found.end() == i:
            if text[i:].strip() == "":
                break
            raise ParseError(f"unexpected text at {text[i:i + 12]!r}")
        word = next(g for g in found.groups() if g is not None)
        tokens.append({"true": "1", "false": "0"}.get(word, WORD_OPS.get(word, word)))
        i = found.end()
    return tokens


def parse(tokens: list[str]):
    """Precedence, loosest first: or, xor, and, not. Returns a nested tuple tree."""
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def binary(level: int):
        nonlocal pos
        ops = ("or", "xor", "and")
        if level == len(ops):
            return unary()
        node = binary(level + 1)
        while peek() == ops[level]:
            pos += 1
            node = (ops[level], node, binary(level + 1))
        return node

    def unary():
        nonlocal pos
        negations = 0
        while peek() == "not":
            pos += 1
            negations += 1
        token = peek()
        if token is None:
            raise ParseError("the formula ends too early")
        pos += 1
        if token == "(":
            node = binary(0)
            if peek() != ")":
                raise ParseError("a parenthesis is not closed")
            pos += 1
        elif token in ("a", "b", "c", "d", "0", "1"):
            node = token
        else:
            raise ParseError(f"unexpected {token!r}")
        return ("not", node) if negations % 2 else node

    tree = binary(0)
    if pos != len(tokens):
        raise ParseError(f"unexpected {tokens[pos]!r}")
    return tree


def evaluate(node, row: dict[str, bool]) -> bool:
    if isinstance(node, str):
        return row[node] if node in row else node == "1"
    if node[0] == "not":
        return not evaluate(node[1], row)
    left, right = evaluate(node[1], row), evaluate(node[2], row)
    if node[0] == "and":
        return left and right
    if node[0] == "or":
        return left or right
    return left != right


class TruthTableSynthesis(TextEnv):
    skill = "code"
    description = (
        "A truth table over a few Boolean inputs is given. Write any Boolean formula that "
        "reproduces it, using the inputs, 0/1, and, or, xor, not and parentheses. A wrong "
        "formula gets a counterexample row; three attempts."
    )
    max_turns = 3
    knobs = {"inputs": 3}

    def _reset(self) -> str:
        self.names = "abcd"[: max(2, min(self.inputs, 4))]
        self.rows = [dict(zip(self.names, bits)) for bits in itertools.product((False, True), repeat=len(self.names))]
        example = parse(tokenize("(a and not b) or c"))
        while True:
            self.table = [self.rng.random() < 0.5 for _ in self.rows]
            copied = all(evaluate(example, row) == out for row, out in zip(self.rows, self.table))
            if any(self.table) and not all(self.table) and not copied:
                break
        header = " ".join(self.names) + " | out"
        lines = [
            " ".join("1" if row[n] else "0" for n in self.names) + " |  " + ("1" if out else "0")
            for row, out in zip(self.rows, self.table)
        ]
        return (
            "Find a Boolean formula with this truth table:\n  " + header + "\n  " +
            "\n  ".join(lines) + "\nUse the inputs " + ", ".join(self.names) +
            ", 0/1, and, or, xor, not, parentheses. Answer like \\boxed{(a and not b) or c}."
        )

    def _step(self, action: str):
        text = extract_answer(action)
        if len(text) > 1000:
            return "That formula is too long (1000 characters at most).", 0.0, False
        depth = deepest = 0
        for ch in text:
            depth += ch == "("
            depth -= ch == ")"
            deepest = max(deepest, depth)
        if deepest > 30:
            return "Too deeply nested (30 levels at most).", 0.0, False
        try:
            tree = parse(tokenize(text))
        except ParseError as exc:
            return f"Could not parse the formula: {exc}.", 0.0, False
        unknown = sorted({t for t in tokenize(text) if t in "abcd" and t not in self.names})
        if unknown:
            return f"Unknown input {unknown[0]}; the inputs are {', '.join(self.names)}.", 0.0, False
        for row, out in zip(self.rows, self.table):
            if evaluate(tree, row) != out:
                shown = ", ".join(f"{n}={int(row[n])}" for n in self.names)
                return f"Wrong on {shown}: expected {int(out)}.", 0.0, self.turn >= self.max_turns
        return "Your formula matches every row. Correct!", 1.0, True

    def hint(self) -> str:
        ones = sum(self.table)
        return (
            f"The output is 1 on {ones} of {len(self.rows)} rows. Any table can be written as an "
            "'or' of one 'and'-term per row whose output is 1 (a sum of minterms)."
        )

    def solution(self) -> list[str]:
        def minterms(value: bool) -> str:
            terms = [
                "(" + " and ".join(n if row[n] else f"not {n}" for n in self.names) + ")"
                for row, out in zip(self.rows, self.table)
                if out == value
            ]
            return " or ".join(terms)

        # The ones as a sum of minterms, or (when shorter) the negated sum of the zeros.
        formula = minterms(True)
        if sum(self.table) > len(self.table) // 2:
            formula = f"not ({minterms(False)})"
        return [f"\\boxed{{{formula}}}"]
