"""What the trainer loop tests share: a tiny random Llama saved as a model directory, a
designer that writes a valid environment now and then, and the run worker the resume
test starts (and kills) as a subprocess.

Usage of the worker, from the repository root (``--kill-at=<k>:<stage>`` makes it kill
itself with SIGKILL right after that stage of iteration ``k``, stage one of
:data:`KILL_POINTS`; under ``torchrun -m`` each process is one rank)::

    python -m tests.trainer.trainer_support MODEL_DIR RUN_DIR [--kill-at=K:STAGE] [--preset=P]
        [KEY=VALUE ...]
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spade_envs.llm.base import ChatModel, Completion, Message, SamplingParams

SPECIALS = ("<|im_start|>", "<|im_end|>", "<pad>")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer() -> Any:
    """A byte-level tokenizer (one token per byte, no merges) with a ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {char: i for i, char in enumerate(alphabet)}
    for special in SPECIALS:
        vocab[special] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<pad>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def save_tiny_llama(directory: str | Path, seed: int = 0) -> Path:
    """A 2-layer Llama with random weights and the byte tokenizer, saved with
    ``save_pretrained`` (what :func:`spade_envs.llm.load_model` loads as a directory)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    directory = Path(directory)
    tokenizer = byte_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16_384,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


ENV_TEMPLATE = '''\
"""Two hidden numbers, given by their sum and difference."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class {name}(TextEnv):
    skill = "math"
    description = (
        "Two whole numbers are hidden; the sum and the difference are shown. "
        "Answer the larger one{variant}."
    )
    max_turns = 3
    knobs = {{"upper": {upper}}}

    def _reset(self) -> str:
        self.a = self.rng.randint(1, self.upper)
        self.b = self.rng.randint(1, self.upper)
        return (
            f"The sum of two whole numbers is {{self.a + self.b}} and their difference is "
            f"{{abs(self.a - self.b)}}. Answer the larger number as \\\\boxed{{{{n}}}}."
        )

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == max(self.a, self.b):
            return "Correct!", 1.0, True
        return f"Not that one. Turns left: {{self.max_turns - self.turn}}.", 0.0, False

    def hint(self) -> str:
        return "Add the sum and the difference, then halve the result."

    def solution(self) -> list[str]:
        return [boxed(max(self.a, self.b))]
'''


def scripted_source(seed: int) -> str:
    """A valid environment whose name and details follow from ``seed``."""
    letters = "".join(chr(65 + (seed // 26**i) % 26) for i in range(6))
    variant = f" (round {seed % 997})"
    return ENV_TEMPLATE.format(name=f"SumDiff{letters}", variant=variant, upper=20 + seed % 50)


class ScriptedDesigner(ChatModel):
    """Answers the first designer prompt of each batch with a valid environment (named
    after the sampling seed) and everything else with the wrapped model, so a run with a
    random tiny model still registers environments and its designer groups have
    different rewards."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "scripted")

    def generate(
        self, conversations: Sequence[Sequence[Message]], params: SamplingParams | None = None
    ) -> list[Completion]:
        replies = self.inner.generate(conversations, params)
        first = conversations[0] if conversations else []
        if first and "Environment Designer" in str(first[0].get("content", "")):
            seed = params.seed if params is not None and params.seed is not None else 0
            text = f"```python\n{scripted_source(seed)}```\n"
            tokens = self.inner.tokenizer.encode(text, add_special_tokens=False)
            replies[0] = Completion(
                text=text,
                token_ids=tuple(tokens),
                finish_reason="stop",
                prompt_token_ids=replies[0].prompt_token_ids,
            )
        return replies

    def close(self) -> None:
        self.inner.close()


#: Settings of the resume runs: the cpu-test preset made cheaper still, on the tiny model.
RESUME_SETTINGS = (
    "iterations=2",
    "designer.max_tokens=8",
    "designer.novelty_threshold=0.001",
    "agent.max_tokens=6",
    "agent.plays=2",
    "eval.max_tokens=6",
    "grpo.max_seq_len=96",
    "grpo.lora_rank=0",
    "grpo.learning_rate=0.01",
)


#: Where a worker can kill itself (right after that stage of an iteration), and the trainer
#: method that ends the stage; ``metrics``: right after the iteration's metrics line is
#: written, before its checkpoint (what a crash between the two leaves behind).
KILL_POINTS = {
    "generate": "_design",
    "play": "_play",
    "update": "_push",
    "metrics": "write",
    "checkpoint": "_save",
}


def _killing_trainer(kill_at: str) -> type:
    """A :class:`SelfPlayTrainer` that SIGKILLs its own process right after the stage of
    ``kill_at`` (``<k>:<stage>``) of iteration ``k``: a crash at a chosen point, reached
    from the outside of the production code."""
    from spade_envs.trainer.loop import SelfPlayTrainer

    iteration, _, stage = kill_at.partition(":")
    if stage not in KILL_POINTS or not iteration.isdigit():
        raise SystemExit(f"--kill-at=<k>:<stage>, stage one of {sorted(KILL_POINTS)}: {kill_at!r}")

    class KillingTrainer(SelfPlayTrainer):
        current = 0

        def iteration(self, k: int) -> dict[str, Any]:
            self.current = k
            return super().iteration(k)

        def setup(self) -> None:
            super().setup()
            owner = self.parts.metrics if stage == "metrics" else self
            name = KILL_POINTS[stage]
            setattr(owner, name, self._then_die(getattr(owner, name)))

        def _then_die(self, method: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(method)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                out = method(*args, **kwargs)
                if self.current == int(iteration):
                    os.kill(os.getpid(), signal.SIGKILL)
                return out

            return wrapped

    return KillingTrainer


def run_worker(model_dir: str, run_dir: str, args: Sequence[str]) -> None:
    """Train a cpu-test run with the tiny model and the scripted designer (under torchrun,
    as one rank of the job); ``args``: ``--kill-at=K:STAGE`` and config overrides."""
    import torch

    from spade_envs.trainer.config_io import load_config
    from spade_envs.trainer.distributed import init_distributed, shutdown
    from spade_envs.trainer.loop import SelfPlayTrainer

    kill_at = [a.removeprefix("--kill-at=") for a in args if a.startswith("--kill-at=")]
    presets = [a.removeprefix("--preset=") for a in args if a.startswith("--preset=")]
    overrides = [a for a in args if not a.startswith(("--kill-at=", "--preset="))]
    trainer_class = _killing_trainer(kill_at[-1]) if kill_at else SelfPlayTrainer
    torch.set_num_threads(1)
    preset = presets[-1] if presets else "cpu-test"
    config = load_config(preset, [f"model.spec={model_dir}", *RESUME_SETTINGS, *overrides])
    dist = init_distributed()
    try:
        trainer = trainer_class(
            config, run_dir, dist=dist, wrap_generator=ScriptedDesigner, log=print
        )
        trainer.run()
    finally:
        shutdown()


if __name__ == "__main__":
    run_worker(sys.argv[1], sys.argv[2], sys.argv[3:])
