"""An environment page's first view: what it starts first, and what it computes only once.

The first view of a version queues its example episode before anything else and waits
for it last, so the episode (in a sandbox worker) plays while the page reads the
registry, finds the neighbours and highlights the source; the source is parsed once for
its dialect and its knobs, and a later view parses it no more; the served process runs
each matrix product on one thread. (The bounded neighbour search and the combined lexer
are tested with the vectors and the highlighter.)
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys

import pytest

from spade_envs import describe, seed_class
from spade_envs.seeds import seed_source
from spade_envs.web import pages_card, pages_env
from spade_envs.web.examples import examples_of

from .conftest import Client


def _new_version(registry, name: str):
    """A version no page has shown yet (a renamed seed: its own source and SHA-256)."""
    meta = dataclasses.replace(describe(seed_class("NumberGuess")), name=name)
    source = seed_source("NumberGuess").replace("class NumberGuess(", f"class {name}(")
    return registry.register(source, meta, status="candidate")


@pytest.fixture
def calls(server, monkeypatch):
    """The order in which the page asked for the example and built its other sections."""
    log: list[tuple[str, float | None]] = []
    examples = examples_of(server.app)
    get = examples.get

    def logged_get(record, wait_s=None, client=None):
        log.append(("example", wait_s))
        return get(record, wait_s=wait_s, client=client)

    highlight = pages_env.highlight_python

    def logged_highlight(source):
        log.append(("highlight", None))
        return highlight(source)

    similar = pages_env._similar

    def logged_similar(app, record):
        log.append(("similar", None))
        return similar(app, record)

    monkeypatch.setattr(examples, "get", logged_get)
    monkeypatch.setattr(pages_env, "highlight_python", logged_highlight)
    monkeypatch.setattr(pages_env, "_similar", logged_similar)
    return log


def test_a_first_view_queues_its_example_first_and_waits_for_it_last(server, calls):
    record = _new_version(server.app.registry, "FirstViewOrder")
    examples = examples_of(server.app)
    status, _, text = Client(server.url).get("/env/FirstViewOrder-v1")
    assert status == 200 and "FirstViewOrder" in text
    kinds = [kind for kind, _ in calls]
    assert kinds[0] == "example" and calls[0][1] == 0  # queued at once, without waiting
    assert kinds[-1] == "example"  # the card's wait comes after the other sections
    assert kinds.index("highlight") < len(kinds) - 1 and kinds.index("similar") < len(kinds) - 1
    waited = calls[-1][1]
    assert waited is not None and 0 <= waited <= examples.wait_s  # never more than before
    # The episode was queued by this page (it is played, or being played, in a worker).
    assert examples.get(record, wait_s=30) is not None


def test_the_source_is_parsed_once_for_its_dialect_and_knobs(server, monkeypatch):
    record = _new_version(server.app.registry, "FirstViewParse")
    examples = examples_of(server.app)
    # No example yet on either view: the knobs come from the source, as on a busy server.
    monkeypatch.setattr(examples, "get", lambda record, wait_s=None, client=None: None)
    parsed = pages_card.facts_parsed
    client = Client(server.url)
    status, _, text = client.get("/env/FirstViewParse-v1")
    assert status == 200
    assert pages_card.facts_parsed == parsed + 1  # one parse: the dialect and the knobs
    assert "read from the source" in text and "<code>upper</code>" in text
    assert "native (spade_envs protocol" in text
    client.get("/env/FirstViewParse-v1")
    assert pages_card.facts_parsed == parsed + 1  # kept: the second view parses nothing
    label, knobs = pages_card.source_facts(record)
    from spade_envs.core.dialect import dialect_label

    assert label == dialect_label(record.source)
    assert knobs == pages_card.static_knobs(record.source, record.class_name)


def test_the_served_process_runs_each_matrix_product_on_one_thread():
    pytest.importorskip("threadpoolctl")
    # In a child process: the limit is process-wide, and this one's BLAS is left alone.
    code = (
        "from threadpoolctl import threadpool_info\n"
        "from spade_envs.web.server import one_blas_thread\n"
        "print(one_blas_thread(), sorted({i['num_threads'] for i in threadpool_info()"
        " if i['user_api'] == 'blas'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split("\n")[0] == "True [1]", done.stdout + done.stderr


def test_serve_limits_the_blas_threads_before_it_loads_anything(monkeypatch):
    from spade_envs.web import server as server_module
    from spade_envs.web.config import ServeConfig

    calls = []

    def stop(*args, **kwargs):
        calls.append("make_server")
        raise RuntimeError("stop here")

    monkeypatch.setattr(server_module, "one_blas_thread", lambda: calls.append("one thread"))
    monkeypatch.setattr(server_module, "make_server", stop)
    with pytest.raises(RuntimeError, match="stop here"):
        server_module.serve(ServeConfig(port=0), out=io.StringIO(), err=io.StringIO())
    assert calls == ["one thread", "make_server"]
