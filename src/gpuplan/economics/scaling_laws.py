"""Compute-optimal model size: Chinchilla approach 3 and the inference-aware optimum.

`L(N, D) = E + A/N^α + B/D^β` with training compute `C = 6·N·D`. A model that will serve many
tokens should be smaller and trained longer than Chinchilla-optimal (Sardana et al. 2024): we
minimise lifetime FLOPs `6·N·D_tr + 2·N·D_inf` (or lifetime dollars) at a fixed loss. Constant
sets disagree sharply on tokens-per-parameter, so they live in `data/scaling-laws.json` and every
result names the set it used.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from gpuplan.errors import UnknownNameError, UsageError


@dataclass(frozen=True)
class ScalingLaw:
    """One fitted constant set of the Chinchilla loss `E + A/N^α + B/D^β`."""

    name: str
    E: float
    A: float
    B: float
    alpha: float
    beta: float
    label: str = ""
    source: str = ""
    note: str = ""

    def loss(self, n_params: float, tokens: float) -> float:
        return self.E + self.A / n_params ** self.alpha + self.B / tokens ** self.beta

    @property
    def G(self) -> float:
        return (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))

    def compute_optimal(self, compute_flops: float) -> tuple[float, float]:
        """(N*, D*) minimising the loss at `C = 6·N·D`."""
        s = self.alpha + self.beta
        n = self.G * (compute_flops / 6.0) ** (self.beta / s)
        d = (compute_flops / 6.0) ** (self.alpha / s) / self.G
        return n, d

    def chinchilla_for_loss(self, loss: float) -> tuple[float, float]:
        """(N, D) of the compute-optimal model that reaches `loss`."""
        gap = self._gap(loss)
        n = (self.A * (1.0 + self.alpha / self.beta) / gap) ** (1.0 / self.alpha)
        d = (self.B * (1.0 + self.beta / self.alpha) / gap) ** (1.0 / self.beta)
        return n, d

    def chinchilla_loss_of_params(self, n_params: float) -> float:
        """The loss of an `n_params` model trained compute-optimally (inverse of N_chin(l))."""
        return self.E + self.A * (1.0 + self.alpha / self.beta) / n_params ** self.alpha

    def inference_aware_tokens(self, loss: float, inference_tokens: float) -> float:
        """D_tr solving the first-order condition of min 6ND + 2N·D_inf s.t. L(N, D) = loss.

        `a·D^-β + b·D^(-β-1) = l − E` with a = B(1+β/α), b = β·B·D_inf/(3α). In u = ln D the
        left side is decreasing and convex, so Newton from D_chin (where it is ≥ 0) climbs
        monotonically to the root without overshoot.
        """
        gap = self._gap(loss)
        a = self.B * (1.0 + self.beta / self.alpha)
        b = self.beta * self.B * inference_tokens / (3.0 * self.alpha)
        u = math.log(self.chinchilla_for_loss(loss)[1])
        for _ in range(500):
            t1 = a * math.exp(-self.beta * u)
            t2 = b * math.exp(-(self.beta + 1.0) * u)
            f = t1 + t2 - gap
            df = -self.beta * t1 - (self.beta + 1.0) * t2
            step = f / df
            u -= step
            if abs(step) < 1e-13:
                break
        return math.exp(u)

    def params_for_loss_and_tokens(self, loss: float, tokens: float) -> float:
        """N such that L(N, tokens) = loss; inf when `tokens` alone cannot reach it."""
        rest = self._gap(loss) - self.B / tokens ** self.beta
        return math.inf if rest <= 0 else (self.A / rest) ** (1.0 / self.alpha)

    def _gap(self, loss: float) -> float:
        gap = loss - self.E
        if not gap > 0:
            raise UsageError(f"loss {loss:g} is not above the irreducible loss E={self.E:g} of the {self.name!r} constants")
        return gap


# ---- constant sets -------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("gpuplan.economics").joinpath("data/scaling-laws.json").read_text(encoding="utf-8")
    return json.loads(text)


def list_laws() -> dict[str, ScalingLaw]:
    """Every constant set in `scaling-laws.json`, by name."""
    return {k: ScalingLaw(name=k, **v) for k, v in _data()["sets"].items()}


# The same constants size a compute-optimal run and the Chinchilla reference of an inference-aware one, so that
# "a Chinchilla-optimal 70B" is the ~1.4T-token model of the paper in both (Sardana et al.'s code used Hoffmann's
# approach-3 constants, whose optimum sits at 30-70 tokens per parameter).
DEFAULT_LAWS_NOTE = ("default: the {law!r} refit of Chinchilla (≈20 tokens/param at compute-optimum, as the paper's "
                     "approaches 1-2); pass --laws sardana to reproduce Sardana et al. (2024), whose constants put "
                     "the compute-optimum at 30-70 tokens/param")


def default_law_name(inference_aware: bool = False) -> str:
    d = _data()
    return d["default_for_inference_aware"] if inference_aware else d["default"]


_ALIASES = {"epoch-refit": "epoch", "besiroglu": "epoch", "refit": "epoch", "chinchilla": "hoffmann",
            "hoffmann-2022": "hoffmann", "rounded": "hoffmann-rounded", "beyond-chinchilla": "sardana"}


def get_law(name: str | ScalingLaw | None = None) -> ScalingLaw:
    """A constant set by name (case-insensitive, a few aliases); None gives the default."""
    if isinstance(name, ScalingLaw):
        return name
    laws = list_laws()
    key = (name or default_law_name()).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in laws:
        raise UnknownNameError("scaling-law set", name or "", list(laws))
    return laws[key]


# ---- cost model ----------------------------------------------------------------------------

class CostModel(BaseModel):
    """Dollar weights for training vs inference FLOPs (Sardana et al. cost form).

    Inference tokens cost more per FLOP than training ones because decode runs at a tiny MFU;
    the optimum depends only on the ratio K_inf/K_tr, which acts as "effective" inference tokens.
    """

    train_usd_per_gpu_hour: float = 2.0
    inference_usd_per_gpu_hour: float = 2.0
    train_peak_tflops: float = 989.0
    inference_peak_tflops: float = 1979.0
    train_mfu: float = 0.5
    prefill_mfu: float = 0.5
    decode_mfu: float = 0.01
    input_share: float = Field(70 / 285, description="fraction of inference tokens that are input (prefill)")

    @classmethod
    def defaults(cls, **overrides: Any) -> "CostModel":
        d = _data()["cost_defaults"]
        base = dict(train_usd_per_gpu_hour=d["train_usd_per_gpu_hour"],
                    inference_usd_per_gpu_hour=d["inference_usd_per_gpu_hour"],
                    train_peak_tflops=d["train_peak_tflops"], inference_peak_tflops=d["inference_peak_tflops"],
                    train_mfu=d["train_mfu"], prefill_mfu=d["prefill_mfu"], decode_mfu=d["decode_mfu"],
                    input_share=d["input_tokens_per_request"] / (d["input_tokens_per_request"] + d["output_tokens_per_request"]))
        base.update({k: v for k, v in overrides.items() if v is not None})
        m = cls(**base)
        m.validate_values()
        return m

    def validate_values(self) -> None:
        for k in ("train_usd_per_gpu_hour", "inference_usd_per_gpu_hour", "train_peak_tflops", "inference_peak_tflops"):
            v = getattr(self, k)
            if not (math.isfinite(v) and 0 < v < 1e9):
                raise UsageError(f"{k.replace('_', '-')} must be a positive finite number, got {v!r}")
        for k in ("train_mfu", "prefill_mfu", "decode_mfu"):
            v = getattr(self, k)
            if not (math.isfinite(v) and 0 < v <= 1):
                raise UsageError(f"{k.replace('_', '-')} must be in (0, 1], got {v!r}")
        if not (math.isfinite(self.input_share) and 0 <= self.input_share <= 1):
            raise UsageError(f"input-share must be in [0, 1], got {self.input_share!r}")

    @property
    def usd_per_train_flop(self) -> float:
        return self.train_usd_per_gpu_hour / (3600.0 * self.train_peak_tflops * 1e12 * self.train_mfu)

    def usd_per_inference_flop_blend(self) -> float:
        """Dollars per inference FLOP averaged over the prefill/decode token mix."""
        c = self.inference_usd_per_gpu_hour / (3600.0 * self.inference_peak_tflops * 1e12)
        return c * (self.input_share / self.prefill_mfu + (1.0 - self.input_share) / self.decode_mfu)

    def effective_inference_tokens(self, inference_tokens: float) -> float:
        """K_inf/K_tr: inference tokens weighted by their dollar cost relative to training FLOPs."""
        return inference_tokens * self.usd_per_inference_flop_blend() / self.usd_per_train_flop


# ---- results -------------------------------------------------------------------------------

class ComputeOptimum(BaseModel):
    params: float
    tokens: float
    training_flops: float
    tokens_per_param: float
    loss: float
    laws: str
    laws_source: str
    assumptions: dict[str, Any] = Field(default_factory=dict)


class ModelPoint(BaseModel):
    params: float
    tokens: float
    tokens_per_param: float
    training_flops: float
    inference_flops: float
    total_flops: float
    training_usd: float | None = None
    inference_usd: float | None = None
    total_usd: float | None = None


class InferenceAwareOptimum(BaseModel):
    """The cheapest-over-lifetime model at a fixed loss, next to its Chinchilla reference."""

    params: float
    tokens: float
    training_flops: float
    inference_flops: float
    total_flops: float
    tokens_per_param: float
    loss: float
    flops_saved: float = Field(description="lifetime FLOPs saved vs the Chinchilla-optimal model of the same loss")
    savings_fraction: float
    inference_tokens: float
    effective_inference_tokens: float = Field(description="D_inf in the optimality condition (cost-weighted when a cost model is used)")
    quality_of_params: float | None = None
    chinchilla: ModelPoint
    optimum: ModelPoint
    usd_saved: float | None = None
    usd_savings_fraction: float | None = None
    objective: str = "flops"
    laws: str
    laws_default_used: bool = False
    laws_note: str = ""
    laws_source: str = ""
    assumptions: dict[str, Any] = Field(default_factory=dict)


# ---- entry points --------------------------------------------------------------------------

def _positive(name: str, v: float, hi: float = 1e40, allow_zero: bool = False) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number, got {v!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero) or v > hi:
        lo = "zero or more" if allow_zero else "positive"
        raise UsageError(f"{name} must be a {lo} finite number up to {hi:g}, got {v!r}")
    return v


def size_for_compute(compute_flops: float, laws: str | ScalingLaw | None = None) -> ComputeOptimum:
    """Chinchilla approach-3 compute-optimal params and tokens for a training FLOP budget."""
    c = _positive("compute budget (FLOPs)", compute_flops, hi=1e35)
    if c < 1e6:
        raise UsageError(f"compute budget {c:g} FLOPs is too small to train a language model (try e.g. 1e21)")
    law = get_law(laws)
    n, d = law.compute_optimal(c)
    return ComputeOptimum(params=n, tokens=d, training_flops=6 * n * d, tokens_per_param=d / n,
                          loss=law.loss(n, d), laws=law.name, laws_source=law.source,
                          assumptions={"training_flops_rule": "6·N·D", "E": law.E, "A": law.A, "B": law.B,
                                       "alpha": law.alpha, "beta": law.beta})


MAX_PARAMS_FOR_LOSS = 1e16  # the --quality-of limit: a target loss needing more is not a model anyone trains


def size_for_loss(
    loss: float,
    inference_tokens: float,
    laws: str | ScalingLaw | None = None,
    cost: CostModel | None = None,
    quality_of_params: float | None = None,
) -> InferenceAwareOptimum:
    """Params and training tokens that reach `loss` at the least lifetime FLOPs (or dollars).

    Without a cost model, inference tokens count at 2·N FLOPs each (Sardana et al.'s FLOPs
    objective); with one, they are weighted by K_inf/K_tr (decode runs at low MFU).
    When `laws` is None the default inference-aware constants are used (`--laws sardana` reproduces the paper).
    """
    default_used = laws is None
    law = get_law(laws if laws is not None else default_law_name(inference_aware=True))
    loss = float(loss)
    if not math.isfinite(loss):
        raise UsageError(f"loss must be a finite number, got {loss!r}")
    d_inf = _positive("inference tokens", inference_tokens, hi=1e20, allow_zero=True)
    d_eff = cost.effective_inference_tokens(d_inf) if cost is not None else d_inf
    n_c, d_c = law.chinchilla_for_loss(loss)
    if not (math.isfinite(n_c) and n_c <= MAX_PARAMS_FOR_LOSS):
        raise UsageError(f"loss {loss:g} is too close to the irreducible {law.E:g} of the {law.name!r} constants: its "
                         f"compute-optimal model has over {MAX_PARAMS_FOR_LOSS:.0e} parameters")
    d_opt = law.inference_aware_tokens(loss, d_eff)
    n_opt = law.params_for_loss_and_tokens(loss, d_opt)
    if not math.isfinite(n_opt):  # numerically at the asymptote: no smaller model exists
        n_opt, d_opt = n_c, d_c

    def point(n: float, d: float) -> ModelPoint:
        tr, inf = 6 * n * d, 2 * n * d_inf
        p = ModelPoint(params=n, tokens=d, tokens_per_param=d / n, training_flops=tr, inference_flops=inf,
                       total_flops=tr + inf)
        if cost is not None:
            tr_usd = tr * cost.usd_per_train_flop
            inf_usd = inf * cost.usd_per_inference_flop_blend()
            p.training_usd, p.inference_usd, p.total_usd = tr_usd, inf_usd, tr_usd + inf_usd
        return p

    ref, opt = point(n_c, d_c), point(n_opt, d_opt)
    saved = ref.total_flops - opt.total_flops
    note = DEFAULT_LAWS_NOTE.format(law=law.name) if default_used else ""
    assumptions: dict[str, Any] = {"E": law.E, "A": law.A, "B": law.B, "alpha": law.alpha, "beta": law.beta,
                                   "training_flops_rule": "6·N·D", "inference_flops_rule": "2·N per token"}
    if cost is not None:
        assumptions.update({f"cost_{k}": v for k, v in cost.model_dump().items()})
    return InferenceAwareOptimum(
        params=n_opt, tokens=d_opt, training_flops=opt.training_flops, inference_flops=opt.inference_flops,
        total_flops=opt.total_flops, tokens_per_param=d_opt / n_opt, loss=loss,
        flops_saved=saved, savings_fraction=saved / ref.total_flops if ref.total_flops > 0 else 0.0,
        inference_tokens=d_inf, effective_inference_tokens=d_eff, quality_of_params=quality_of_params,
        chinchilla=ref, optimum=opt,
        usd_saved=(ref.total_usd - opt.total_usd) if cost is not None else None,
        usd_savings_fraction=((ref.total_usd - opt.total_usd) / ref.total_usd) if cost is not None else None,
        objective="usd" if cost is not None else "flops",
        laws=law.name, laws_default_used=default_used, laws_note=note, laws_source=law.source,
        assumptions=assumptions,
    )


def size_for_quality_of(
    n_params: float,
    inference_tokens: float,
    laws: str | ScalingLaw | None = None,
    cost: CostModel | None = None,
) -> InferenceAwareOptimum:
    """The lifetime-optimal model matching the loss of a Chinchilla-optimal `n_params` model."""
    n = _positive("--quality-of (parameters)", n_params, hi=1e16)
    if n < 1e3:
        raise UsageError(f"--quality-of must be a parameter count such as 13B or 1.3e10, got {n_params!r}")
    law = get_law(laws if laws is not None else default_law_name(inference_aware=True))
    res = size_for_loss(law.chinchilla_loss_of_params(n), inference_tokens, laws=law, cost=cost, quality_of_params=n)
    if laws is None:
        res.laws_default_used = True
        res.laws_note = DEFAULT_LAWS_NOTE.format(law=law.name)
    return res
