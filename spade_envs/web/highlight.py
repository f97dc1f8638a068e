"""Python syntax highlighting by Pygments' lexer (the code is only read, never run).

Tokens become ``<span>`` classes (keyword, string, comment, number, builtin, the name
after ``def`` / ``class``, decorator, ``self``) that the browser's style sheet colours;
every character is escaped. Lines are wrapped one by one so the page can number them
with CSS counters (numbers are not copied with the code) and link to ``#L<n>``. Text
the lexer would change (it normalises line ends) is lexed from a copy of the same
length, so what is shown is always exactly the stored source. Lexing has a time budget
(:data:`LEX_BUDGET_S`): the source is an adversary's, and the lexer is quadratic on
some inputs.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from typing import Any

from markupsafe import Markup

from .render import escape_text as esc

__all__ = ["highlight_python"]


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
    lexer = _lexer()
    spans: list[tuple[int, int, str]] = []
    for count, (start, kind, text) in enumerate(lexer.get_tokens_unprocessed(copy)):
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
