"""Reading answers out of model text.

The conventions every environment shares: a final answer in ``\\boxed{...}`` (or
``<answer>...</answer>``), a tool call as ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``, and lenient comparison of numbers and short strings. All
functions here run in time linear in the input and never raise on odd text.
"""

from __future__ import annotations

import base64
import codecs
import json
import re
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .spelled import spells_number

__all__ = [
    "extract_boxed",
    "extract_tag",
    "extract_answer",
    "ToolCall",
    "parse_tool_call",
    "normalize_text",
    "parse_number",
    "answers_match",
    "boxed",
    "leaks_answer",
    "leaked_encoding",
    "secret_parts",
    "visible_text",
    "marked_answer",
]

_BOXED = "\\boxed"


def boxed(answer: object) -> str:
    """Format ``answer`` the way agents are asked to: ``\\boxed{answer}``."""
    return f"{_BOXED}{{{answer}}}"


def extract_boxed(text: str) -> str | None:
    """Return the content of the last ``\\boxed{...}`` in ``text`` (braces balanced), or None.

    ``\\boxed 42`` (no braces, as some models write) yields ``"42"``. One pass over the
    text pairs every brace first, so many unclosed ``\\boxed{`` cost linear time.
    """
    if not isinstance(text, str) or _BOXED not in text:
        return None
    closing: dict[int, int] = {}
    stack: list[int] = []
    for i, char in enumerate(text):
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            closing[stack.pop()] = i
    start = text.rfind(_BOXED)
    while start != -1:
        i = start + len(_BOXED)
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            if i in closing:
                return text[i + 1 : closing[i]].strip()
        elif i > start + len(_BOXED):
            token = _BARE_TOKEN.match(text, i)
            if token:
                return token.group(0)
        # Unbalanced or empty: fall back to an earlier \boxed, if any.
        start = text.rfind(_BOXED, 0, start)
    return None


_BARE_TOKEN = re.compile(r"[^\s$]+")


def extract_tag(text: str, tag: str) -> str | None:
    """Return the stripped content of the last ``<tag>...</tag>`` in ``text``, or None."""
    if not isinstance(text, str):
        return None
    close = text.rfind(f"</{tag}>")
    if close == -1:
        return None
    open_ = text.rfind(f"<{tag}>", 0, close)
    if open_ == -1:
        return None
    return text[open_ + len(tag) + 2 : close].strip()


def extract_answer(text: str) -> str:
    """The answer an agent gave: ``\\boxed{}`` content, else ``<answer>`` content, else the text.

    The result is stripped; for an action without either marker it is the whole action,
    so a terse agent that just writes ``42`` is understood too.
    """
    if not isinstance(text, str):
        text = str(text)
    for found in (extract_boxed(text), extract_tag(text, "answer")):
        if found is not None:
            return found
    return text.strip()


@dataclass(frozen=True)
class ToolCall:
    """A parsed ``<tool_call>``: either ``name`` and ``arguments``, or an ``error`` to show."""

    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_tool_call(text: str) -> ToolCall | None:
    """Parse the first ``<tool_call>{json}</tool_call>`` in ``text``.

    Returns None when the text holds no tool call at all, and a :class:`ToolCall` with
    ``error`` set (a sentence telling the agent what to fix) when it holds a malformed one.
    ``arguments`` may also be a JSON-encoded string of an object, as some models write.
    """
    if not isinstance(text, str):
        return None
    open_ = text.find("<tool_call>")
    if open_ == -1:
        return None
    close = text.find("</tool_call>", open_)
    body = text[open_ + len("<tool_call>") : close if close != -1 else len(text)].strip()
    fmt = 'Write <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>.'
    if close == -1:
        return ToolCall(error=f"The tool call is not closed with </tool_call>. {fmt}")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return ToolCall(error=f"The tool call is not valid JSON ({_short(exc)}). {fmt}")
    if not isinstance(payload, dict):
        return ToolCall(error=f"The tool call must be a JSON object. {fmt}")
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(error=f'The tool call has no "name" string. {fmt}')
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return ToolCall(name=name, error=f'"arguments" of {name!r} is not a JSON object. {fmt}')
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(name=name, error=f'"arguments" of {name!r} must be a JSON object. {fmt}')
    return ToolCall(name=name, arguments=arguments)


def _short(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0][:120]


def normalize_text(text: str) -> str:
    """Case-fold, NFKC-normalise, drop surrounding punctuation/LaTeX and squeeze whitespace."""
    text = unicodedata.normalize("NFKC", str(text))
    text = re.sub(r"\\text\{([^{}]*)\}", r"\1", text)
    text = text.replace("$", "").strip().strip(".").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1]
    return " ".join(text.casefold().split())


_FRAC = re.compile(r"^\\d?frac\{([^{}]+)\}\{([^{}]+)\}$")


_EXPONENT = re.compile(r"[eE]([+-]?\d+)$")
#: Decimal exponents beyond this are rejected: Fraction("1e100000000") would build a
#: hundred-million-digit integer.
_MAX_EXPONENT = 400


def parse_number(text: str) -> Fraction | None:
    """Parse ``text`` as a number: ints, decimals, ``1,234``, ``3/4``, ``\\frac{3}{4}``, ``50%``.

    Values come back exact, as :class:`~fractions.Fraction`. Infinite, NaN, absurdly
    large (exponent beyond 400) and unparseable text give None.
    """
    s = normalize_text(text).replace(" ", "")
    if not s or len(s) > 64:
        return None
    percent = s.endswith("%")
    if percent:
        s = s[:-1]
    frac = _FRAC.match(s)
    if frac:
        s = f"{frac.group(1)}/{frac.group(2)}"
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    if not s.isascii():
        return None
    exponent = _EXPONENT.search(s)
    if exponent and abs(int(exponent.group(1))) > _MAX_EXPONENT:
        return None
    try:
        value = Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return value / 100 if percent else value


def answers_match(given: str, expected: object, *, rel_tol: float = 1e-6) -> bool:
    """Whether an agent's answer equals the expected one.

    Numbers compare by value (``0.5`` == ``1/2`` == ``50%``, within ``rel_tol``);
    anything else compares after :func:`normalize_text`. ``given`` is first passed
    through :func:`extract_answer`, so ``"\\boxed{42}"`` matches ``42``.
    """
    answer = extract_answer(given)
    want = str(expected)
    a, b = parse_number(answer), parse_number(want)
    if a is not None and b is not None:
        # Exact arithmetic: no float overflow for huge values, no rounding for small ones.
        return abs(a - b) <= Fraction(rel_tol) * max(abs(a), abs(b)) + Fraction(1, 10**12)
    return normalize_text(answer) == normalize_text(want)


def marked_answer(action: str) -> str:
    """The answer an action marks explicitly (``\\boxed{}``, else ``<answer>``), or ``""``.

    Unlike :func:`extract_answer`, an unmarked action gives nothing: a final command such
    as "done" or "move north" is not a secret a hint could leak.
    """
    found = extract_boxed(action)
    if found is None:
        found = extract_tag(action, "answer")
    return (found or "").strip()


def leaks_answer(text: str, answer: str) -> bool:
    """Whether ``text`` contains ``answer`` as a whole word (case-insensitive).

    Answers shorter than two characters are never counted: a hint may say "1" or "a"
    without giving anything away.
    """
    return (
        len(answer) >= 2 and re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text, re.I) is not None
    )


def _invisible_removed(text: str) -> str:
    """``text`` NFKC-folded (full-width digits become ASCII) without format characters
    (zero-width spaces and joiners, bidi marks)."""
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFKC", text)


def _encodings(answer: str) -> dict[str, list[str]]:
    """Simple disguises of ``answer`` a leaking hint might use, by name."""
    raw = answer.encode("utf-8")
    forms: dict[str, list[str]] = {
        "reversed": [answer[::-1]],
        "hex": [raw.hex(), raw.hex().upper()],
        "base64": [base64.b64encode(raw).decode("ascii").rstrip("=")],
        "rot13": [codecs.encode(answer, "rot13")],
    }
    words = answer.split()
    if len(words) > 1:
        forms["words reversed"] = [" ".join(reversed(words))]
    if re.fullmatch(r"-?\d+", answer):
        number = int(answer)
        forms["as a hex number"] = [hex(number), hex(number)[2:]]
        forms["as a binary number"] = [bin(number), bin(number)[2:]]
    return forms


def _separated(text: str, answer: str) -> bool:
    """Whether ``text`` spells ``answer``'s letters and digits in order with only other
    characters between them ("4, 2, 7", "4-2-7", "4 2 7"), as a whole word."""
    skeleton = [c for c in answer.lower() if c.isalnum()]
    if not 3 <= len(skeleton) <= 64:
        return False
    pattern = r"(?<![^\W_])" + r"[\W_]{0,3}".join(map(re.escape, skeleton)) + r"(?![^\W_])"
    return re.search(pattern, text.lower()) is not None


#: Longest answer whose character-by-character spelling is looked for.
_MAX_SPELLED = 256
#: Longest hint searched (after NFKC folding, which can expand a character 18x).
_MAX_HINT = 200_000


def leaked_encoding(text: str, answer: str, *, visible: str | None = None) -> str:
    """How ``text`` gives ``answer`` away: ``"verbatim"``, a disguise's name, or ``""``.

    Besides the answer itself as a whole word (:func:`leaks_answer`), simple disguises
    count: a number spelled in words or separated digits ("forty-two", "four two",
    "4-2"; see :mod:`.spelled`), reversed, hex, base64, rot13, its letters and digits
    separated by other characters, words in reverse order, a number in hex or binary,
    and any of these in full-width or other compatibility characters or with zero-width
    characters sprinkled in. A spelled number is looked for when the answer has two
    characters or more, as a whole word is; other disguises when it has at least three,
    so short coincidences are not called leaks (the separated spelling up to 256).

    Args:
        text: The hint.
        answer: What it must not give away.
        visible: ``text`` already folded by :func:`visible_text` (pass it when checking
            many answers against one hint: folding is the costly part).
    """
    visible = visible_text(text) if visible is None else visible
    if leaks_answer(text[:_MAX_HINT], answer) or leaks_answer(visible, answer):
        return "verbatim"
    if len(answer) < 3:  # "forty-two", "four two", "4-2": two characters are enough
        return "spelled out" if spells_number(visible, answer) else ""
    if len(answer) <= _MAX_SPELLED and _separated(visible, answer):
        return "spaced out"
    for name, forms in _encodings(answer).items():
        for form in forms:
            if form != answer and len(form) >= 3 and leaks_answer(visible, form):
                return name
    return "spelled out" if spells_number(visible, answer) else ""


def visible_text(text: str) -> str:
    """What a reader of ``text`` sees: NFKC-folded, format characters dropped, bounded."""
    return _invisible_removed(text[:_MAX_HINT])[:_MAX_HINT]


#: Most parts of one final action checked against a hint.
_MAX_SECRET_PARTS = 16


def secret_parts(action: str, seen: str = "") -> list[str]:
    """What a hint must not give away of a solution's final action.

    The marked answer (``\boxed{}`` or ``<answer>``) when there is one. Otherwise what
    the final action supplies that the episode never showed: its tokens that carry a
    digit ("open 4721" gives "4721", "say K7QX2" gives "K7QX2"), and for a tool call, its
    one scalar argument of three characters or more (when it has just one). Parts found
    in ``seen`` (the observations of the play up to that action, lower-cased) are not
    secrets: the agent could read them there, as a command such as "done", "move north"
    or "set A4".
    """
    marked = marked_answer(action)
    if marked:
        return [marked]
    call = parse_tool_call(action)
    if call is not None:
        values = call.arguments.values() if call.ok else []
        parts = [str(v) for v in values if isinstance(v, (str, int, float)) and len(str(v)) >= 3]
        # One argument is the answer; of several, telling one (the day of a meeting) is
        # help that still leaves the rest to the agent.
        parts = parts if len(parts) == 1 else []
    else:
        parts = re.findall(r"(?<![\w.])-?(?=[\w.]*\d)[\w.]*\w(?![\w.])", action)
    unseen = [p for p in dict.fromkeys(parts) if p.lower() not in seen]
    return unseen[:_MAX_SECRET_PARTS]
