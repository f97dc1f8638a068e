"""Python syntax highlighting with the standard library's tokenizer (the code never runs).

Tokens become ``<span>`` classes (keyword, string, comment, number, builtin, the name
after ``def`` / ``class``, decorator, ``self``); every character is escaped. Code that
does not tokenize (an import of something broken) is highlighted up to the error and
shown plainly after it. Lines are wrapped one by one so the page can number them
with CSS counters (numbers are not copied with the code) and link to ``#L<n>``.
"""

from __future__ import annotations

import builtins
import io
import keyword
import token
import tokenize

from .html import Raw, esc

__all__ = ["highlight_python"]

_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))
_STRING_TYPES = {token.STRING} | {
    getattr(token, name)
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
    if hasattr(token, name)
}


def _spans(source: str, starts: list[int]) -> list[tuple[int, int, str]]:
    """``(start offset, end offset, css class)`` of every highlighted token, in order."""
    spans: list[tuple[int, int, str]] = []
    previous = ""  # the previous significant NAME or OP, for def/class names and decorators
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, text = tok.type, tok.string
            begin = starts[tok.start[0] - 1] + tok.start[1]
            end = starts[tok.end[0] - 1] + tok.end[1]
            cls = ""
            if kind == token.COMMENT:
                cls = "c"
            elif kind in _STRING_TYPES:
                cls = "s"
            elif kind == token.NUMBER:
                cls = "n"
            elif kind == token.NAME:
                if previous == "def":
                    cls = "fn"
                elif previous == "class":
                    cls = "cl"
                elif previous == "@":
                    cls = "d"
                elif keyword.iskeyword(text):
                    cls = "k"
                elif text in ("self", "cls"):
                    cls = "sf"
                elif text in _BUILTINS:
                    cls = "b"
            elif kind == token.OP and text == "@":
                cls = "d"
            if cls:
                spans.append((begin, end, cls))
            if kind in (token.NAME, token.OP):
                previous = text
    except (tokenize.TokenError, SyntaxError, IndexError):
        pass  # highlighted so far; the rest shows as plain text
    return spans


def highlight_python(source: str) -> Raw:
    """``source`` as a ``<pre class="code">`` block with one ``<span class="line">`` per line."""
    lines = source.split("\n")
    starts = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    starts.append(offset)
    spans = _spans(source, starts)
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
            parts.append(f'<span class="{cls}">{esc(source[begin:end])}</span>')
            cursor = end
            j += 1
        if cursor < line_end:
            parts.append(esc(source[cursor:line_end]))
        out.append(f'<span class="line" id="L{number}">{"".join(parts)}</span>')
    return Raw('<pre class="code"><code>' + "\n".join(out) + "</code></pre>")
