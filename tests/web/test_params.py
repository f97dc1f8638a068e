"""Checked parameters, strict query decoding and local redirects (spade_envs.web.params)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.web.params import HTTPError, Params, local_redirect, parse_qs


def params(**values):
    return Params({k: v if isinstance(v, list) else [v] for k, v in values.items()})


def test_choices_suggest_close_matches_and_empty_means_absent():
    assert params(skill="").choice("skill", ("logic", "math")) is None
    assert params(skill="logic").choice("skill", ("logic", "math")) == "logic"
    with pytest.raises(
        HTTPError, match=r"skill must be one of: logic, math; got 'logik'\. Did you mean 'logic'"
    ) as info:
        params(skill="logik").choice("skill", ("logic", "math"))
    assert info.value.status == 400


def test_numbers_are_range_checked_with_messages():
    assert params(page="3").integer("page", low=1) == 3
    with pytest.raises(HTTPError, match="page must be a whole number; got 'three'"):
        params(page="three").integer("page", low=1)
    with pytest.raises(HTTPError, match="page must be at least 1; got 0"):
        params(page="0").integer("page", low=1)
    with pytest.raises(HTTPError, match="size must be at least 1 and at most 200; got 500"):
        params(size="500").integer("size", low=1, high=200)
    assert params(x="-0.25").number("x", low=-1, high=1) == -0.25
    for bad in ("nan", "inf", "1e400", "2"):
        with pytest.raises(HTTPError, match="x must lie between -1 and 1"):
            params(x=bad).number("x", low=-1, high=1)
    with pytest.raises(HTTPError, match="x must be a number such as 0.25"):
        params(x="a lot").number("x", low=-1, high=1)


def test_text_is_bounded_and_control_characters_are_refused():
    assert params(q="  maze  ").text("q") == "maze"
    with pytest.raises(HTTPError, match="q is 201 characters long; at most 200"):
        params(q="x" * 201).text("q")
    with pytest.raises(HTTPError, match="q contains control characters"):
        params(q="a\x1bb").text("q")
    assert params(action="  keep  spaces \n").raw("action", max_chars=50) == "  keep  spaces \n"
    with pytest.raises(HTTPError, match="NUL"):
        params(action="a\x00").raw("action", max_chars=50)


def test_unknown_and_repeated_parameters_are_errors():
    p = params(skil="logic")
    p.choice("skill", ("logic",))
    with pytest.raises(HTTPError, match=r"Unknown parameter 'skil'\. Did you mean 'skill'\?"):
        p.done()
    with pytest.raises(HTTPError, match="'q' was given 2 times"):
        params(q=["a", "b"]).text("q")
    Params({"csrf": ["x"]}, ignore=("csrf",)).done()


def test_redirects_stay_on_this_server():
    assert local_redirect("/envs?q=a").headers["location"] == "/envs?q=a"
    for target in ("//evil.example/", "https://evil.example/", "javascript:alert(1)", "/\\evil"):
        with pytest.raises(ValueError, match="redirects stay on this server"):
            local_redirect(target)


def test_query_strings_are_decoded_strictly():
    assert parse_qs("q=a+b&q=c&x=") == {"q": ["a b", "c"], "x": [""]}
    with pytest.raises(HTTPError, match="not valid UTF-8"):
        parse_qs("q=%ff")


@given(st.text(max_size=300))
def test_any_text_either_passes_or_is_a_400(text):
    try:
        value = params(q=text).text("q")
    except HTTPError as exc:
        assert exc.status == 400
    else:
        assert len(value) <= 200 and value == value.strip()
