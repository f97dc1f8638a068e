"""terminal_safe: model-written text prints as itself."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spade_envs.core.terminal import terminal_safe


def test_escape_sequences_bidi_and_surrogates_are_shown_escaped():
    text = "a\x1b[2J\x1b]0;title\x07\u202eevil\ud800\x9b31m\nnext\tcell"
    assert terminal_safe(text) == (
        "a\\x1b[2J\\x1b]0;title\\x07\\u202eevil\\ud800\\x9b31m\nnext\tcell"
    )
    assert terminal_safe("x\ny\tz", one_line=True) == "x\\x0ay\\x09z"
    assert terminal_safe("abcdef", limit=4) == "abc…"


@given(st.text())
def test_the_result_holds_no_control_format_or_surrogate_character(text):
    import unicodedata

    safe = terminal_safe(text)
    assert all(
        c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        for c in safe
    )
    safe.encode("utf-8")  # always valid UTF-8
    assert terminal_safe(safe) == safe  # idempotent
