"""What do the integrations cost beside a sandboxed step? Measured in one run.

Prints:
  1. the median step time of a sandboxed environment opened by the door (the baseline:
     what ``gym.make`` plays) and through OpenEnv's own client over a real server on
     127.0.0.1 (``spade-envs serve``'s WebSocket, the play sessions' executor and
     deadlines), each the median of 5 alternating blocks, and their ratio;
  2. with ``--trl``: one TRL GRPO step of ``examples/trl_grpo.py`` (SmolLM2, 2 plays) and
     the share of its wall time spent in environment calls (target < 1% beside the model);
  3. with ``--verifiers``: a verifiers 0.4 evaluation (``examples/verifiers_eval.py`` in
     ``.venv-verifiers``) of SmolLM2, served by our OpenAI-compatible server, on 4 tasks,
     and the share of its wall time spent in environment calls (target < 1%).

    python benchmarks/integration_overhead.py [--steps 400] [--trl] [--verifiers]
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACTION = r"\boxed{50}"
#: Alternating measurement blocks of each path.
BLOCKS = 5


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def door_steps(registry, env_id: str, steps: int) -> list[float]:
    from spade_envs.runtime import open_record

    env = open_record(registry.get(env_id))
    times, seed = [], 0
    try:
        env.reset(seed=seed)
        while len(times) < steps:
            started = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(ACTION)
            times.append(time.perf_counter() - started)
            if terminated or truncated:
                seed += 1
                env.reset(seed=seed)
    finally:
        env.close()
    return times


def openenv_steps(port: int, env_id: str, steps: int) -> list[float]:
    from openenv.core import GenericEnvClient

    base = f"http://127.0.0.1:{port}/api/v1/openenv/{env_id}"
    times, seed = [], 0
    with GenericEnvClient(base_url=base).sync() as client:
        client.reset(seed=seed)
        while len(times) < steps:
            started = time.perf_counter()
            result = client.step({"text": ACTION})
            times.append(time.perf_counter() - started)
            if result.done:
                seed += 1
                client.reset(seed=seed)
    return times


def transport(steps: int) -> None:
    from spade_envs.registry import Registry
    from spade_envs.runtime import register_seed
    from spade_envs.web.config import ServeConfig
    from spade_envs.web.server import make_server

    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/registry.db")
        env_id = register_seed(registry, "NumberGuess")
        server = make_server(ServeConfig(port=0, quiet=True, embedder="hashing"), registry=registry)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            door_steps(registry, env_id, 20), openenv_steps(server.port, env_id, 20)  # warm
            # Alternating blocks: a noisy machine slows both alike, not one.
            door, remote = [], []
            for _ in range(BLOCKS):
                door.append(_median_us(door_steps(registry, env_id, steps // BLOCKS)))
                remote.append(_median_us(openenv_steps(server.port, env_id, steps // BLOCKS)))
            door, remote = statistics.median(door), statistics.median(remote)
        finally:
            server.shutdown()
            server.server_close()
    print(f"{env_id}, {steps} steps, median per step:")
    print(f"  door (sandboxed, in this process's pool): {door:8.0f} us")
    print(f"  OpenEnv client -> spade-envs serve:       {remote:8.0f} us")
    print(f"  ratio: {remote / door:.2f}x (OpenEnv transport over a sandboxed step)")


def trl_share() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SPADE_REGISTRY_URL"] = f"sqlite:///{tmp}/registry.db"
        example = runpy.run_path(str(ROOT / "examples" / "trl_grpo.py"))
        started = time.perf_counter()
        summary = example["main"](
            ["--steps", "1", "--seeds", "1", "--generations", "2", "--out", f"{tmp}/out"]
        )
        wall = time.perf_counter() - started
    env = summary["spade/env_seconds"]
    print(
        f"TRL GRPO step (SmolLM2, {int(summary['spade/plays'])} plays): {wall:.1f} s wall, "
        f"environments {env:.2f} s = {100 * env / wall:.2f}% (target < 1%)"
    )


def verifiers_share() -> None:
    from spade_envs.llm import load_model
    from spade_envs.llm.server import serve
    from spade_envs.registry import Registry
    from spade_envs.runtime import register_seed

    vf_bin = ROOT / ".venv-verifiers" / "bin"
    if not (vf_bin / "python").exists():
        raise SystemExit("verifiers lives in .venv-verifiers: run `make .venv-verifiers` first.")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/registry.db"
        ids = [register_seed(Registry(url), n) for n in ("NumberGuess", "ModularEquation")]
        with load_model("smollm2") as model, serve(model) as server:
            ran = subprocess.run(
                [str(vf_bin / "python"), str(ROOT / "examples" / "verifiers_eval.py"), *ids]
                + ["--registry", url, "--base-url", f"{server.url}/v1", "--model", model.name]
                + ["--seeds", "2", "--max-turns", "4", "--max-tokens", "64", "--json"],
                env={**os.environ, "PATH": f"{vf_bin}:{os.environ['PATH']}"},
                capture_output=True,
                text=True,
                check=False,
            )
    if ran.returncode != 0:
        raise SystemExit(f"the verifiers evaluation failed:\n{ran.stderr[-3000:]}")
    summary = json.loads(ran.stdout.strip().splitlines()[-1])
    print(
        f"verifiers evaluation (SmolLM2, {summary['episodes']} episodes, "
        f"{int(summary['spade/failed'])} failed): {summary['wall_s']:.1f} s wall, "
        f"environments {summary['spade/env_seconds']:.2f} s = "
        f"{100 * summary['env_share']:.2f}% (target < 1%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--trl", action="store_true", help="also time a TRL GRPO step")
    parser.add_argument("--verifiers", action="store_true", help="also time a verifiers evaluation")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transport(args.steps)
    if args.trl:
        trl_share()
    if args.verifiers:
        verifiers_share()


if __name__ == "__main__":
    main()
