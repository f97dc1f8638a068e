"""Code extraction from every shape of model reply."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spade_envs.generator import extract_code

MODULE = "from spade_envs import TextEnv\n\n\nclass Tiny(TextEnv):\n    skill = 'math'\n"


def test_one_fenced_block_with_prose_around():
    found = extract_code(f"Sure! Here it is:\n```python\n{MODULE}```\nHave fun.")
    assert found.ok and found.code.strip() == MODULE.strip()


def test_several_blocks_pick_the_module():
    reply = f"Usage:\n```python\nenv.step('x')\n```\nModule:\n```python\n{MODULE}```\n```\nout\n```"
    found = extract_code(reply)
    assert found.ok and "class Tiny" in found.code and "3 code blocks" in found.note


def test_unfenced_module_after_prose():
    found = extract_code("I wrote this environment.\n" + MODULE)
    assert found.ok and found.code.startswith("from spade_envs") and found.note == "no code fence"


def test_truncated_and_unclosed_blocks():
    cut = extract_code("```python\n" + MODULE + "    def _reset(self):\n        return (")
    assert not cut.ok and cut.reason == "truncated"
    whole = extract_code("```python\n" + MODULE)
    assert whole.ok and whole.note == "unclosed code block"


def test_replies_without_a_usable_module():
    assert extract_code("").reason == "no code"
    assert extract_code("I cannot help with that.").reason == "no code"
    assert extract_code("```python\nprint('hi')\n```").reason == "no class"
    assert extract_code("```python\nclass X(:\n```").reason == "does not parse"
    assert extract_code("```bash\nls\n```").reason == "no code"


@given(st.text(max_size=400))
def test_any_reply_gives_code_that_parses_or_a_reason(reply):
    import ast

    found = extract_code(reply)
    if found.ok:
        ast.parse(found.code)
    else:
        assert found.reason in ("no code", "truncated", "does not parse", "no class")
