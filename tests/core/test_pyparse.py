"""Every parse of Python source in the package holds one lock (CPython gh-106905)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

import spade_envs
from spade_envs.core.pyparse import PARSE_LOCK, literal_value, parse_source

PACKAGE = Path(spade_envs.__file__).parent


def test_a_parse_waits_while_another_thread_holds_the_lock():
    done = threading.Event()
    with PARSE_LOCK:
        thread = threading.Thread(target=lambda: (parse_source("x = 1"), done.set()))
        thread.start()
        # The other thread cannot finish its parse while this one holds the lock.
        assert not done.wait(0.2)
    thread.join(10)
    assert done.is_set()


def test_the_helpers_answer_what_ast_does():
    assert ast.dump(parse_source("f(x)", mode="eval")) == ast.dump(ast.parse("f(x)", mode="eval"))
    assert literal_value("  {'a': (1, 2)}") == {"a": (1, 2)}
    with pytest.raises(SyntaxError):
        parse_source("def (")
    with pytest.raises(ValueError, match="malformed node"):
        literal_value("f(x)")


def _unlocked_parses(path: Path) -> list[str]:
    """Calls in ``path`` that build an AST from a string without the lock: ``ast.parse``,
    or ``ast.literal_eval`` of anything but an AST node the module already has."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id == "ast"):
            continue
        if node.func.attr == "parse":
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ast.parse")
        elif node.func.attr == "literal_eval" and not _is_node_argument(node.args[0]):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ast.literal_eval")
    return found


def _is_node_argument(argument: ast.expr) -> bool:
    """An argument that is an AST node by its look: ``x.value``, ``statements[0]``, ``node``
    (a string argument is a literal, an f-string, a call such as ``repr(...)`` or a name
    ending in text/source)."""
    if isinstance(argument, (ast.Attribute, ast.Subscript)):
        return True
    return isinstance(argument, ast.Name) and not argument.id.endswith(("text", "source"))


def test_no_module_parses_outside_the_lock():
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "pyparse.py"
        for hit in _unlocked_parses(path)
    ]
    assert found == [], "parse through spade_envs.core.pyparse instead: " + ", ".join(found)


def test_a_forked_child_parses_while_its_parent_holds_the_lock():
    """A thread of the parent holds the lock at the fork (multiprocessing's 'fork', an
    AsyncVectorEnv opening environments): the child's lock is a fresh one (an adversary's
    review found 4 of 5 such children hung for good)."""
    import os
    import signal

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with PARSE_LOCK:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: parse, or die of the alarm if the lock never comes
            signal.alarm(5)
            from spade_envs.core import pyparse

            pyparse.parse_source("x = 1")
            os._exit(0)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        thread.join(10)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_a_parse_that_meets_the_interpreter_wide_race_is_tried_again(monkeypatch):
    """Parses outside the package (traceback's caret anchors) cannot take the lock; the
    constructor resets its depth at each call, so the mismatch is answered by a retry."""
    real_parse = ast.parse
    calls = []

    def racing(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=21, after=25)")
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", racing)
    assert isinstance(parse_source("x = 1"), ast.Module) and len(calls) == 2

    def other_error(*args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(ast, "parse", other_error)
    with pytest.raises(SystemError, match="something else"):
        parse_source("x = 1")
