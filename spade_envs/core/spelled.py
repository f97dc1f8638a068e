"""Numbers a text spells out: English cardinals and separated digits, read as digit strings.

A hint can name a secret number without writing it as one: "four two", "forty-two",
"forty two", "four hundred and twenty", "nineteen eighty-four", "4 2", "4-2", "4, 2".
:func:`spelled_numbers` reads every such spelling in a text and returns the digit
strings it could stand for; :func:`spells_number` says whether one of them is a given
answer. The reading is deliberately literal, in the spirit of the whole-word rule of
:func:`~spade_envs.core.answers.leaks_answer`: a run of number words (or digits) joined
only by spaces, dashes, commas or underscores is read once as one number (or as the
numbers it holds, in order, written side by side), so "the answer has two digits" reads
as 2 and nothing else. Runs end at any other word or punctuation.

Everything here runs in time linear in the text and never raises on odd text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["spelled_numbers", "spells_number"]

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_UNITS.update({"oh": 0, "nought": 0, "naught": 0})
_TENS = {
    w: 10 * i
    for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
    if w != "_"
}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_MINUS = {"minus", "negative"}
_WORDS = {**_UNITS, **_TENS, "hundred": 100, **_SCALES}
#: The words above, longest first, so "seventeen" is not read as "seven" + "teen", and
#: "fortytwo" (no separator) splits into "forty" + "two".
_COMPOUND = re.compile("|".join(sorted(_WORDS, key=len, reverse=True)))
#: Letters, digit runs (a decimal point inside one), and what lies between them.
_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:\.\d+)?|[^\w]+|_+")
#: Separators that keep a run of number words going: spaces, dashes, commas, underscores.
_JOINER = re.compile(r"[\s,_\-\u2010-\u2015\u2212]{1,3}")
#: Longest candidate kept: no answer worth comparing is longer.
_MAX_DIGITS = 80
#: Longest run of number words read (a longer one is read in pieces of this size).
_MAX_RUN = 64


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.casefold()


def _words(token: str) -> list[str] | None:
    """A letter token as number words ("fortytwo" -> forty, two), or None if it is not one."""
    if token in _WORDS or token in _MINUS or token in ("and", "a", "point"):
        return [token]
    parts = _COMPOUND.findall(token)
    if parts and "".join(parts) == token:
        return parts
    return None


def _runs(text: str) -> list[list[str]]:
    """The runs of number words and digit groups in ``text`` (each a list of items)."""
    runs: list[list[str]] = []
    current: list[str] = []
    pending_joiner = False
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token[0].isdigit():
            items: list[str] | None = [token]
        elif token[0].isalpha():
            items = _words(token)
        else:
            if current and _JOINER.fullmatch(token) and not pending_joiner:
                pending_joiner = True
                continue
            items = None
        pending_joiner = False
        if items is None:
            if current:
                runs.append(current)
            current = []
            continue
        current.extend(items)
        if len(current) >= _MAX_RUN:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


class _Number:
    """A cardinal being read word by word ("four hundred and twenty")."""

    def __init__(self) -> None:
        self.total = 0  # what earlier scale words closed (thousands, millions)
        self.group = 0  # below the last scale word
        self.last = ""  # kind of the last word: unit, teen, tens, hundred, scale
        self.scale = 0  # the last scale word's value (each must be smaller)
        self.sign = ""
        self.words = 0
        self.fraction = ""

    def add(self, word: str) -> bool:
        """Take ``word`` if it continues this number; False when it starts a new one."""
        if self.fraction or self.last == "point":
            if word in _UNITS and _UNITS[word] < 10:
                self.fraction += str(_UNITS[word])
                self.last = "fraction"
                return True
            return False
        below_hundred = self.group % 100
        if word in _UNITS:
            value = _UNITS[word]
            if self.last in ("unit", "teen"):
                return False
            if self.last == "tens" and value >= 10:
                return False
            if self.last not in ("tens", "") and below_hundred:
                return False
            self.group += value
            self.last = "teen" if value >= 10 else "unit"
        elif word in _TENS:
            if self.last in ("unit", "teen", "tens") or below_hundred:
                return False
            self.group += _TENS[word]
            self.last = "tens"
        elif word == "hundred":
            if not 1 <= self.group <= 99 or self.last in ("hundred", "scale"):
                return False
            self.group *= 100
            self.last = "hundred"
        elif word in _SCALES:
            value = _SCALES[word]
            if not self.group or (self.scale and value >= self.scale):
                return False
            self.total += self.group * value
            self.group, self.scale, self.last = 0, value, "scale"
        else:
            return False
        self.words += 1
        return True

    def digits(self) -> str:
        text = self.sign + str(self.total + self.group)
        return f"{text}.{self.fraction}" if self.fraction else text


def _read(run: list[str]) -> set[str]:
    """Digit strings ``run`` spells: each number in it, and all of them side by side.

    An "and" that does not follow "hundred" or a scale word ("ten and twenty") ends the
    reading there: what follows is another number, never written next to the first.
    """
    found: set[str] = set()
    numbers: list[str] = []
    current: _Number | None = None
    sign = ""

    def close() -> None:
        nonlocal current
        if current is not None and current.words:
            numbers.append(current.digits())
        current = None

    def flush() -> None:
        close()
        found.update(n for n in numbers if len(n) <= _MAX_DIGITS)
        joined = "".join(n.lstrip("-") for n in numbers)
        if len(numbers) > 1 and len(joined) <= _MAX_DIGITS:
            found.add(("-" if numbers[0].startswith("-") else "") + joined)
        numbers.clear()

    for index, item in enumerate(run):
        following = run[index + 1] if index + 1 < len(run) else ""
        if item[0].isdigit():
            close()
            numbers.append(sign + item)
            sign = ""
        elif item in _MINUS:
            sign = "-"
        elif item == "a":  # "a hundred", "a thousand"; otherwise an ordinary word
            if following == "hundred" or following in _SCALES:
                close()
                current = _Number()
                current.sign, sign = sign, ""
                current.group, current.last, current.words = 1, "unit", 1
            else:
                flush()
        elif item == "and":  # "four hundred and twenty"
            if current is None or current.last not in ("hundred", "scale"):
                flush()
        elif item == "point":
            if current is not None and current.words and current.last not in ("point", "fraction"):
                current.last = "point"
            else:
                flush()
        elif current is None or not current.add(item):
            close()
            current = _Number()
            current.sign, sign = sign, ""
            if not current.add(item):  # a scale word with nothing before it
                current = None
    flush()
    return found


@lru_cache(maxsize=16)
def spelled_numbers(text: str) -> frozenset[str]:
    """Every digit string ``text`` spells with number words or separated digits.

    ``"The number is forty-two"`` gives ``{"42"}``; ``"four two"`` gives ``{"4", "2",
    "42"}``; ``"nineteen eighty-four"`` gives ``{"19", "84", "1984"}``; ``"minus three
    point one four"`` gives ``{"-3.14"}``.
    """
    if not isinstance(text, str):
        return frozenset()
    found: set[str] = set()
    for run in _runs(_fold(text)):
        found |= _read(run)
    return frozenset(found)


def _canonical(number: str) -> str:
    sign = "-" if number.startswith("-") else ""
    whole, _, fraction = number.lstrip("-").partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return sign + whole + (f".{fraction}" if fraction else "")


_ANSWER = re.compile(r"-?\d+(?:\.\d+)?")


def spells_number(text: str, answer: str) -> bool:
    """Whether ``text`` spells the number ``answer`` in words or separated digits.

    Only answers that are numbers (``42``, ``-7``, ``3.14``, ``1,234``) of at least two
    characters are looked for, as a whole word is (a hint may say "two" when two is
    not the answer of two characters or more); leading zeros do not hide one
    ("zero four two" spells ``42``, and ``007`` is spelled by "zero zero seven").
    """
    answer = str(answer).strip()
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", answer):
        answer = answer.replace(",", "")
    if len(answer) < 2 or not _ANSWER.fullmatch(answer):
        return False
    want = _canonical(answer)
    return any(_canonical(found) == want for found in spelled_numbers(text))
