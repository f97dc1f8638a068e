"""The self-play trainer: one model designs environments, plays them, and learns from both
roles with GRPO.

```python
from spade_envs.trainer import SelfPlayTrainer, load_config

config = load_config("cpu-tiny", ["iterations=3"])
SelfPlayTrainer(config, "runs/demo").run()       # metrics.jsonl, checkpoints/, registry.db
```

- :mod:`.config`: :class:`SelfPlayConfig`, presets (``presets/*.toml``), ``--set`` overrides.
- :mod:`.loop`: :class:`SelfPlayTrainer` (self-play and fixed-pool modes, exact resume);
  :mod:`.setup`: what a run is built from (``RunComponents``: registry, memory, models,
  learner, metrics), built and closed in one place; :mod:`.stages`: the designer reward,
  failure counts and metrics of each stage.
- :mod:`.samples`, :mod:`.grpo`, :mod:`.learner`, :mod:`.adapters` (peft's LoRA): GRPO for
  both roles; :mod:`.models`: the trained and the generating model, weight pushes to vLLM.
- :mod:`.distributed`: torchrun helpers; :mod:`.checkpoint`, :mod:`.metrics`, :mod:`.report`.

Importing this package loads no torch; the names below load their modules on first use.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_LAZY = {
    "SelfPlayConfig": "config",
    "load_config": "config_io",
    "available_presets": "config_io",
    "ConfigError": "config",
    "SelfPlayTrainer": "loop",
    "TrainerError": "loop",
    "IterationFailedError": "stages",
    "GRPOConfig": "learner",
    "Learner": "learner",
    "Sample": "samples",
    "draw_report": "report",
    "read_metrics": "metrics",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY, globals())
