"""The GRPO learner: one optimiser step of a Hugging Face causal LM on a batch of samples.

One :meth:`Learner.step` does, in order:

1. group advantages per ``(role, group)`` (over the samples of every rank when the job is
   data-parallel, so a group split across ranks is normalised as a whole);
2. truncate each sample to ``max_seq_len`` by dropping tokens from the left of its
   prompt (the completion is what is learned, so it is kept);
3. sort by length and pack micro-batches (right padding, attention mask), so padding
   stays small: ``micro_batch`` rows each, and with ``micro_batch_tokens`` no more
   padded tokens than that;
4. fill in missing behaviour log-probs and, with ``kl_coef > 0``, reference log-probs
   (no gradient, before any weight changes);
5. forward + backward per micro-batch, each scaled so the sum over micro-batches (and
   ranks) is the token mean over the whole batch;
6. clip the gradient norm and take one AdamW step (``epochs`` times over the batch).

Only completion positions reach the loss: the model is asked for logits from the first
position that predicts a completion token onward (``logits_to_keep``), and a mask removes
prompt and padding positions that remain in that window.

**Temperature.** A reply sampled at temperature ``T`` comes from the behaviour policy
``softmax(logits / T)``, so every log-prob of a sample (behaviour, current policy, KL
reference) is ``log_softmax(logits / T)`` at its tokens, with the sample's own
:attr:`~spade_envs.trainer.samples.Sample.temperature`, scaled per row (a micro-batch may
mix temperatures). The backends record log-probs at temperature 1 (the raw distribution):
they are reused as the behaviour log-probs only for samples drawn at ``T == 1``; for any
other temperature the learner computes the behaviour log-probs itself, under ``T``,
before the first optimiser step (the importance ratio of the first epoch is then exactly 1).

Dropout is off during the update (the module is in eval mode) so that the log-probs the
loss sees are those of the policy that generates, and the update is deterministic.
On CPU the learner trains ``model`` in place, so generation after a step uses the new
weights; with vLLM the engine reloads the trained weights, adapters folded in, after each
step (:func:`~spade_envs.trainer.models.push_weights`). LoRA adapters are peft's
(:mod:`~spade_envs.trainer.adapters`); checkpoints also keep them in peft's format.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..error import SpadeError
from . import distributed
from .adapters import adapter_state, adapters_disabled, add_adapters, load_adapter_state
from .batches import (
    MicroBatch,
    Row,
    batch_columns,
    fit_to_length,
    pack_micro_batches,
    row_values,
    sample_rows,
    token_logprobs_class,
)
from .grpo import GRPOConfig, GRPOConfigError, group_advantages, token_policy_loss
from .lean import checkpoint_blocks
from .samples import Sample
from .sharding import (
    by_name,
    full_tensor,
    gradient_sync,
    load_full_state,
    load_shards,
    micro_batch_count,
    save_shards,
    shard_model,
)

__all__ = ["GRPOConfig", "GRPOConfigError", "Learner", "STAT_KEYS", "fit_to_length"]

#: The keys of the dict :meth:`Learner.step` returns (all floats).
STAT_KEYS = (
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
    "ratio_mean",
    "truncated",
    "optimizer_steps",
    "seconds",
)


class Learner:
    """Trains a causal LM with GRPO on samples of both roles.

    Args:
        model: A Hugging Face causal LM (``chat_model.model``), trained in place.
        config: The update settings.
        seed: Seeds torch and the LoRA initialisation.
        pad_token_id: Token used to right-pad micro-batches (masked out).

    Raises:
        GRPOConfigError: ``config`` is not a :class:`GRPOConfig`.
        LoRAError: LoRA cannot be applied (e.g. no layer matches ``lora_targets``).
    """

    def __init__(
        self, model: Any, config: GRPOConfig, *, seed: int = 0, pad_token_id: int = 0
    ) -> None:
        import torch

        if not isinstance(config, GRPOConfig):
            raise GRPOConfigError(f"config must be a GRPOConfig, got {type(config).__name__}.")
        self.config = config
        self.seed = seed
        self.pad_token_id = int(pad_token_id)
        self.steps = 0
        torch.manual_seed(seed)
        #: The ``peft.PeftModel`` around ``model`` with LoRA (None: full fine-tuning).
        self.adapters: Any = None
        if config.lora_rank:
            self.adapters = add_adapters(
                model,
                rank=config.lora_rank,
                alpha=config.lora_alpha,
                targets=config.lora_targets,
                seed=seed,
            )
        self.model = model
        self.device = next(model.parameters()).device
        self.dist = distributed.init_distributed() if distributed.is_initialized() else None
        if self.dist is not None:
            self._broadcast_from_main()
        self._reference = None
        if config.kl_coef and not config.lora_rank:
            # Full fine-tuning moves every weight: the reference needs its own copy.
            self._reference = copy.deepcopy(model).eval().requires_grad_(False)
        if config.activation_checkpointing:
            checkpoint_blocks(model)
        module_cls = token_logprobs_class()
        self._module = module_cls(model, config.logprob_chunk)
        self._reference_module = (
            module_cls(self._reference, config.logprob_chunk)
            if self._reference is not None
            else None
        )
        #: Whether the model is sharded over the ranks (FSDP2) rather than replicated.
        self.sharded = self.dist is not None and config.sharding == "fsdp"
        if self.sharded:
            compute_dtype = next(model.parameters()).dtype
            shard_model(model, compute_dtype, root=self._module)
            if self._reference is not None:
                shard_model(self._reference, compute_dtype, root=self._reference_module)
        self._train_module: Any = self._module
        if self.dist is not None and not self.sharded:
            from torch.nn.parallel import DistributedDataParallel

            # Buffers (rotary tables) are the same on every rank: no sync per forward.
            accepts = inspect.signature(DistributedDataParallel.__init__).parameters
            buffers = "forward_sync_buffers" if "forward_sync_buffers" in accepts else None
            self._train_module = DistributedDataParallel(
                self._module,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                **{buffers or "broadcast_buffers": False},
            )
        self._params = self.trainable_parameters()
        self.optimizer = torch.optim.AdamW(
            self._params, lr=config.learning_rate, weight_decay=config.weight_decay
        )

    # ---------------------------------------------------------------- helpers

    @property
    def world_size(self) -> int:
        return self.dist.world_size if self.dist is not None else 1

    def trainable_parameters(self) -> list[Any]:
        """The parameters the optimiser updates (adapters only with LoRA)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def gradients(self) -> dict[str, Any]:
        """Copies of the trainable parameters' gradients by name (after :meth:`step`:
        those of its last optimiser step, after clipping)."""
        return {
            name: full_tensor(p.grad.detach()).clone()
            for name, p in self.model.named_parameters()
            if p.requires_grad and p.grad is not None
        }

    def _broadcast_from_main(self) -> None:
        # DDP broadcasts rank 0's weights too, but the reference copy is taken before
        # DDP exists and must be the same on every rank.
        import torch.distributed as dist

        for tensor in [*self.model.parameters(), *self.model.buffers()]:
            dist.broadcast(tensor.data, src=0)

    def _all_reduce(self, values: list[float]) -> list[float]:
        import torch

        if self.dist is None:
            return values
        import torch.distributed as dist

        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor)
        return tensor.tolist()

    # -------------------------------------------------------------- preparing

    def _advantages(self, samples: list[Sample]) -> list[Sample]:
        if self.dist is None:
            return group_advantages(samples, normalize=self.config.normalize)
        keys = [(s.role, s.group, s.reward) for s in samples]
        everyone = distributed.all_gather_objects(keys)
        flat = [
            Sample(role=r, prompt_ids=[0], completion_ids=[0], reward=w, group=g)
            for part in everyone
            for r, g, w in part
        ]
        scored = group_advantages(flat, normalize=self.config.normalize)
        start = sum(len(part) for part in everyone[: self.dist.rank])
        return [replace(s, advantage=scored[start + i].advantage) for i, s in enumerate(samples)]

    def _rows(self, samples: Sequence[Sample]) -> tuple[list[Row], int]:
        return sample_rows(samples, self.config.max_seq_len)

    def _rows_to_run(self, rows: list[Row]) -> list[Row]:
        """The rows a step runs. Without a KL term a row of advantage exactly 0 (a group of
        equal rewards) adds exactly 0 to the loss and to every gradient (the surrogate is
        ratio * 0): it is counted in the token mean but never run, which skips most of an
        update in which few groups teach. Its tokens count at ratio 1 in ``ratio_mean``."""
        if self.config.kl_coef:
            return rows
        return [r for r in rows if r.advantage != 0.0]

    def _pack(self, rows: list[Row]) -> list[MicroBatch]:
        c = self.config
        return pack_micro_batches(
            rows, c.micro_batch, c.micro_batch_tokens, self.pad_token_id, self.device
        )

    def _behaviour_and_reference(self, batches: list[MicroBatch]) -> None:
        import torch

        with torch.no_grad():
            for batch in batches:
                # Sharded, every forward is collective: every rank runs each one.
                if self.sharded or any(r.old is None for r in batch.rows):
                    current = row_values(batch, self._forward_no_grad(batch))
                    for row, values in zip(batch.rows, current):
                        if row.old is None:
                            row.old = values
                batch.old = batch_columns(batch, [r.old for r in batch.rows])
                if self.config.kl_coef:
                    batch.ref = self._reference_logprobs(batch)

    def _forward_no_grad(self, batch: MicroBatch, module: Any = None) -> Any:
        module = module or self._module
        return module(batch.input_ids, batch.attention_mask, batch.keep, batch.temperature)

    def _reference_logprobs(self, batch: MicroBatch) -> Any:
        if self._reference is not None:
            return self._forward_no_grad(batch, self._reference_module)
        with adapters_disabled(self.adapters):
            return self._forward_no_grad(batch)

    # ----------------------------------------------------------------- public

    def completion_logprobs(self, samples: Sequence[Sample]) -> list[list[float]]:
        """Current log-probs of each sample's completion tokens, in sample order.

        Computed as the loss computes them: under each sample's own temperature
        (``log_softmax(logits / sample.temperature)``), after truncation to
        ``max_seq_len``; no gradient.

        Args:
            samples: Samples of either role.

        Returns:
            One list of floats per sample, one value per (kept) completion token.
        """
        import torch

        rows, _ = self._rows(list(samples))
        out: list[list[float]] = [[] for _ in rows]
        self.model.eval()
        with torch.no_grad():
            for batch in self._even(self._pack(rows)):
                for row, values in zip(batch.rows, row_values(batch, self._forward_no_grad(batch))):
                    if row.index >= 0:  # not a padding row
                        out[row.index] = values
        return out

    def step(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One GRPO update on ``samples`` (this rank's share when data-parallel).

        Every rank must call it (with possibly zero samples) the same number of times.

        Returns:
            Floats under :data:`STAT_KEYS`: ``loss`` (token mean, KL term included),
            ``loss_agent``/``loss_designer`` (token means per role, 0 without tokens),
            ``tokens_*``/``samples_*`` (completion tokens and samples per role, summed over
            ranks; samples with advantage 0 count too), ``grad_norm`` (before clipping),
            ``clip_frac``, ``kl``, ``ratio_mean``, ``truncated`` (samples cut to
            ``max_seq_len``), ``optimizer_steps`` (so far) and ``seconds``. Loss-type values
            are averaged over ``epochs``. An empty batch (on every rank) changes nothing.
        """
        import torch

        started = time.perf_counter()
        samples = self._advantages(list(samples))
        rows, truncated = self._rows(samples)
        run = self._rows_to_run(rows)
        skipped_tokens = float(sum(r.completion_len for r in rows)) - sum(
            r.completion_len for r in run
        )
        batches = self._even(self._pack(run))
        self.model.eval()  # no dropout: the loss sees the generating policy
        self._behaviour_and_reference(batches)

        counts = self._all_reduce(
            [
                float(sum(r.completion_len for r in rows if r.agent)),
                float(sum(r.completion_len for r in rows if not r.agent)),
                float(sum(r.agent for r in rows)),
                float(sum(not r.agent for r in rows)),
                float(truncated),
            ]
        )
        tokens_agent, tokens_designer, samples_agent, samples_designer, truncated_all = counts
        total_tokens = tokens_agent + tokens_designer
        stats = dict.fromkeys(STAT_KEYS, 0.0)
        stats.update(
            tokens_agent=tokens_agent,
            tokens_designer=tokens_designer,
            samples_agent=samples_agent,
            samples_designer=samples_designer,
            truncated=truncated_all,
        )
        if total_tokens == 0:
            stats.update(optimizer_steps=float(self.steps), seconds=time.perf_counter() - started)
            return stats

        # DDP averages gradients over ranks; scaling by world / total makes the sum over
        # ranks and micro-batches the token mean over the whole batch.
        scale = self.world_size / total_tokens
        sums = [0.0] * 6  # loss, loss agent, loss designer, clipped, kl, ratio
        for _ in range(self.config.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            epoch = [0.0] * 6
            if not batches:
                self._empty_backward()
            for i, batch in enumerate(batches):
                with self._accumulate(last=i == len(batches) - 1):
                    parts = self._backward(batch, scale)
                epoch = [a + b for a, b in zip(epoch, parts)]
            epoch[5] += skipped_tokens
            epoch = self._all_reduce(epoch)
            sums = [a + b for a, b in zip(sums, epoch)]
            max_norm = self.config.max_grad_norm or float("inf")
            norm = torch.nn.utils.clip_grad_norm_(self._params, max_norm)
            stats["grad_norm"] += float(full_tensor(norm)) / self.config.epochs
            self.optimizer.step()
            self.steps += 1

        runs = self.config.epochs
        loss, loss_agent, loss_designer, clipped, kl, ratio = sums
        stats.update(
            loss=loss / total_tokens / runs,
            loss_agent=loss_agent / tokens_agent / runs if tokens_agent else 0.0,
            loss_designer=loss_designer / tokens_designer / runs if tokens_designer else 0.0,
            clip_frac=clipped / total_tokens / runs,
            kl=kl / total_tokens / runs,
            ratio_mean=ratio / total_tokens / runs,
            optimizer_steps=float(self.steps),
            seconds=time.perf_counter() - started,
        )
        return stats

    def likelihood_step(
        self, samples: Sequence[Sample], learning_rate: float | None = None
    ) -> dict[str, float]:
        """One supervised step: raise the likelihood of every sample's completion.

        The cold start's update (:mod:`spade_envs.trainer.coldstart`): the token mean of
        ``-log p(completion | prompt)`` at temperature 1, on the same model, adapters and
        optimiser as :meth:`step`, packed and truncated the same way. Every rank must call
        it the same number of times.

        Args:
            samples: The samples (rewards, advantages and log-probs are not used).
            learning_rate: This step's learning rate (default: the optimiser's own); the
                optimiser's rate is restored afterwards.

        Returns:
            ``loss`` (token mean negative log-likelihood, before the step), ``tokens``
            (over ranks), ``grad_norm`` (before clipping), ``truncated`` and ``seconds``.
        """
        import torch

        started = time.perf_counter()
        rows, truncated = self._rows([replace(s, temperature=1.0) for s in samples])
        batches = self._even(self._pack(rows))
        self.model.eval()  # no dropout, as in step()
        tokens, truncated_all = self._all_reduce(
            [float(sum(r.completion_len for r in rows)), float(truncated)]
        )
        stats = {"loss": 0.0, "tokens": tokens, "grad_norm": 0.0, "truncated": truncated_all}
        if tokens == 0:
            return {**stats, "seconds": time.perf_counter() - started}
        scale = self.world_size / tokens
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        if not batches:
            self._empty_backward()
        for i, batch in enumerate(batches):
            with self._accumulate(last=i == len(batches) - 1):
                logp = self._train_module(batch.input_ids, batch.attention_mask, batch.keep)
                zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
                nll = torch.where(batch.mask, -logp, zero).sum()
                (nll * scale).backward()
            total += float(nll.detach())
        (total,) = self._all_reduce([total])
        norm = torch.nn.utils.clip_grad_norm_(self._params, self.config.max_grad_norm or 1e30)
        saved = [group["lr"] for group in self.optimizer.param_groups]
        if learning_rate is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = float(learning_rate)
        self.optimizer.step()
        for group, lr in zip(self.optimizer.param_groups, saved):
            group["lr"] = lr
        self.steps += 1
        stats.update(loss=total / tokens, grad_norm=float(full_tensor(norm)))
        return {**stats, "seconds": time.perf_counter() - started}

    def _backward(self, batch: MicroBatch, scale: float) -> list[float]:
        import torch

        logp = self._train_module(
            batch.input_ids, batch.attention_mask, batch.keep, batch.temperature
        )
        loss, clipped, kl, ratio = token_policy_loss(
            logp,
            batch.old,
            batch.advantages,
            clip_low=self.config.clip_low,
            clip_high=self.config.clip_high,
            ref_logprobs=batch.ref,
            kl_coef=self.config.kl_coef,
        )
        zero = torch.zeros((), dtype=loss.dtype, device=loss.device)
        # where(), not a product: padded and prompt positions get exactly no gradient.
        masked = torch.where(batch.mask, loss, zero)
        (masked.sum() * scale).backward()
        per_row = masked.detach().sum(dim=1)
        return [
            float(per_row.sum()),
            float(per_row[batch.agent].sum()),
            float(per_row[~batch.agent].sum()),
            float((clipped & batch.mask).sum()),
            float(torch.where(batch.mask, kl, zero).sum()),
            float(torch.where(batch.mask, ratio, zero).sum()),
        ]

    def _accumulate(self, *, last: bool) -> Any:
        """Inside: a backward pass that only accumulates gradients (every micro-batch but
        the last), or the one that reduces them over ranks."""
        if self.dist is None or last:
            return contextlib.nullcontext()
        if self.sharded:
            return gradient_sync(self._module, enabled=False)
        return self._train_module.no_sync()

    def _even(self, batches: list[MicroBatch]) -> list[MicroBatch]:
        """Sharded: ``batches`` padded with empty micro-batches (no token in the loss) to
        the most any rank has, as every rank must run every forward and backward pass."""
        if not self.sharded:
            return batches
        missing = micro_batch_count(len(batches), self.device) - len(batches)
        pad = Row(index=-1, agent=True, prompt_len=1, tokens=[self.pad_token_id] * 2,
                  advantage=0.0, old=[0.0], loss_mask=[0])  # fmt: skip
        return batches + [self._pack([pad])[0] for _ in range(missing)]

    def _empty_backward(self) -> None:
        # A rank without samples still joins DDP's gradient all-reduce: a zero-weighted
        # pass over two padding tokens touches every trainable parameter.
        import torch

        ids = torch.full((1, 2), self.pad_token_id, dtype=torch.long, device=self.device)
        logp = self._train_module(ids, torch.ones_like(ids), 2)
        (logp.sum() * 0.0).backward()

    # ------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Weights (adapters only with LoRA), optimiser state and step count, as copies.

        A sharded learner's weights and optimiser state are not in it: they are written
        shard by shard with :meth:`save_shards` (``"shards": True`` says so), and
        :meth:`load_state_dict` reads them back from that directory.
        """
        if self.sharded:
            return {"lora_rank": self.config.lora_rank, "shards": True, "steps": self.steps}
        if self.adapters is not None:
            weights = adapter_state(self.adapters)
        else:
            weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        return {
            "lora_rank": self.config.lora_rank,
            "model": weights,
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "steps": self.steps,
        }

    def save_shards(self, directory: Any) -> None:
        """Write a sharded learner's weights and optimiser state into ``directory``, each
        rank its own shard (collective: every rank calls it, with the same directory)."""
        if not self.sharded:
            raise GRPOConfigError("Only a sharded learner writes shards; use state_dict().")
        save_shards(self.model, self.optimizer, directory)

    def load_state_dict(self, state: dict[str, Any], shards: Any = None) -> None:
        """Restore what :meth:`state_dict` saved (and :meth:`save_shards` wrote, into
        ``shards``), at any world size, sharded or not.

        With LoRA the base weights are not in the state: build the learner on the same
        base model. With ``kl_coef > 0`` the reference is the model as the learner was
        built, so build it on the base model and then load the state.

        Raises:
            GRPOConfigError: The state is missing parts or was saved with another LoRA
                setting, or its weights do not fit the model.
        """
        whole = () if state.get("shards") else ("model", "optimizer")  # or in the shards
        needed = ["lora_rank", *whole, "steps"]
        missing = [k for k in needed if k not in state]
        if missing:
            raise GRPOConfigError(f"Learner state lacks {missing}; pass Learner.state_dict().")
        self._check_lora(state)
        if state.get("shards"):
            if shards is None:
                raise GRPOConfigError(
                    "This learner state was saved sharded: pass the directory its shards "
                    "were written to (shards=...)."
                )
            try:
                load_shards(self.model, self.optimizer, shards)
            except (RuntimeError, ValueError, KeyError, OSError) as exc:
                raise GRPOConfigError(
                    f"The learner's shards in {shards} do not fit this model: {exc}"
                ) from exc
            self.steps = int(state["steps"])
            return
        if self.sharded and self.adapters is not None:
            raise GRPOConfigError(
                "This LoRA state was saved by an unsharded learner (adapters only): resume "
                "it with grpo.sharding = ddp, or start the sharded run afresh."
            )
        try:
            if self.sharded:
                # Whole weights, and optimiser state keyed by name: each rank takes its shard.
                names = [n for n, p in self.model.named_parameters() if p.requires_grad]
                optimizer = by_name(state["optimizer"], names)
                load_full_state(self.model, self.optimizer, state["model"], optimizer)
            elif self.adapters is not None:
                load_adapter_state(self.adapters, state["model"])
                self.optimizer.load_state_dict(state["optimizer"])
            else:
                self.model.load_state_dict(state["model"])
                self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as exc:
            if isinstance(exc, SpadeError):
                raise
            raise GRPOConfigError(f"The learner state does not fit this model: {exc}") from exc
        self.steps = int(state["steps"])

    def _check_lora(self, state: dict[str, Any]) -> None:
        if state["lora_rank"] != self.config.lora_rank:
            raise GRPOConfigError(
                f"The state was saved with lora_rank={state['lora_rank']}, this learner has "
                f"lora_rank={self.config.lora_rank}; use the same GRPO settings to resume."
            )

    @property
    def lora_layers(self) -> list[str]:
        """Names of the modules that carry LoRA adapters (empty for full fine-tuning)."""
        if self.adapters is None:
            return []
        from peft.tuners.lora import LoraLayer

        return sorted(n for n, m in self.model.named_modules() if isinstance(m, LoraLayer))

    def save_adapter(self, directory: Any) -> None:
        """Write the LoRA adapter in peft's format (``adapter_config.json`` and
        ``adapter_model.safetensors``) to ``directory``; ``PeftModel.from_pretrained`` and
        vLLM's ``LoRARequest`` read it.

        Raises:
            GRPOConfigError: This learner trains every weight (no adapter).
        """
        if self.adapters is None:
            raise GRPOConfigError("This learner has no LoRA adapter (lora_rank = 0) to save.")
        with warnings.catch_warnings():
            # peft looks for the base model's config.json to see if the vocabulary grew;
            # the packaged GGUF model has none, and the adapters never change the vocabulary.
            warnings.filterwarnings("ignore", "Could not find a config file", UserWarning)
            self.adapters.save_pretrained(str(directory))
