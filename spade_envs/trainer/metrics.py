"""Metrics of a training run: one flat JSON line per iteration, mirrored to TensorBoard.

``RUN_DIR/metrics.jsonl`` holds one JSON object per iteration with the fields of
:data:`METRIC_FIELDS` (numbers; ``eval_return`` is null on an iteration without an
evaluation, and the returns, regret and win rates are null when no play finished) plus
counts of the designer's rejection reasons (``reject_*``). The plays that failed are
counted by outcome (:data:`FAILURE_FIELDS`: ``failed_env_error``, ``failed_timeout``,
``failed_sandbox_crashed``, ``failed_model_error``; ``eval_failed`` for the evaluation)
and left out of every mean: no failure hides as a zero.
``RUN_DIR/tensorboard/`` gets every numeric field as a scalar under ``<group>/<field>``
when the ``tensorboard`` package is installed (``pip install 'spade-envs[train]'``);
without it the trainer warns once and writes the JSON lines only.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..error import SpadeError
from ..generator.outcomes import DesignerFailure

__all__ = [
    "FAILURE_FIELDS",
    "METRIC_FIELDS",
    "REJECT_FIELDS",
    "TIMING_FIELDS",
    "MetricsWriter",
    "read_metrics",
    "reject_field",
]

#: The fields every line has (the run directory contract).
METRIC_FIELDS = (
    "iteration",
    "designer_requested",
    "designer_registered",
    "designer_yield",
    "designer_reward",
    "designer_reward_se",
    "designer_trained",
    "envs_played",
    "plays",
    "plays_failed",
    "failed_env_error",
    "failed_timeout",
    "failed_sandbox_crashed",
    "failed_model_error",
    "failed_audit_divergence",
    "failed_audit_failed",
    "mean_regret",
    "mean_hint_gain",
    "win_rate",
    "agent_well_formed",
    "agent_groups_unequal",
    "agent_return_with_hint",
    "agent_return_without_hint",
    "eval_return",
    "eval_return_se",
    "eval_win_rate",
    "eval_plays",
    "eval_well_formed",
    "eval_turns",
    "eval_failed",
    "loss",
    "loss_agent",
    "loss_designer",
    "tokens_agent",
    "tokens_designer",
    "samples_agent",
    "samples_designer",
    "grad_norm",
    "clip_frac",
    "kl",
    "generated_tokens",
    "tokens_per_s",
    "train_tokens_per_s",
    "seconds_generate",
    "seconds_validate",
    "seconds_play",
    "seconds_audit",
    "audits",
    "audit_failures",
    "quarantined",
    "seconds_update",
    "weight_syncs",
    "seconds_weight_sync",
    "seconds_eval",
    "seconds_iteration",
)
#: Failed plays of the iteration, one field per outcome of
#: :data:`spade_envs.agent.failures.FAILURE_OUTCOMES` (``plays_failed`` is their sum).
FAILURE_FIELDS = tuple(f for f in METRIC_FIELDS if f.startswith("failed_"))
#: Fields that measure time: they differ between two runs that are otherwise the same.
TIMING_FIELDS = tuple(
    f for f in METRIC_FIELDS if f.startswith("seconds_") or f.endswith("tokens_per_s")
)
#: Fields renamed since runs were first written: old name -> new name. ``read_metrics``
#: gives old runs' lines the new names (``mean_raw_regret`` was the unfloored hint gain).
RENAMED_FIELDS = {"mean_raw_regret": "mean_hint_gain"}
#: The ``reject_*`` field each designer failure kind is counted under: the kinds that
#: say nothing about the code go to ``reject_other`` (the validator or registry failed),
#: a prompt that could not be built counts as the model's request failing.
_REJECT_OF: dict[DesignerFailure, str] = {
    DesignerFailure.PROMPT_ERROR: "reject_model_error",
    DesignerFailure.MODEL_ERROR: "reject_model_error",
    DesignerFailure.NO_CODE: "reject_no_code",
    DesignerFailure.TRUNCATED: "reject_truncated",
    DesignerFailure.BAD_FILLING: "reject_bad_filling",
    DesignerFailure.BROKEN_RELATION: "reject_broken_relation",
    DesignerFailure.INVALID: "reject_invalid",
    DesignerFailure.NOT_NOVEL: "reject_not_novel",
    DesignerFailure.VALIDATOR_ERROR: "reject_other",
    DesignerFailure.REGISTRY_ERROR: "reject_other",
}
#: Why designer attempts were rejected, as counted fields (derived from
#: :class:`~spade_envs.generator.outcomes.DesignerFailure`; ``reject_other`` last).
REJECT_FIELDS = tuple(sorted(dict.fromkeys(_REJECT_OF.values()), key=lambda f: f == "reject_other"))


def reject_field(failure: DesignerFailure | None) -> str:
    """The ``reject_*`` field a designer attempt's ``failure`` is counted under (an attempt
    that stopped without one goes to ``reject_other``)."""
    return "reject_other" if failure is None else _REJECT_OF[DesignerFailure(failure)]


def _group(name: str) -> str:
    if name.startswith(("seconds_", "tokens_per", "train_tokens", "generated")):
        return "time"
    if name.startswith(("loss", "grad", "clip", "kl", "tokens_", "samples_")):
        return "update"
    if name.startswith(("designer", "reject")):
        return "designer"
    if name.startswith("eval"):
        return "eval"
    if name.startswith(("failed_", "plays_failed")):
        return "failures"
    return "agent"


class MetricsWriter:
    """Appends metric lines to ``RUN_DIR/metrics.jsonl`` and TensorBoard scalars.

    Args:
        run_dir: The run directory.
        start_iteration: The last iteration already recorded (on resume): TensorBoard
            events of later steps left by a killed run are purged.
        tensorboard: Whether to write TensorBoard events (when the package is installed).
    """

    def __init__(self, run_dir: str | Path, *, start_iteration: int = 0, tensorboard: bool = True):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tb: Any = None
        if tensorboard:
            self._tb = _summary_writer(Path(run_dir) / "tensorboard", start_iteration + 1)

    @property
    def tensorboard(self) -> bool:
        """Whether TensorBoard events are written."""
        return self._tb is not None

    def write(self, record: Mapping[str, Any]) -> str:
        """Append one iteration's record; returns the JSON line written.

        Raises:
            SpadeError: A value is not a number, bool, string or None.
        """
        clean: dict[str, Any] = {}
        for key, value in record.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None  # JSON has no NaN
            if value is not None and not isinstance(value, (bool, int, float, str)):
                raise SpadeError(f"Metric {key!r} must be a number or string, got {value!r}.")
            clean[key] = value
        line = json.dumps(clean, sort_keys=False)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self._tb is not None:
            step = int(clean.get("iteration", 0))
            for key, value in clean.items():
                if key != "iteration" and isinstance(value, (int, float)) and value is not True:
                    self._tb.add_scalar(f"{_group(key)}/{key}", float(value), step)
            self._tb.flush()
        return line

    def text(self) -> str:
        """Everything written so far (for the checkpoint's copy)."""
        return self.path.read_text(encoding="utf-8") if self.path.exists() else ""

    def reset(self, text: str) -> None:
        """Replace the file with ``text`` (a checkpoint's copy, on resume)."""
        tmp = self.path.with_name(self.path.name + ".partial")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.path)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None


_WARNED = False


def _summary_writer(log_dir: Path, purge_step: int) -> Any:
    global _WARNED
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        if not _WARNED:
            warnings.warn(
                "tensorboard is not installed: metrics go to metrics.jsonl only. Install it "
                "with: pip install tensorboard",
                stacklevel=3,
            )
            _WARNED = True
        return None
    _wait_past_existing_events(log_dir)
    return SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)


_EVENTS_SECOND = re.compile(r"events\.out\.tfevents\.(\d+)\.")


def _wait_past_existing_events(log_dir: Path) -> None:
    """Wait (at most about a second) until a new events file sorts after the existing ones.

    TensorBoard reads a folder's event files in name order, and a name is the second it was
    created, the host, the pid and a per-process counter. A resumed writer created in the
    same second as the killed one, in one process, can sort first ("...9" after "...10"):
    TensorBoard then reads the old steps last and the purge drops the new ones.
    """
    seconds = [
        int(match.group(1))
        for path in (log_dir.iterdir() if log_dir.is_dir() else ())
        if (match := _EVENTS_SECOND.match(path.name))
    ]
    latest = max(seconds, default=None)
    if latest is None or latest - time.time() > 2:  # a clock set back: do not wait for it
        return
    while int(time.time()) <= latest:
        time.sleep(0.05)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` (or of ``RUN_DIR/metrics.jsonl``).

    Raises:
        SpadeError: The file is missing or a line is not a JSON object.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SpadeError(
            f"Cannot read metrics from {path}: {exc}. Pass a run directory written by "
            "`spade-envs train`."
        ) from exc
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise SpadeError(f"{path}:{number} is not JSON ({exc}).") from exc
        if not isinstance(record, dict):
            raise SpadeError(f"{path}:{number} is not a JSON object.")
        for old, new in RENAMED_FIELDS.items():
            if old in record:
                record.setdefault(new, record.pop(old))
        records.append(record)
    return records
