"""The SkyPilot task files: SkyPilot's own schema accepts them, and their ``run`` works.

SkyPilot lives in ``.venv-sky`` (its click pin clashes with the Hugging Face stack), so
the schema checks run ``sky.Task.from_yaml`` there in a subprocess, all files in one
call. In CI a missing ``.venv-sky`` fails these tests (``.ci/run`` builds it); locally
they skip with the command that builds it.

The end-to-end tests run each task's ``run`` script with bash on this machine, with the
variables SkyPilot would set on each node (one CPU "GPU" per node), the ``cpu-test``
preset on the trainer tests' tiny model, a tmp directory as the checkpoint bucket and a
tmp SQLite registry: one node, then a recovery on an empty node; and two nodes at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spade_envs.trainer import launch as L

REPO = Path(__file__).resolve().parents[2]
SKY_PYTHON = REPO / ".venv-sky" / "bin" / "python"
TASKS = sorted(L.SKY_DIR.glob("*.yaml"))
POOL_TASK = L.SKY_DIR / "pool" / "generation-pool.yaml"

# Runs in .venv-sky: parse every file given, report what SkyPilot made of it (or its error).
VALIDATE = r"""
import json, sys
import sky

out = {}
for path in sys.argv[1:]:
    try:
        task = sky.Task.from_yaml(path)
    except Exception as exc:
        out[path] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        continue
    (res,) = task.resources
    out[path] = {
        "ok": True,
        "name": task.name,
        "num_nodes": task.num_nodes,
        "accelerators": res.accelerators,
        "use_spot": res.use_spot,
        "cloud": str(res.cloud) if res.cloud else None,
        "job_recovery": res.job_recovery,
        "mounts": {k: [v.name, v.mode.value] for k, v in task.storage_mounts.items()},
        "envs": dict(task.envs),
        "secret_refs": [r.name for r in task.managed_secret_refs],
        "workdir": task.workdir,
        "ports": res.ports,
        "service": None if task.service is None else {
            "replicas": task.service.min_replicas,
            "probe": task.service.readiness_path,
        },
    }
print("RESULT " + json.dumps(out))
"""

# Runs in .venv-sky: parse argv with the real `sky` CLI (no call is made).
PARSE_CLI = r"""
import json, sys
from sky.client.cli import command

def parse(args):
    ctx = command.cli.make_context("sky", list(args))
    group = command.cli
    while True:
        name, cmd, rest = group.resolve_command(ctx, ctx.protected_args + ctx.args)
        ctx = cmd.make_context(name, rest, parent=ctx)
        if not hasattr(cmd, "resolve_command"):
            return ctx.params
        group = cmd

out = []
for args in json.loads(sys.argv[1]):
    try:
        params = parse(args)
        out.append({"ok": True, "params": {k: v for k, v in params.items() if v}})
    except Exception as exc:
        out.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
print("RESULT " + json.dumps(out, default=list))
"""


def sky_python() -> Path:
    if SKY_PYTHON.is_file():
        return SKY_PYTHON
    message = f".venv-sky is missing: build it with `{L.SKY_INSTALL}` in {REPO}"
    if os.environ.get("CI"):
        pytest.fail(message + " (.ci/run does this)")
    pytest.skip(message)


def run_in_sky(script: str, *args: str, home: Path) -> object:
    # SkyPilot writes ~/.sky; keep it in tmp. The cwd is the checkout (`workdir: .`).
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "SPADE_REGISTRY_URL": "x"}
    proc = subprocess.run(
        [str(sky_python()), "-c", script, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def broken(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """SkyPilot's verdict on the shipped files, a rendered one, and deliberately broken ones."""
    tmp = tmp_path_factory.mktemp("sky")
    files = {f"shipped:{p.name}": p for p in TASKS}
    files["pool"] = POOL_TASK

    presets = tmp / "presets"
    presets.mkdir()
    (presets / "multinode.toml").write_text("")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(L, "PRESET_DIR", presets)
        config = L.LaunchConfig(
            preset="multinode", nodes=4, gpus="A100:4", cloud="gcp", spot=True,
            envs=("EXTRA=1",), bucket="my-ckpts", name="exp-1", workdir=REPO,
        )  # fmt: skip
        _, text = L.render_task(config)
    files["rendered"] = tmp / "rendered.yaml"
    files["rendered"].write_text(text)

    one = (L.SKY_DIR / "train-1node.yaml").read_text()
    bad = {
        "bad:restarts": broken(one, "max_restarts_on_errors: 3", "max_restarts_on_errors: -1"),
        "bad:mode": broken(one, "mode: MOUNT", "mode: MOUNTED"),
        "bad:field": broken(one, "num_nodes: 1", "num_node: 1"),
        "bad:gpus": broken(one, "accelerators: H100:8", "accelerators: H100:eight"),
    }
    for key, content in bad.items():
        files[key] = tmp / f"{key.replace(':', '-')}.yaml"
        files[key].write_text(content)
    result = run_in_sky(VALIDATE, *map(str, files.values()), home=tmp)
    return {key: result[str(path)] for key, path in files.items()}


@pytest.mark.parametrize("name", [p.name for p in TASKS])
def test_shipped_task_passes_skypilot_schema(validated, name):
    task = validated[f"shipped:{name}"]
    assert task["ok"], task.get("error")
    assert task["accelerators"] == {"H100": 8}
    assert task["mounts"] == {"/checkpoints": ["spade-envs-checkpoints", "MOUNT"]}
    assert task["job_recovery"]["max_restarts_on_errors"] >= 1
    assert task["job_recovery"]["strategy"]
    # The registry URL is a secret filled at launch, never a value in the file.
    assert task["secret_refs"] == ["SPADE_REGISTRY_URL"]
    assert "SPADE_REGISTRY_URL" not in task["envs"]
    assert task["workdir"] == "."


def test_the_generation_pool_is_a_service_on_the_trainers_bucket(validated):
    pool = validated["pool"]
    assert pool["ok"], pool.get("error")
    assert pool["service"] == {"replicas": 2, "probe": "/health"} and pool["ports"] == ["8000"]
    # The exchange directory lies on the bucket the training tasks mount at the same path,
    # and is the one the multinode-pool preset writes adapters into.
    train = validated["shipped:train-multinode.yaml"]
    assert pool["mounts"] == train["mounts"] == {
        "/checkpoints": ["spade-envs-checkpoints", "MOUNT"]
    }
    from spade_envs.trainer.config_io import load_config

    preset = load_config("multinode-pool", [])
    assert preset.model.backend == "vllm-server"
    assert pool["envs"]["EXCHANGE_DIR"] == preset.model.exchange_dir
    assert pool["envs"]["MAX_LORA_RANK"] == str(preset.grpo.lora_rank)


def test_the_two_tasks_differ_only_in_scale(validated):
    single = validated["shipped:train-1node.yaml"]
    multi = validated["shipped:train-multinode.yaml"]
    assert (single["num_nodes"], single["envs"]["PRESET"]) == (1, "gpu-8x")
    assert (multi["num_nodes"], multi["envs"]["PRESET"]) == (2, "multinode")
    a, b = (yaml.safe_load(p.read_text()) for p in TASKS)
    assert (a["setup"], a["run"], a["file_mounts"]) == (b["setup"], b["run"], b["file_mounts"])


def test_rendered_task_passes_skypilot_schema_with_the_overrides(validated):
    task = validated["rendered"]
    assert task["ok"], task.get("error")
    assert (task["name"], task["num_nodes"]) == ("exp-1", 4)
    assert task["accelerators"] == {"A100": 4}
    assert task["cloud"] == "GCP" and task["use_spot"] is True
    assert task["mounts"] == {"/checkpoints": ["my-ckpts", "MOUNT"]}
    assert task["envs"]["EXTRA"] == "1" and task["envs"]["RUN_NAME"] == "exp-1"
    assert task["workdir"] == str(REPO)


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("bad:restarts", "max_restarts_on_errors"),
        ("bad:mode", "MOUNTED"),
        ("bad:field", "num_node"),
        ("bad:gpus", "eight"),
    ],
)
def test_skypilot_rejects_a_broken_task(validated, key, field):
    """The schema check can fail: SkyPilot refuses each broken copy, naming the problem."""
    verdict = validated[key]
    assert not verdict["ok"]
    assert field in verdict["error"]


def test_launcher_commands_parse_with_the_real_sky_cli(presets_dir, tmp_path):
    """The argv the launcher builds is what the real `sky` CLI accepts (and a typo is not)."""
    commands = []
    for managed, detach in [(True, False), (True, True), (False, False)]:
        config = L.LaunchConfig(
            preset="gpu-8x", managed=managed, detach=detach, name="exp-2", workdir=REPO
        )
        plan = L.plan_launch(config, out_dir=tmp_path)
        commands.append(list(plan.command[1:]))
    task = str(tmp_path / "exp-2.yaml")
    commands.append(["jobs", "launch", "--yes", "--no-such-flag", task])
    parsed = run_in_sky(PARSE_CLI, json.dumps(commands), home=tmp_path)
    managed, detached, unmanaged, bogus = parsed
    for result in (managed, detached, unmanaged):
        assert result["ok"], result
        # `--secret NAME` took the value from sky's environment, as the launcher relies on.
        assert result["params"]["secret"] == [["SPADE_REGISTRY_URL", "x"]]
        assert result["params"]["entrypoint"] == [task]
        assert result["params"]["yes"] is True
    assert managed["params"]["name"] == "exp-2" and "detach_run" not in managed["params"]
    assert detached["params"]["detach_run"] is True
    assert unmanaged["params"]["cluster"] == "exp-2"
    assert not bogus["ok"] and "--no-such-flag" in bogus["error"]


@pytest.fixture
def presets_dir(tmp_path, monkeypatch):
    directory = tmp_path / "presets"
    directory.mkdir()
    (directory / "gpu-8x.toml").write_text("")
    monkeypatch.setattr(L, "PRESET_DIR", directory)
    return directory


def test_task_presets_exist_in_the_trainer():
    """The presets the task files default to are shipped by the trainer."""
    for path in TASKS:
        preset = yaml.safe_load(path.read_text())["envs"]["PRESET"]
        assert preset in L.available_presets(), f"{path.name}: preset {preset!r} is not shipped"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from .trainer_support import save_tiny_llama

    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "model")


def node_env(task: dict, tmp: Path, model: Path, *, rank: int, nodes: int, port: int, args: str):
    """What SkyPilot sets on node ``rank`` (one device each), plus the local stand-ins:
    a tmp directory as the bucket, a tmp SQLite registry, this venv as the node's venv,
    and the tiny model with the cheap settings the trainer's own resume tests use."""
    from .trainer_support import RESUME_SETTINGS

    sets = " ".join(f"--set {s}" for s in [f"model.spec={model}", *RESUME_SETTINGS])
    env = {**os.environ, **{k: str(v) for k, v in task["envs"].items()}}
    env.pop("SPADE_CHECKPOINT_DIR", None)
    env.update(
        SKYPILOT_NUM_NODES=str(nodes),
        SKYPILOT_NODE_RANK=str(rank),
        SKYPILOT_NODE_IPS="127.0.0.1\n" * nodes,
        SKYPILOT_NUM_GPUS_PER_NODE="1",
        PRESET="cpu-test",
        RUN_NAME="local",
        RUN_DIR=str(tmp / f"run-node{rank}"),
        CHECKPOINT_MOUNT=str(tmp / "bucket"),
        SPADE_REGISTRY_URL=f"sqlite:///{tmp / 'registry.db'}",
        SPADE_VENV=sys.prefix,
        MASTER_PORT=str(port),
        SPADE_TRAIN_ARGS=f"{sets} {args}",
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",
    )
    return env


def run_nodes(path: Path, tmp: Path, model: Path, *, nodes: int, args: str) -> list[str]:
    """Run the task's `run` script once per node, all at once; return each node's stdout."""
    task = yaml.safe_load(path.read_text())
    port = free_port()
    procs = [
        subprocess.Popen(
            ["bash", "-c", task["run"]],
            cwd=REPO,
            env=node_env(task, tmp, model, rank=rank, nodes=nodes, port=port, args=args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(nodes)
    ]
    outputs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=600)
        finally:
            proc.kill()
        assert proc.returncode == 0, (out[-3000:], err[-5000:])
        outputs.append(out + err)
    return outputs


def iterations(metrics: Path) -> list[int]:
    return [json.loads(line)["iteration"] for line in metrics.read_text().splitlines()]


@pytest.mark.slow
def test_single_node_run_trains_then_recovers_from_the_bucket(tiny_model, tmp_path):
    """The single-node task's `run`, then the same `run` on a "new node" (empty run
    directory) as a managed-job recovery would start it: it resumes from the bucket."""
    path = L.SKY_DIR / "train-1node.yaml"
    (first,) = run_nodes(path, tmp_path, tiny_model, nodes=1, args="--iterations 1")
    assert "spade-envs: node 0 of 1, 1 process(es), head 127.0.0.1" in first
    checkpoints = tmp_path / "bucket" / "local" / "checkpoints"
    assert sorted(p.name for p in checkpoints.glob("iter-*")) == ["iter-0001"]
    assert iterations(tmp_path / "run-node0" / "metrics.jsonl") == [1]
    # The run directory's files were copied next to the checkpoints, without checkpoints.
    copied = tmp_path / "bucket" / "local" / "run"
    assert iterations(copied / "metrics.jsonl") == [1]
    assert (copied / "config.toml").is_file() and not (copied / "checkpoints").exists()

    shutil.rmtree(tmp_path / "run-node0")  # the recovered job lands on a fresh machine
    (second,) = run_nodes(path, tmp_path, tiny_model, nodes=1, args="--iterations 2")
    assert f"from {checkpoints / 'iter-0001'}" in second
    assert sorted(p.name for p in checkpoints.glob("iter-*")) == ["iter-0001", "iter-0002"]
    assert iterations(tmp_path / "run-node0" / "metrics.jsonl") == [1, 2]
    assert iterations(copied / "metrics.jsonl") == [1, 2]


@pytest.mark.slow
def test_multinode_run_joins_two_local_nodes_into_one_job(tiny_model, tmp_path):
    """The multi-node task's `run` on two "nodes" of this machine: torchrun gets the node
    count, rank and head address from the SkyPilot variables and forms one 2-process job."""
    path = L.SKY_DIR / "train-multinode.yaml"
    head, worker = run_nodes(path, tmp_path, tiny_model, nodes=2, args="--iterations 1")
    assert "spade-envs: node 0 of 2, 1 process(es), head 127.0.0.1" in head
    assert "spade-envs: node 1 of 2, 1 process(es), head 127.0.0.1" in worker
    assert re.search(r"run \S+: selfplay, .*, 2 process\(es\)", head)  # the trainer's world
    checkpoints = tmp_path / "bucket" / "local" / "checkpoints"
    assert sorted(p.name for p in checkpoints.glob("iter-*")) == ["iter-0001"]
    assert iterations(tmp_path / "run-node0" / "metrics.jsonl") == [1]
    # Only the head node copies the run directory to the bucket.
    assert iterations(tmp_path / "bucket" / "local" / "run" / "metrics.jsonl") == [1]
    assert not (tmp_path / "run-node1" / "metrics.jsonl").exists()
