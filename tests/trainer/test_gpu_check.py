"""``benchmarks/gpu_check.py`` stays ready for a GPU machine: its CPU smoke run (the same
code, a tiny model) finishes and reports every part, the sharded resume exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_check_smoke_run_reports_every_part(tmp_path):
    command = [
        sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--scale", "tiny",
        "--device", "cpu", "--memory-model", "tiny", "--samples", "8", "--repeats", "1",
        "--batch", "2", "--new-tokens", "4",
    ]  # fmt: skip
    env = {**os.environ, "OUT": str(tmp_path), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["update_tokens_per_s"] > 0 and result["generate_batched_vs_single"] > 0
    assert [r["logprob_chunk"] for r in result["memory"]] == [0, 32]
    for row in result["memory"]:
        assert 0.85 <= row["predicted_vs_measured"] <= 1.15, row
    assert result["sharded_resume_exact"] is True
    assert result["sharded_resume_max_difference"] == 0.0
