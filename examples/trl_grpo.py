"""Train SmolLM2 with TRL's GRPOTrainer on two registry environments, on the CPU.

    python examples/trl_grpo.py [--envs spade/NumberGuess-v1 spade/ModularEquation-v1]
        [--steps 2] [--hint] [--out runs/trl-example]

Each play is sandboxed (the same door as ``gym.make``); the model calls the tool ``act``
once per move. Prints TRL's metrics per step with our play counts (``spade/plays``,
``spade/wins``, ``spade/failed_<kind>``) and the pinned versions it trained on.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=["NumberGuess", "ModularEquation"])
    parser.add_argument("--seeds", type=int, default=2, help="reset seeds per environment")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--hint", action="store_true", help="give every play the hint")
    parser.add_argument("--generations", type=int, default=4, help="plays per GRPO group")
    parser.add_argument(
        "--max-completion-length", type=int, default=96, help="tokens of all turns of a play"
    )
    parser.add_argument("--out", default="runs/trl-example")
    args = parser.parse_args(argv)

    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from spade_envs.integrations.trl import (
        environment_factory,
        play_counts_callback,
        registry_dataset,
        tool_calling_tokenizer,
    )
    from spade_envs.llm import smollm2_hf_dir
    from spade_envs.registry.shared import shared_registry
    from spade_envs.runtime import register_seed
    from spade_envs.seeds import seed_names

    registry = shared_registry()
    for name in args.envs:  # packaged seeds are registered on first use
        if name in seed_names():
            register_seed(registry, name)
    factory = environment_factory(args.envs, hint=args.hint, registry=registry)
    dataset = registry_dataset(factory, range(args.seeds))

    path = str(smollm2_hf_dir())
    tokenizer = tool_calling_tokenizer(AutoTokenizer.from_pretrained(path, padding_side="left"))
    model = AutoModelForCausalLM.from_pretrained(path)
    config = GRPOConfig(
        output_dir=args.out,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=4,
        max_steps=args.steps,
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=dataset,
        environment_factory=factory,
        peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]),
        callbacks=[play_counts_callback(factory)],
    )
    trainer.train()
    summary = {
        "pins": {env_id: p.sha256 for env_id, p in factory.pins.items()},
        **factory.counts.metrics(),
        "log": trainer.state.log_history,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "log"}, indent=2))
    return summary


if __name__ == "__main__":
    main()
