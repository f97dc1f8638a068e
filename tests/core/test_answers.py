from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.core.answers import (
    answers_match,
    boxed,
    extract_answer,
    extract_boxed,
    extract_tag,
    normalize_text,
    parse_number,
    parse_tool_call,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed 7 is it", "7"),
        ("\\boxed{ spaced }", "spaced"),
        ("\\boxed{unclosed", None),
        ("\\boxed{ok} and \\boxed{unclosed", "ok"),
        ("no box here", None),
        ("", None),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_boxed_round_trips_through_extract():
    assert extract_boxed(boxed("take 1 from 2")) == "take 1 from 2"


def test_extract_tag_takes_the_last_complete_pair():
    assert extract_tag("<answer> a </answer> <answer>b</answer>", "answer") == "b"
    assert extract_tag("<answer>open", "answer") is None


def test_extract_answer_prefers_boxed_then_answer_tag_then_text():
    assert extract_answer("<answer>x</answer> \\boxed{y}") == "y"
    assert extract_answer("<answer>x</answer>") == "x"
    assert extract_answer("  plain  ") == "plain"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", Fraction(42)),
        ("-3.5", Fraction(-7, 2)),
        ("1,234", Fraction(1234)),
        ("3/4", Fraction(3, 4)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("50%", Fraction(1, 2)),
        ("$12$", Fraction(12)),
        ("1e3", Fraction(1000)),
    ],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_parse_number_applies_nfkc():
    assert parse_number("²") == 2  # NFKC folds superscripts: what int("²") cannot do


@pytest.mark.parametrize("text", ["", "abc", "inf", "nan", "1/0", "x²", "9" * 100])
def test_parse_number_rejects(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(
    ("given", "expected", "match"),
    [
        ("\\boxed{0.5}", "1/2", True),
        ("0.333333333", Fraction(1, 3), True),
        ("0.33", Fraction(1, 3), False),
        ("  Paris. ", "paris", True),
        ("\\text{Lyon}", "Lyon", True),
        ("Lyon", "Brno", False),
        ("1,000", 1000, True),
    ],
)
def test_answers_match(given, expected, match):
    assert answers_match(given, expected) is match


def test_normalize_text_squeezes_and_casefolds():
    assert normalize_text("  ＨＥＬＬＯ   World. ") == "hello world"


def test_parse_tool_call_ok_and_string_arguments():
    call = parse_tool_call('<tool_call>{"name": "ls", "arguments": {"path": "/"}}</tool_call>')
    assert call.ok and call.name == "ls" and call.arguments == {"path": "/"}
    call = parse_tool_call(
        '<tool_call>{"name": "ls", "arguments": "{\\"path\\": \\"/a\\"}"}</tool_call>'
    )
    assert call.ok and call.arguments == {"path": "/a"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<tool_call>{", "not closed"),
        ("<tool_call>{nope}</tool_call>", "not valid JSON"),
        ("<tool_call>[1]</tool_call>", "must be a JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'no "name"'),
        ('<tool_call>{"name": "x", "arguments": [1]}</tool_call>', "must be a JSON object"),
        ('<tool_call>{"name": "x", "arguments": "zz"}</tool_call>', "is not a JSON object"),
    ],
)
def test_parse_tool_call_errors_say_what_to_fix(text, message):
    call = parse_tool_call(text)
    assert not call.ok and message in call.error and "<tool_call>" in call.error


def test_parse_tool_call_absent():
    assert parse_tool_call("just text") is None


@given(st.text())
def test_helpers_never_raise(text):
    extract_boxed(text)
    extract_answer(text)
    parse_number(text)
    parse_tool_call(text)
    parse_tool_call("<tool_call>" + text + "</tool_call>")
    answers_match(text, "42")


def test_deeply_nested_json_tool_call_is_an_error_not_a_crash():
    call = parse_tool_call("<tool_call>" + "[" * 100_000 + "</tool_call>")
    assert not call.ok


@pytest.mark.parametrize("text", ["1e100000000", "1E-999999", "１ｅ１００００００００"])
def test_parse_number_refuses_absurd_exponents_quickly(text):
    assert parse_number(text) is None


def test_answers_match_huge_values_without_overflow():
    assert answers_match("\\boxed{1e309}", 5) is False
    assert answers_match("1e309", "1e309") is True


def test_extract_boxed_handles_many_unclosed_boxes():
    # 20,000 unclosed boxes: the old rescan-per-box version took minutes here.
    text = "\\boxed{" * 20_000 + "\\boxed{7}"
    assert extract_boxed(text) == "7"


@pytest.mark.parametrize(
    ("hint", "answer", "how"),
    [
        ("the answer is 4721", "4721", "verbatim"),
        ("code 1274 backwards", "4721", "reversed"),
        ("bytes 34373231", "4721", "hex"),
        ("NDcyMQ if you can decode it", "4721", "base64"),
        ("uryyb jbeyq", "hello world", "rot13"),
        ("digits in order: 4, 7, 2, 1.", "4721", "spaced out"),
        ("4-7-2-1", "4721", "spaced out"),
        ("4\u200b7\u200b2\u200b1", "4721", "verbatim"),
        ("full width \uff14\uff17\uff12\uff11", "4721", "verbatim"),
        ("as hex: 0x1271", "4721", "as a hex number"),
        ("world hello", "hello world", "words reversed"),
        ("between 47 and 21", "4721", ""),  # words between the parts: not a spelling
        ("the code has four digits", "4721", ""),
        ("it is 7", "7", ""),  # too short to be a secret
    ],
)
def test_leaked_encoding_names_the_disguise(hint, answer, how):
    from spade_envs.core.answers import leaked_encoding

    assert leaked_encoding(hint, answer) == how


def test_secret_parts_of_marked_and_unmarked_final_actions():
    from spade_envs.core.answers import secret_parts

    assert secret_parts("\\boxed{42}") == ["42"]
    assert secret_parts("<answer>Paris</answer>") == ["Paris"]
    assert secret_parts("open 4721 now") == ["4721"]
    assert secret_parts("move north") == []
    assert secret_parts('<tool_call>{"name": "pay", "arguments": {"amount": 94}}</tool_call>') == []
