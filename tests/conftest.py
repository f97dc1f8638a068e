"""Shared test settings: no hub downloads, a Hypothesis profile for CI, and registry
databases on SQLite and PostgreSQL (127.0.0.1:5432, trust auth)."""

from __future__ import annotations

import ast
import os
import sys
import uuid

import pytest
from hypothesis import HealthCheck, settings

from spade_envs.core import pyparse

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# CPython 3.11's AST constructor is not thread-safe (gh-106905, see spade_envs.core.pyparse,
# whose lock every parse in the package holds). Tests run browsers and validations in
# threads of the pytest process, and pytest parses test files in the main thread to report
# a failure: once that parse met a server thread's, pytest raised "SystemError: AST
# constructor recursion depth mismatch" instead of reporting, and xdist lost the worker and
# ended the run. Every ast.parse in the test process holds the package's lock too.
_UNLOCKED_PARSE = ast.parse


def _locked_parse(*args, **kwargs):
    with pyparse.PARSE_LOCK:  # looked up each call: a forked child gets a fresh lock
        return _UNLOCKED_PARSE(*args, **kwargs)


ast.parse = _locked_parse
# As many xdist workers as cores (`make test`: two on two): torch's default of one OpenMP
# thread per core puts two spinning threads per core whenever both workers run a model
# (the SmolLM2 designer tests took 7% longer so). Set before anything imports torch, and
# inherited by the processes the tests start; a test may still ask for more threads.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS >= (os.cpu_count() or 1):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
if _WORKERS > 1:
    # vLLM's CPU engine binds its OpenMP threads itself ("auto": the same cores in every
    # process, one kept for its scheduler); two xdist workers' engines would share them.
    # Each worker's engines get a share of their own (`make test-vllm` runs two workers).
    _CORES = sorted(os.sched_getaffinity(0))
    _SHARE = max(1, len(_CORES) // _WORKERS)
    _INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    _MINE = _CORES[(_INDEX * _SHARE) % len(_CORES) :][:_SHARE]
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(map(str, _MINE)))

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("default")

ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def _admin(statement: str) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        with psycopg.connect(ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(statement)
    except psycopg.Error:
        return False
    return True


@pytest.fixture(params=["sqlite", "postgresql"])
def registry_url(request, tmp_path):
    """A fresh, empty registry database; PostgreSQL ones are dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'registry.db'}"
        return
    name = f"spade_test_{uuid.uuid4().hex[:12]}"
    if not _admin(f'CREATE DATABASE "{name}"'):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL at 127.0.0.1:5432 is required in CI (.ci/run starts it)")
        pytest.skip("no PostgreSQL server at 127.0.0.1:5432")
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: xdist groups (``make test`` uses ``--dist loadgroup``): one worker runs a group's tests
#: one after the other. Ungrouped tests go to whichever worker is free, so a module-scoped
#: fixture is built once per worker that gets one of its tests: modules whose fixtures
#: cost seconds (torchrun runs, a finished trainer run) are grouped to build them once.
_GROUPS = {
    # Tests that validate many environments at once (the suite imports) and the validator
    # corpus, whose cases are timed: the imports never starve the timed cases.
    "tests/suites/": "heavy-validation",
    "tests/validation/test_corpus.py": "heavy-validation",
    "tests/trainer/test_distributed.py": "torchrun-runs",
    "tests/trainer/test_loop.py": "trainer-runs",
    "tests/validation/test_spade_dialect.py": "spade-dialect",
    # The tests of the real vLLM engine (`make test-vllm`, two workers) in two halves of
    # about equal time: the tests of the session's engine (and of a LoRA engine); the
    # tests of one `vllm serve` (the generation pool's, which the OpenAI client's tests
    # share) then the cpu-vllm preset's self-play. Two groups, so xdist hands out nothing
    # else.
    "tests/llm/test_vllm.py": "vllm-engine",
    "tests/llm/test_vllm_schema.py": "vllm-engine",
    "tests/trainer/test_vllm_sync.py": "vllm-engine",
    "tests/trainer/test_vllm_pool.py": "vllm-serve-selfplay",
    "tests/llm/test_vllm_serve.py": "vllm-serve-selfplay",
    "tests/trainer/test_vllm_selfplay.py": "vllm-serve-selfplay",
}


# tryfirst: xdist's own hook reads the xdist_group marks into the node IDs it sends to the
# controller; a mark added after it is never seen and the group is silently split.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        for part, group in _GROUPS.items():
            if part in path:
                item.add_marker(pytest.mark.xdist_group(group))
                break


_LOADGROUP_BROKEN = (
    "this pytest ({}) and pytest-xdist do not group --dist loadgroup (pytest-xdist#1386): "
    "install the pinned dev extra: .venv/bin/pip install -e '.[dev]'"
)


def pytest_configure(config):
    # xdist groups by a suffix it writes into each node ID; pytest 9.2's node IDs ignore
    # that write and the group splits without a word. Said here, on the controller, because
    # a worker's error reaches the terminal only as xdist's INTERNALERROR.
    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    import xdist

    xdist_version = tuple(int(part) for part in xdist.__version__.split(".")[:2])
    if pytest.version_tuple[:2] >= (9, 2) and xdist_version <= (3, 8):
        raise pytest.UsageError(_LOADGROUP_BROKEN.format(pytest.__version__))


def pytest_collection_finish(session):
    # The same, checked where it happens, for any later pair that breaks it.
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(
        session.config.option, "loadgroup", False
    ):
        return
    for item in session.items:
        mark = item.get_closest_marker("xdist_group")
        if mark and not item.nodeid.endswith("@" + mark.args[0]):
            raise pytest.UsageError(_LOADGROUP_BROKEN.format(pytest.__version__))


@pytest.fixture(scope="session")
def smollm2_hf():
    """The packaged SmolLM2 as a Hugging Face directory (converted once per machine)."""
    from spade_envs.llm import smollm2_hf_dir

    from .model_support import model_cache

    return smollm2_hf_dir(model_cache())


@pytest.fixture(scope="session")
def vllm_engine(smollm2_hf, tmp_path_factory):
    """One real vLLM engine (float32, see ``vllm_support.ENGINE``) for the vLLM tests of a
    run: starting one costs half a minute on a small CPU. Tests that change its weights
    put the base weights back first.

    It serves an untied copy of SmolLM2 (which ties its embeddings), so these tests push
    weights the way they go to an untied model; the trainer's test (cpu-vllm) takes the
    tied model's path."""
    from spade_envs.llm import VLLMChatModel
    from spade_envs.llm.vllm_backend import _write_untied_copy

    from .vllm_support import ENGINE

    untied = tmp_path_factory.mktemp("smollm2-untied")
    _write_untied_copy(smollm2_hf, untied)
    model = VLLMChatModel(str(untied), name="smollm2", **ENGINE)
    assert model._weights_dir is None  # not tied: no copy of its own
    yield model
    model.close()


@pytest.fixture(scope="session")
def vllm_exchange(tmp_path_factory):
    """The generation pool's exchange directory (where pushed LoRA adapters go)."""
    return tmp_path_factory.mktemp("exchange")


@pytest.fixture(scope="session")
def vllm_pool(tmp_path_factory, smollm2_hf, vllm_exchange):
    """One real ``vllm serve`` of SmolLM2 as ``smollm2`` on 127.0.0.1, started by the
    shipped pool task's own ``run`` script (sky/pool/generation-pool.yaml) with the
    variables SkyPilot would set and a CPU's engine options: runtime LoRA loading, and the
    filesystem resolver reading the exchange directory. The pool's tests push adapters to
    it; the OpenAI client's tests ask for the base model (a server's start costs a minute
    of a small CPU, so they share it)."""
    import yaml

    from .vllm_support import CPU_SERVER_ARGS, POOL_TASK, free_port, serving

    task = yaml.safe_load(POOL_TASK.read_text(encoding="utf-8"))
    port = free_port()
    env = {
        **{k: str(v) for k, v in task["envs"].items()},
        "MODEL": str(smollm2_hf),
        "SERVED_NAME": "smollm2",
        "TENSOR_PARALLEL": "1",
        "MAX_LORA_RANK": "8",
        "EXCHANGE_DIR": str(vllm_exchange),
        "VLLM_PYTHON": sys.executable,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "VLLM_EXTRA_ARGS": " ".join(CPU_SERVER_ARGS),
    }
    log = tmp_path_factory.mktemp("vllm-pool") / "serve.log"
    with serving(["bash", "-c", task["run"]], port, log, env) as url:
        yield url
