"""Self-play iteration: where the wall time of one iteration goes, and the bottleneck.

Runs the self-play trainer on a preset (default ``cpu-tiny``, the main job: SmolLM2-135M
on the CPU) in a scratch run directory and splits each iteration's wall time into

- generate: the designer's model calls,
- validate: the rest of the designer stage (static checks, sandboxed validation and
  fuzzing, novelty against memory, registration),
- play: the agent's plays with and without the hint (model calls and sandboxed
  environment steps),
- update: the GRPO step on both roles (and the weight push to vLLM, when used),
- eval: the plays on held-out seed environments,
- other: registry statistics, memory, metrics, checkpoint,

with each part's share of the iteration and the tokens per second of generation and of
the update, and the replay audits' share of the play time (target <= 10%). The
bottleneck is the largest share.

Two baselines are measured in the same run, after the iterations, with the trained model
as it is then (same process, same torch threads):

- generation: a plain Hugging Face ``model.generate`` of ``model.batch_size`` rows of
  ``designer.max_tokens`` new tokens each (no chat template, sampler, stop strings or
  environments). The loop's generation throughput is printed as the time it took over
  the time plain generation would take for the same tokens (1.00x: no overhead);
- update: one plain forward and backward pass of the learner's token log-probs (the
  same chunking and kept logits; no GRPO loss, no reference or behaviour passes, no
  optimizer step) over every sample of the iteration's update, cut to
  ``grpo.max_seq_len`` and micro-batched as the learner does. The update's time is
  printed over that. Without a KL term the learner skips samples whose advantage is 0,
  so the ratio can fall below 1 when few groups teach.

    python benchmarks/selfplay_iteration.py                       # cpu-tiny, 1 iteration
    python benchmarks/selfplay_iteration.py --iterations 2 --set designer.max_tokens=128
    python benchmarks/selfplay_iteration.py --preset cpu-test     # the test preset

Model loading and setup are timed apart (they happen once per run). Never collected by
pytest.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

STAGES = (
    ("generate", "seconds_generate"),
    ("validate", "seconds_validate"),
    ("play", "seconds_play"),
    ("update", "seconds_update"),
    ("eval", "seconds_eval"),
)


def split(record: dict) -> dict[str, float]:
    """Seconds of each stage of one metrics record, ``other`` being the remainder."""
    parts = {name: float(record.get(field) or 0.0) for name, field in STAGES}
    parts["other"] = max(0.0, float(record["seconds_iteration"]) - sum(parts.values()))
    return parts


def plain_generate_seconds(model: Any, tokenizer: Any, rows: int, new_tokens: int) -> float:
    """Baseline: seconds of one plain ``generate`` of ``rows`` x ``new_tokens`` tokens."""
    import torch

    ids = tokenizer("Write a long story about a robot.", return_tensors="pt").input_ids
    ids = ids.repeat(rows, 1).to(next(model.parameters()).device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    started = time.perf_counter()
    with torch.no_grad():
        model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=True,
            pad_token_id=pad,
        )
    return time.perf_counter() - started


def plain_train_seconds(learner: Any, samples: list[Any]) -> float:
    """Baseline: seconds of one plain forward and backward pass over ``samples``, cut and
    micro-batched as ``learner`` does (its gradients are cleared afterwards)."""
    from spade_envs.trainer.batches import pack_micro_batches, sample_rows, token_logprobs_class

    c = learner.config
    logprobs = token_logprobs_class()(learner.model, c.logprob_chunk)
    rows, _ = sample_rows(samples, c.max_seq_len)
    batches = pack_micro_batches(
        rows, c.micro_batch, c.micro_batch_tokens, learner.pad_token_id, learner.device
    )
    started = time.perf_counter()
    for batch in batches:
        logprobs(
            batch.input_ids, batch.attention_mask, batch.keep, batch.temperature
        ).sum().backward()
    seconds = time.perf_counter() - started
    learner.model.zero_grad(set_to_none=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu-tiny")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    args = parser.parse_args()

    import torch

    from spade_envs.trainer.config_io import load_config
    from spade_envs.trainer.loop import SelfPlayTrainer

    config = load_config(args.preset, [*args.overrides, f"iterations={args.iterations}"])
    os.environ.pop("SPADE_REGISTRY_URL", None)
    os.environ.pop("SPADE_CHECKPOINT_DIR", None)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = SelfPlayTrainer(config, tmp)
        started = time.perf_counter()
        trainer.setup()
        setup_seconds = time.perf_counter() - started
        learner = trainer.parts.learner
        updates: list[list[Any]] = []  # the samples of each iteration's update
        step = learner.step

        def recorded_step(samples: Any) -> dict[str, float]:
            updates.append(list(samples))
            return step(samples)

        learner.step = recorded_step
        try:
            records = [trainer.iteration(k) for k in range(1, args.iterations + 1)]
        finally:
            trainer.close()
        learner.step = step
        plain_tokens = config.model.batch_size * config.designer.max_tokens
        plain_generate = plain_generate_seconds(
            learner.model, trainer.parts.trainer_model.tokenizer, config.model.batch_size,
            config.designer.max_tokens,
        )  # fmt: skip
        plain_train = [plain_train_seconds(learner, samples) for samples in updates]
    print(
        f"preset {args.preset}: {config.model.spec}, torch threads {torch.get_num_threads()}, "
        f"{os.cpu_count()} CPUs; setup (model load, registry, sandbox) {setup_seconds:.1f} s"
    )
    names = [name for name, _ in STAGES] + ["other"]
    head = f"{'iter':>4} {'total s':>8} " + " ".join(f"{n:>14}" for n in names)
    print(head)
    print("-" * len(head))
    totals = dict.fromkeys(names, 0.0)
    for record in records:
        parts = split(record)
        total = float(record["seconds_iteration"])
        cells = " ".join(f"{parts[n]:>7.1f} ({parts[n] / total:>4.0%})" for n in names)
        print(f"{record['iteration']:>4} {total:>8.1f} {cells}")
        for name in names:
            totals[name] += parts[name]
    whole = sum(totals.values())
    print("-" * len(head))
    mean = " ".join(f"{totals[n] / len(records):>7.1f} ({totals[n] / whole:>4.0%})" for n in names)
    print(f"{'mean':>4} {whole / len(records):>8.1f} {mean}")
    plain_rate = plain_tokens / plain_generate
    print(
        f"baselines: plain generate {plain_tokens} tokens ({config.model.batch_size} x "
        f"{config.designer.max_tokens}) at {plain_rate:.1f}/s; plain forward+backward of each "
        "update's samples"
    )
    for record, plain in zip(records, plain_train):
        update, rate = float(record["seconds_update"]), float(record["tokens_per_s"])
        nan = float("nan")
        print(
            f"iteration {record['iteration']}: generated {record['generated_tokens']} tokens at "
            f"{rate:.1f}/s = {plain_rate / rate if rate else nan:.2f}x the "
            f"time of plain generate; update on {record['tokens_agent']} agent + "
            f"{record['tokens_designer']} designer tokens at "
            f"{record['train_tokens_per_s']:.1f}/s in {update:.1f} s = "
            f"{update / plain if plain else nan:.2f}x "
            f"a plain forward+backward ({plain:.1f} s)"
        )
    for record in records:
        play, audit = float(record["seconds_play"]), float(record.get("seconds_audit") or 0.0)
        share = audit / play if play > 0 else 0.0
        print(
            f"iteration {record['iteration']}: {record.get('audits', 0)} replay audits took "
            f"{audit:.2f} s = {share:.1%} of the play time {play:.1f} s (target <= 10%); "
            f"{record.get('quarantined', 0)} version(s) quarantined"
        )
    bottleneck = max(totals, key=totals.get)
    print(f"bottleneck: {bottleneck} ({totals[bottleneck] / whole:.0%} of the iteration time)")


if __name__ == "__main__":
    main()
