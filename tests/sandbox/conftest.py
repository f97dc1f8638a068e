"""Fixtures for sandbox tests: a private pool with tight, test-sized limits.

Every hostile program in these tests is bounded by itself (at most 50 forks,
2 GB of allocation, 10 s of CPU), so a sandbox bug fails a test instead of
taking the machine down.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from spade_envs.sandbox import SandboxConfig, WorkerPool, capabilities

TIGHT = SandboxConfig(memory_mb=512, cpu_seconds=10, call_timeout=3.0, load_timeout=5.0)


def env_source(
    reset: str = 'return "ready"',
    step: str = 'return "ok", 0.0, False',
    init: str = "pass",
    header: str = "",
) -> str:
    """A TextEnv module whose ``__init__``/``_reset``/``_step`` run the given code."""

    def body(code: str) -> str:
        return textwrap.indent(textwrap.dedent(code).strip("\n"), " " * 8)

    return "\n".join(
        [
            "from spade_envs import TextEnv",
            textwrap.dedent(header).strip("\n"),
            "",
            "class Hostile(TextEnv):",
            '    skill = "code"',
            '    description = "A hostile test environment."',
            "    max_turns = 20",
            "",
            "    def __init__(self, **kw):",
            "        super().__init__(**kw)",
            body(init),
            "",
            "    def _reset(self):",
            body(reset),
            "",
            "    def _step(self, action):",
            body(step),
            "",
            "    def hint(self):",
            '        return "none"',
            "",
            "    def solution(self):",
            '        return ["x"]',
            "",
        ]
    )


#: At most 50 forks, each child exiting at once: bounded even if every layer failed.
BOUNDED_FORK_LOOP = """
made = 0
for _ in range(50):
    try:
        pid = os.fork()
    except OSError as exc:
        return f"{type(exc).__name__} after {made}", 0.0, False
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    made += 1
return f"forked {made}", 0.0, False
"""


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(TIGHT, size=2) as p:
        yield p


# On a developer machine without bubblewrap/seccomp these tests skip; in CI (which
# installs both) they never skip, so a missing layer fails loudly there.
_IN_CI = bool(os.environ.get("CI"))
requires_bwrap = pytest.mark.skipif(
    not capabilities().bubblewrap and not _IN_CI, reason="bubblewrap is not usable on this machine"
)
requires_seccomp = pytest.mark.skipif(
    not capabilities().seccomp and not _IN_CI, reason="seccomp is not usable here"
)
requires_root = pytest.mark.skipif(
    not capabilities().root and not _IN_CI, reason="the uid drop applies when run as root"
)
