"""GRPO math: hand-computed advantages and losses, and their properties (Hypothesis)."""

from __future__ import annotations

import importlib
import math
import os
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.trainer.grpo import group_advantages, token_policy_loss
from spade_envs.trainer.samples import Sample, SampleError


def _torch():
    # In CI a missing torch is a failure, not a skip.
    if os.environ.get("CI"):
        return importlib.import_module("torch")
    return pytest.importorskip("torch")


def _s(reward: float, group: str = "g", role: str = "agent") -> Sample:
    return Sample(role, [1], [2], reward, group)


# ---------------------------------------------------------------- advantages


def test_advantages_by_hand():
    samples = [
        _s(0.0),
        _s(1.0),
        _s(1.0, "d", "designer"),
        _s(2.0, "d", "designer"),
        _s(3.0, "d", "designer"),
        _s(5.0, "alone"),
        _s(0.3, "flat"),
        _s(0.3, "flat"),
        # Same group name, other role: a group of its own.
        _s(9.0, "g", "designer"),
    ]
    out = group_advantages(samples, eps=0.0)
    adv = [s.advantage for s in out]
    assert adv[:2] == pytest.approx([-1.0, 1.0])  # mean 0.5, std 0.5
    spread = math.sqrt(2 / 3)  # population std of 1, 2, 3
    assert adv[2:5] == pytest.approx([-1 / spread, 0.0, 1 / spread])
    assert adv[5:] == [0.0, 0.0, 0.0, 0.0]  # alone, constant, alone
    assert [s.advantage for s in samples] == [0.0] * len(samples)  # inputs untouched
    centred = group_advantages(samples[:2], normalize="none")
    assert [s.advantage for s in centred] == [-0.5, 0.5]


def test_advantages_reject_unknown_normalisation():
    with pytest.raises(SampleError, match="Unknown advantage normalisation 'sdt'.*'std'"):
        group_advantages([_s(1.0)], normalize="sdt")


rewards = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)
batches = st.lists(
    st.tuples(st.sampled_from(["agent", "designer"]), st.sampled_from("abc"), rewards),
    min_size=1,
    max_size=30,
)


def _groups(samples):
    out = defaultdict(list)
    for s in samples:
        out[(s.role, s.group)].append(s)
    return out


@given(batches, st.sampled_from(["std", "none"]))
def test_advantages_sum_to_zero_per_group(batch, normalize):
    out = group_advantages([_s(r, g, role) for role, g, r in batch], normalize=normalize)
    for members in _groups(out).values():
        scale = max(1.0, max(abs(m.advantage) for m in members))
        assert abs(sum(m.advantage for m in members)) <= 1e-9 * scale * len(members)


@given(st.lists(rewards, min_size=1, max_size=5).flatmap(lambda r: st.just(r[:1] * len(r))))
def test_constant_groups_get_exactly_zero(batch):
    assert {s.advantage for s in group_advantages([_s(r) for r in batch])} == {0.0}


@given(batches, st.floats(min_value=-100, max_value=100), st.sampled_from(["std", "none"]))
def test_advantages_do_not_change_when_rewards_shift(batch, shift, normalize):
    base = group_advantages([_s(r, g, role) for role, g, r in batch], normalize=normalize)
    moved = group_advantages([_s(r + shift, g, role) for role, g, r in batch], normalize=normalize)
    for a, b in zip(base, moved):
        assert b.advantage == pytest.approx(a.advantage, abs=1e-6)


cents = st.integers(min_value=-1000, max_value=1000).map(lambda c: c / 100)


@given(st.lists(st.tuples(st.sampled_from(["agent", "designer"]), st.sampled_from("ab"), cents)))
def test_std_advantages_are_unit_scale(batch):
    out = group_advantages([_s(r, g, role) for role, g, r in batch], eps=0.0)
    for members in _groups(out).values():
        values = [m.advantage for m in members]
        if any(values):
            mean_square = sum(v * v for v in values) / len(values)
            assert mean_square == pytest.approx(1.0, rel=1e-6)


# ---------------------------------------------------------------------- loss
# The per-token loss the learner trains on (token_policy_loss); its token mean over the
# completion mask, across micro-batches, is the learner's and tested in test_learner.py.


def test_loss_at_ratio_one_is_minus_the_advantage_and_its_gradient():
    torch = _torch()
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, -9.0]], requires_grad=True)
    old = logp.detach().clone()
    adv = torch.tensor([2.0, -1.0])  # one per sample, broadcast over its tokens
    loss, clipped, kl, ratio = token_policy_loss(logp, old, adv)
    assert loss.tolist() == [[-2.0, -2.0, -2.0], [1.0, 1.0, 1.0]]
    assert not clipped.any() and kl.eq(0).all() and ratio.eq(1).all()
    loss.sum().backward()
    assert logp.grad.tolist() == [[-2.0, -2.0, -2.0], [1.0, 1.0, 1.0]]


def test_clipping_by_hand():
    torch = _torch()
    # Ratios 1.5 and 0.5 with positive and negative advantages; bounds [0.8, 1.28].
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 1.5, 0.5, 0.5]])).requires_grad_(True)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    loss, clipped, _, ratio = token_policy_loss(logp, old, adv)
    # -min(r A, clip(r) A) per token: -1.28, 1.5, -0.5, 0.8
    assert loss[0].tolist() == pytest.approx([-1.28, 1.5, -0.5, 0.8])
    assert clipped.tolist() == [[True, False, False, True]]
    assert ratio[0].tolist() == pytest.approx([1.5, 1.5, 0.5, 0.5])
    loss.sum().backward()
    # Clipped tokens get no gradient; the others get -A * r.
    assert torch.allclose(logp.grad, torch.tensor([[0.0, 1.5, -0.5, 0.0]]))


def test_k3_kl_by_hand():
    torch = _torch()
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    ref = torch.tensor([[-1.5, -1.0]])
    loss, _, kl, _ = token_policy_loss(
        logp, logp.detach(), torch.zeros(1), ref_logprobs=ref, kl_coef=0.5
    )
    k3 = [math.exp(d) - d - 1 for d in (-0.5, 1.0)]
    assert kl[0].tolist() == pytest.approx(k3)
    assert loss[0].tolist() == pytest.approx([0.5 * k for k in k3])
    loss.sum().backward()
    grads = [0.5 * (1 - math.exp(d)) for d in (-0.5, 1.0)]
    assert logp.grad[0].tolist() == pytest.approx(grads)
    # Without a coefficient the KL is still reported but not in the loss.
    loss, _, kl, _ = token_policy_loss(logp, logp.detach(), torch.zeros(1), ref_logprobs=ref)
    assert loss.eq(0).all() and kl[0].tolist() == pytest.approx(k3)


finite = st.floats(min_value=-3, max_value=3, allow_nan=False)


@given(
    st.lists(st.tuples(finite, finite, finite), min_size=1, max_size=20),
    st.floats(min_value=0.0, max_value=0.9),
    st.floats(min_value=0.0, max_value=2.0),
)
def test_loss_matches_the_clipped_surrogate_token_by_token(tokens, clip_low, clip_high):
    torch = _torch()
    logp = torch.tensor([[t[0] for t in tokens]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[t[1] for t in tokens]], dtype=torch.float64)
    adv = torch.tensor([[t[2] for t in tokens]], dtype=torch.float64)
    loss, clipped, _, _ = token_policy_loss(logp, old, adv, clip_low=clip_low, clip_high=clip_high)
    loss.sum().backward()
    for i, (lp, o, a) in enumerate(tokens):
        r = math.exp(lp - o)
        low, high = 1 - clip_low, 1 + clip_high
        bounded = min(max(r, low), high)
        objective = min(r * a, bounded * a)
        assert loss[0, i].item() == pytest.approx(-objective, rel=1e-9, abs=1e-12)
        assert clipped[0, i].item() == (bounded * a < r * a)
        grad = logp.grad[0, i].item()
        outside = (a > 0 and r > high) or (a < 0 and r < low)
        if outside and bounded * a < r * a:
            assert grad == 0.0  # the clipped branch is flat in the ratio
        elif not outside:
            assert grad == pytest.approx(-a * r, rel=1e-9, abs=1e-12)


@given(st.lists(finite, min_size=1, max_size=10))
def test_zero_advantage_and_no_kl_give_zero_gradient(values):
    torch = _torch()
    logp = torch.tensor([values], requires_grad=True)
    loss, _, _, _ = token_policy_loss(logp, torch.zeros_like(logp), torch.zeros(1))
    loss.sum().backward()
    assert loss.eq(0).all() and torch.count_nonzero(logp.grad) == 0


def test_token_policy_loss_reports_per_token_parts():
    torch = _torch()
    logp = torch.log(torch.tensor([[2.0, 1.0]]))
    loss, clipped, kl, ratio = token_policy_loss(logp, torch.zeros(1, 2), torch.tensor([1.0]))
    assert loss[0].tolist() == pytest.approx([-1.28, -1.0])
    assert clipped.tolist() == [[True, False]]
    assert ratio[0].tolist() == pytest.approx([2.0, 1.0])
    assert kl.tolist() == [[0.0, 0.0]]
