"""Running untrusted environment code in an isolated, killable child process.

``open_env(source)`` loads an environment module in a worker process (bubblewrap
namespaces, an unprivileged uid, seccomp, rlimits, per-call wall-clock timeouts)
and returns a proxy that is a real ``gymnasium.Env`` (or PettingZoo ``AECEnv`` for
games). Generated code runs nowhere else unless the caller asks for
``isolation="none"`` by name.
"""

from __future__ import annotations

from .config import SandboxConfig
from .env import SandboxedEnv, SandboxedGame, open_env, open_file, open_seed, step_all
from .isolation import SandboxWarning, capabilities, effective_layers
from .pool import WorkerPool, default_pool
from .process import Worker
from .vector import SandboxVectorEnv

__all__ = [
    "SandboxConfig",
    "SandboxedEnv",
    "SandboxedGame",
    "SandboxVectorEnv",
    "SandboxWarning",
    "Worker",
    "WorkerPool",
    "capabilities",
    "default_pool",
    "effective_layers",
    "open_env",
    "open_file",
    "open_seed",
    "step_all",
]
