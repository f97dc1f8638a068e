"""The Reasoning Agent: a policy over the model clients, batched rollouts, hints, regret.

```python
from spade_envs.agent import RegretConfig, RolloutConfig, estimate_regret, rollout
```

- :mod:`.policy`: chat formatting (``\\boxed{}`` for text envs, tool schemas and
  ``<tool_call>`` for tool envs, one seat per chat for games), per-turn token records.
- :mod:`.rollout`: many plays of many environments at once, one model call per turn.
- :mod:`.regret`: matched hinted/unhinted plays, regret with its standard error,
  registry play statistics.
- :mod:`.rewards`: ``regret``, ``blend`` and ``learnability``, pure functions.
- :mod:`.failures`: failed plays counted by outcome (``env_error``, ``timeout``,
  ``sandbox_crashed``, ``model_error``), and the error for a run where every play failed.

Nothing here imports torch; the model you pass decides what runs.
"""

from __future__ import annotations

from .config import RolloutConfig, RolloutStats
from .episode import (
    END_OUTCOMES,
    FAILED_OUTCOMES,
    EnvTarget,
    Episode,
    PlaySpec,
    load_jsonl,
    matched_specs,
    resolve_envs,
    save_jsonl,
)
from .failures import (
    FAILURE_OUTCOMES,
    AllPlaysFailedError,
    FailureCounts,
    failure_outcome,
    play_failure,
)
from .policy import (
    ACTION_OUTCOMES,
    Policy,
    SeededParams,
    Turn,
    classify_action,
    system_prompt,
    with_hint,
)
from .regret import RegretConfig, RegretReport, RegretRow, estimate_regret, regret_rows
from .rewards import RegretEstimate, RewardInputError, blend, learnability, plateau, regret
from .rollout import RolloutEngine, rollout

__all__ = [
    "ACTION_OUTCOMES",
    "END_OUTCOMES",
    "FAILED_OUTCOMES",
    "FAILURE_OUTCOMES",
    "AllPlaysFailedError",
    "Episode",
    "EnvTarget",
    "FailureCounts",
    "PlaySpec",
    "Policy",
    "RegretConfig",
    "RegretEstimate",
    "RegretReport",
    "RegretRow",
    "RewardInputError",
    "RolloutConfig",
    "RolloutEngine",
    "RolloutStats",
    "SeededParams",
    "Turn",
    "blend",
    "classify_action",
    "estimate_regret",
    "failure_outcome",
    "learnability",
    "load_jsonl",
    "matched_specs",
    "plateau",
    "play_failure",
    "regret",
    "regret_rows",
    "resolve_envs",
    "rollout",
    "save_jsonl",
    "system_prompt",
    "with_hint",
]
