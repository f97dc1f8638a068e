"""Python syntax highlighting by Pygments' lexer (the code is only read, never run).

Tokens become ``<span>`` classes (keyword, string, comment, number, builtin, the name
after ``def`` / ``class``, decorator, ``self``) that the browser's style sheet colours;
every character is escaped. Lines are wrapped one by one so the page can number them
with CSS counters (numbers are not copied with the code) and link to ``#L<n>``. Text
the lexer would change (it normalises line ends) is lexed from a copy of the same
length, so what is shown is always exactly the stored source. Lexing has a time budget
(:data:`LEX_BUDGET_S`): the source is an adversary's, and the lexer is quadratic on
some inputs. The lexer runs through :func:`_tokens`, which gives exactly Pygments'
tokens with one regular expression per token instead of one per rule tried.
"""

from __future__ import annotations

import collections
import functools
import re
import threading
import time
from typing import Any

from markupsafe import Markup

from .render import escape_text as esc

__all__ = ["highlight_python", "warm"]


@functools.cache
def _css_class(kind: object) -> str:
    """The style sheet's class of a Pygments token type (token types are few: cached)."""
    from pygments import token as t

    checks = (
        (t.Name.Function, "fn"), (t.Name.Class, "cl"), (t.Name.Decorator, "d"),
        (t.Name.Builtin.Pseudo, "sf"), (t.Name.Builtin, "b"), (t.Keyword, "k"),
        (t.String, "s"), (t.Comment, "c"), (t.Number, "n"),
    )  # fmt: skip
    for parent, cls in checks:
        if kind in parent:
            return cls
    return ""


@functools.lru_cache(maxsize=1)
def _lexer() -> Any:
    from pygments.lexers.python import PythonLexer

    return PythonLexer(stripnl=False, ensurenl=False, tabsize=0)


#: Flags a rule may have and be folded into a combined pattern (scoped inline flags).
_SCOPED = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}
#: A pattern that would not mean the same inside a larger one: back references, named
#: groups (numbers and names shift), or inline flags that are not at its start.
_UNFOLDABLE = re.compile(r"\\[1-9]|\(\?P[=<]|.\(\?[aiLmsux]+\)", re.DOTALL)
_LEADING_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _combined(rules: list[tuple[Any, Any, Any]]) -> tuple[Any, dict[int, int]] | None:
    """One pattern for a state's rules, ``(?P<_0>rule 0)|(?P<_1>rule 1)|...``, and which
    rule each outer group is; None when a rule cannot be folded in.

    At a position, an alternation tries its branches in order and takes the first that
    matches, exactly as Pygments tries the rules, so the rule found is Pygments' rule,
    with the same match (nothing follows a branch that could make it backtrack).
    """
    parts = []
    for number, (rexmatch, _action, _state) in enumerate(rules):
        pattern = getattr(rexmatch, "__self__", None)
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            return None
        if pattern.flags & ~(re.IGNORECASE | re.MULTILINE | re.DOTALL | re.UNICODE):
            return None
        text = pattern.pattern
        leading = _LEADING_FLAGS.match(text)  # already in pattern.flags
        if leading:
            text = text[leading.end() :]
        if _UNFOLDABLE.search(" " + text):
            return None
        on = "".join(c for flag, c in _SCOPED.items() if pattern.flags & flag)
        off = "".join(c for flag, c in _SCOPED.items() if not pattern.flags & flag)
        parts.append(f"(?P<_{number}>(?{on}-{off}:{text}))")
    try:
        combined = re.compile("|".join(parts), re.UNICODE)
    except re.error:
        return None
    return combined.match, {combined.groupindex[f"_{n}"]: n for n in range(len(rules))}


@functools.lru_cache(maxsize=1)
def _states() -> dict[str, tuple[Any, dict[int, int]] | None]:
    """The combined pattern of every state of :func:`_lexer` (None: tried rule by rule)."""
    return {name: _combined(rules) for name, rules in _lexer()._tokens.items()}


def warm() -> None:
    """Import the lexer and compile its combined patterns now (about 0.1 s, once per
    process): the server calls it at start, so no page pays for it."""
    _states()


def _tokens(text: str) -> Any:
    """``(offset, token type, text)`` of ``text``, exactly as Pygments'
    ``get_tokens_unprocessed`` gives them (its loop, with the rule found by one match of
    the state's combined pattern). Pygments' own loop when its internals are not the
    ones this was written for."""
    from pygments.token import Error, Token, Whitespace

    lexer = _lexer()
    try:
        tokendefs = lexer._tokens
        states = _states()
    except Exception:  # another Pygments: its own (slower) loop gives the same tokens
        yield from lexer.get_tokens_unprocessed(text)
        return
    token_type = type(Token)
    pos = 0
    stack = ["root"]
    rules = tokendefs["root"]
    combined = states.get("root")
    while True:
        rule = match = None
        if combined is not None:
            found = combined[0](text, pos)
            if found is not None:
                rule = rules[combined[1][found.lastindex]]
                match = found
        else:
            for candidate in rules:
                match = candidate[0](text, pos)
                if match:
                    rule = candidate
                    break
        if rule is None:
            if pos >= len(text):
                return
            if text[pos] == "\n":  # at the end of a line the state is reset to "root"
                stack = ["root"]
                rules, combined = tokendefs["root"], states.get("root")
                yield pos, Whitespace, "\n"
            else:
                yield pos, Error, text[pos]
            pos += 1
            continue
        rexmatch, action, new_state = rule
        if type(action) is token_type or action is None:
            end = match.end()  # the combined match's span is the rule's own
            if action is not None:
                yield pos, action, text[pos:end]
        else:  # a callback reads the rule's own groups
            own = rexmatch(text, pos)
            yield from action(lexer, own)
            end = own.end()
        pos = end
        if new_state is not None:
            if isinstance(new_state, tuple):
                for state in new_state:
                    if state == "#pop":
                        if len(stack) > 1:
                            stack.pop()
                    elif state == "#push":
                        stack.append(stack[-1])
                    else:
                        stack.append(state)
            elif isinstance(new_state, int):
                if abs(new_state) >= len(stack):
                    del stack[1:]
                else:
                    del stack[new_state:]
            elif new_state == "#push":
                stack.append(stack[-1])
            rules, combined = tokendefs[stack[-1]], states.get(stack[-1])


#: CPU seconds (of the lexing thread, so a busy machine does not cut a normal source
#: short) the lexer may spend on one source; what it has not reached shows plain.
#: Pygments' lexer is quadratic on some inputs (a string of ``\\N{`` escapes), and the
#: source was written by an adversary.
LEX_BUDGET_S = 0.5
#: Sources longer than this are shown plain (no lexing at all).
MAX_HIGHLIGHT_CHARS = 200_000


def _spans(source: str) -> tuple[list[tuple[int, int, str]], bool]:
    """``(start offset, end offset, css class)`` of every highlighted token, in order (up
    to where :data:`LEX_BUDGET_S` ran out), and whether the lexer reached the end."""
    if len(source) > MAX_HIGHLIGHT_CHARS:
        return [], True
    # The thread's CPU clock is a system call (about a millisecond on some machines), so
    # it is read only once the cheap wall clock says the budget may be spent.
    wall_deadline = time.perf_counter() + LEX_BUDGET_S
    deadline = time.thread_time() + LEX_BUDGET_S
    copy = source.replace("\r", " ").replace("\ufeff", " ")  # same offsets, nothing to normalise
    spans: list[tuple[int, int, str]] = []
    for count, (start, kind, text) in enumerate(_tokens(copy)):
        if count % 64 == 0 and time.perf_counter() > wall_deadline:
            if time.thread_time() > deadline:
                return spans, False  # the rest shows as plain text
            wall_deadline = time.perf_counter() + LEX_BUDGET_S / 8
        if copy[start : start + len(text)] != text:
            return [], True  # the lexer saw other text than ours: show it plain
        cls = _css_class(kind)
        if not cls or not text:
            continue
        if spans and spans[-1][2] == cls and spans[-1][1] == start:
            spans[-1] = (spans[-1][0], start + len(text), cls)  # one string, one span
        else:
            spans.append((start, start + len(text), cls))
    return spans, True


#: Sources highlighted lately (versions are immutable): the last :data:`CACHED_SOURCES`.
CACHED_SOURCES = 256
_cache: collections.OrderedDict[str, Markup] = collections.OrderedDict()
_cache_lock = threading.Lock()


def highlight_python(source: str) -> Markup:
    """``source`` as a ``<pre class="code">`` block with one ``<span class="line">`` per line.

    Versions are immutable, so the last :data:`CACHED_SOURCES` sources highlighted are
    kept, but only when the lexer finished: a source cut short by the budget (a hostile
    one, or a normal one that met a garbage-collection pause on a loaded server) is
    lexed again on its next view.
    """
    with _cache_lock:
        found = _cache.get(source)
        if found is not None:
            _cache.move_to_end(source)
            return found
    markup, complete = _render(source)
    if complete:
        with _cache_lock:
            _cache[source] = markup
            while len(_cache) > CACHED_SOURCES:
                _cache.popitem(last=False)
    return markup


def _render(source: str) -> tuple[Markup, bool]:
    lines = source.split("\n")
    starts = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    spans, complete = _spans(source)
    out: list[str] = []
    span_i = 0
    for number, line in enumerate(lines, 1):
        if number == len(lines) and not line:
            break  # the newline at the end of the file makes no extra line
        line_start, line_end = starts[number - 1], starts[number - 1] + len(line)
        parts = []
        cursor = line_start
        while span_i < len(spans) and spans[span_i][1] <= line_start:
            span_i += 1
        j = span_i
        while j < len(spans) and spans[j][0] < line_end:
            begin, end, cls = spans[j]
            begin, end = max(begin, line_start), min(end, line_end)
            if begin > cursor:
                parts.append(esc(source[cursor:begin]))
            if end > begin:
                parts.append(f'<span class="{cls}">{esc(source[begin:end])}</span>')
            cursor = max(cursor, end)
            j += 1
        if cursor < line_end:
            parts.append(esc(source[cursor:line_end]))
        out.append(f'<span class="line" id="L{number}">{"".join(parts)}</span>')
    return Markup('<pre class="code"><code>' + "\n".join(out) + "</code></pre>"), complete
