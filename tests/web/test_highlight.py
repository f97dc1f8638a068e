"""The syntax highlighter: every character shown, escaped, and tokens classed."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from spade_envs.seeds import seed_names, seed_source
from spade_envs.web.highlight import highlight_python


def plain(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def body(markup: str) -> str:
    return markup.removeprefix('<pre class="code"><code>').removesuffix("</code></pre>")


def test_every_seed_round_trips_and_is_classed():
    for name in seed_names()[:8]:
        source = seed_source(name)
        out = highlight_python(source)
        assert plain(body(out)) == source.rstrip("\n")
        assert '<span class="k">class</span>' in out and '<span class="cl">' in out
        assert out.count('<span class="line"') == source.rstrip("\n").count("\n") + 1


def test_markup_in_code_is_escaped_and_strings_comments_are_classed():
    source = 's = "<script>alert(1)</script>"  # <b>comment</b>\ndef f(self): return len(s) + 1\n'
    out = highlight_python(source)
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert '<span class="s">&#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;</span>' in out
    assert '<span class="c"># &lt;b&gt;comment&lt;/b&gt;</span>' in out
    assert '<span class="fn">f</span>' in out and '<span class="sf">self</span>' in out
    assert '<span class="b">len</span>' in out and '<span class="n">1</span>' in out


def test_code_that_does_not_tokenize_is_still_shown_whole():
    source = 'def broken(:\n    """never closed <img src=x onerror=alert(1)>\n'
    out = highlight_python(source)
    assert plain(body(out)) == source.rstrip("\n")
    assert "<img" not in out


@given(st.text(max_size=400))
def test_any_text_is_shown_exactly_and_never_as_markup(source):
    out = highlight_python(source)
    expected = source[:-1] if source.endswith("\n") else source
    assert plain(body(out)) == expected
    assert not re.search(r"<(?!/?(span|pre|code)\b)", out)


def test_a_source_cut_short_by_the_budget_is_not_kept(monkeypatch):
    from spade_envs.web import highlight

    source = seed_source("NumberGuess") + "\n# cut short once\n"
    monkeypatch.setattr(highlight, "LEX_BUDGET_S", -1.0)  # the budget is spent at once
    cut = highlight_python(source)
    assert '<span class="k">' not in cut and plain(body(cut)) == source.rstrip("\n")
    monkeypatch.setattr(highlight, "LEX_BUDGET_S", 0.5)
    assert '<span class="k">class</span>' in highlight_python(source)  # lexed again, whole


#: Text that looks like Python: characters that start and end tokens, and whole pieces.
PYTHONISH = st.lists(
    st.sampled_from(
        list("abcfrubFRUB_ \t\n\r'\"#{}()[]:=.,@\\*+-<>!%~0123456789jxeE\ufeff")
        + ["def ", "class ", "self", "print", "if ", "else", '"""', "'''", "\\N{", "__init__"]
    ),
    max_size=120,
).map("".join)


def test_every_state_of_the_lexer_runs_as_one_combined_pattern():
    from spade_envs.web.highlight import _lexer, _states

    states = _states()
    assert set(states) == set(_lexer()._tokens)
    assert not [name for name, combined in states.items() if combined is None]


def test_the_combined_lexer_gives_pygments_own_tokens_for_every_seed():
    from spade_envs.web.highlight import _lexer, _tokens

    for name in seed_names():
        source = seed_source(name)
        assert list(_tokens(source)) == list(_lexer().get_tokens_unprocessed(source)), name


@given(PYTHONISH)
def test_the_combined_lexer_gives_pygments_own_tokens_for_any_text(source):
    from spade_envs.web.highlight import _lexer, _tokens

    assert list(_tokens(source)) == list(_lexer().get_tokens_unprocessed(source))


@given(st.sampled_from(seed_names()), st.integers(0, 10_000), PYTHONISH)
def test_the_combined_lexer_gives_pygments_own_tokens_for_edited_seeds(name, at, text):
    from spade_envs.web.highlight import _lexer, _tokens

    seed = seed_source(name)
    at %= len(seed)
    source = seed[:at] + text + seed[at + len(text) // 2 :]
    assert list(_tokens(source)) == list(_lexer().get_tokens_unprocessed(source))
