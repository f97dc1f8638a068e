"""Numbers spelled in words or separated digits, as the hint-leak check reads them."""

from __future__ import annotations

import time

import pytest

from spade_envs.core.answers import leaked_encoding
from spade_envs.core.spelled import spelled_numbers, spells_number


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("The number is four two.", "42"),
        ("The number is forty-two.", "42"),
        ("The number is forty two.", "42"),
        ("The number is Forty\u2010Two.", "42"),  # a Unicode hyphen
        ("It is fortytwo.", "42"),
        ("four hundred and twenty", "420"),
        ("four hundred twenty", "420"),
        ("twelve hundred thirty-four", "1234"),
        ("one thousand two hundred and thirty four", "1234"),
        ("two thousand and five", "2005"),
        ("a hundred and five", "105"),
        ("nineteen eighty-four", "1984"),
        ("zero four two", "42"),
        ("zero zero seven", "007"),
        ("four oh two", "402"),
        ("minus forty two", "-42"),
        ("three point one four", "3.14"),
        ("digits: 4 2", "42"),
        ("digits: 4-2", "42"),
        ("digits: 4, 2", "42"),
        ("digits: 4_2", "42"),
        ("one, two, three, four", "1234"),
        ("\uff14\uff12 in full width? no: \uff14 \uff12", "42"),  # full-width digits apart
        ("twenty twenty", "2020"),
        ("It is twenty-one, not twenty.", "21"),
    ],
)
def test_spelled_numbers_are_read(text, answer):
    assert spells_number(text, answer), sorted(spelled_numbers(text))


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("The answer has two digits.", "42"),
        ("The answer has two digits.", "2"),  # one character: never counted, as verbatim
        ("The answer is between 10 and 20.", "15"),
        ("The answer is between ten and twenty.", "1020"),  # "and" ends a number
        ("Four. Two.", "42"),  # a full stop ends a run
        ("four (then) two", "42"),
        ("Count one step, then two more.", "12"),
        ("It is often one of them.", "10"),  # "often" is no number word
        ("forty two", "402"),
        ("four two", "forty-two"),  # a non-numeric answer is not looked for
        ("The code is 4.2 metres away.", "42"),  # a decimal point is no separator
        ("hundred", "100"),  # a scale word alone is no number
    ],
)
def test_what_is_not_a_spelling(text, answer):
    assert not spells_number(text, answer), sorted(spelled_numbers(text))


def test_the_leak_check_names_the_disguise():
    assert leaked_encoding("The number is forty-two.", "42") == "spelled out"
    assert leaked_encoding("Think of four and two.", "42") == ""
    assert leaked_encoding("The number is 42.", "42") == "verbatim"


def test_a_long_hint_costs_linear_time():
    text = "one two three " * 20_000 + "forty " * 20_000 + "- , " * 20_000
    start = time.process_time()
    found = spelled_numbers(text)
    assert time.process_time() - start < 3.0
    assert all(len(n) <= 81 for n in found)
