"""One of the papers' comparisons as data (``bench curves``): what is trained, what is compared,
which metrics decide the verdict and in which direction, the A/A control and the decisive budget."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AA_OFFSET", "LABELS", "SCALES", "Comparison"]

# the metric as shown: times this (100 for %, 1e3 for Chamfer), and its name in the records
SCALES = {"overall_accuracy": 100, "mean_class_accuracy": 100, "instance_miou": 100, "class_miou": 100,
          "chamfer": 1e3, "fscore": 1, "purity": 1, "retrieval": 1, "specificity": 1, "diversity": 1,
          "sampling_floor": 1e3, "capsule_spread": 1}
LABELS = {"overall_accuracy": "overall accuracy %", "mean_class_accuracy": "mean class accuracy %",
          "instance_miou": "instance mIoU %", "class_miou": "class mIoU %", "chamfer": "Chamfer x1e-3",
          "fscore": "F-score", "purity": "capsule part purity", "retrieval": "retrieval of 64",
          "specificity": "specificity", "diversity": "output diversity",
          "sampling_floor": "sampling floor x1e-3", "capsule_spread": "capsule spread"}
AA_OFFSET = 1000  # the A/A control's seeds: the pairing seed + this (independent of every other run)
_MODES = ("max", "min")


@dataclass(frozen=True)
class Comparison:
    """One of the papers' comparisons, as data: what is trained and what is compared."""

    doc: str  # one line: what the paper claims
    variants: dict[str, dict]  # label -> config overrides ({"model": ..., "model.k": ...})
    method: str  # the label of the paper's method
    metric: str  # the task metric compared (a key of the task's evaluate())
    mode: str  # "max" or "min": which direction is better
    unit: str  # "epochs" or "steps"
    budgets: tuple[int, ...]  # default budgets (>= 3, spanning >= 10x)
    preset: str | None = None  # preset the overrides start from (None: the defaults)
    base: dict = field(default_factory=dict)  # overrides shared by every variant
    extra: tuple[str, ...] = ()  # further metrics shown (mean ± std only; SCALES / LABELS name them)
    verdict_metrics: dict[str, str] = field(default_factory=dict)  # further metrics with a paired verdict:
    #                                                                name -> "max" | "min"
    control: str | None = None  # the baseline variant trained again with seeds + AA_OFFSET (the A/A floor)
    decisive: int | None = None  # the budget whose paired verdict is the comparison's verdict
    notes: tuple[str, ...] = ()  # lines printed under the verdict (which variant checks what)
    pairs: tuple[tuple[str, str], ...] = ()  # further (first, second) variants with a paired verdict of
    #                                          first minus second, e.g. the routings at another learning rate

    def __post_init__(self):
        if self.method not in self.variants:
            raise ValueError(f"method {self.method!r} is not a variant; choose from {list(self.variants)}")
        if self.control is not None and self.control not in self.variants:
            raise ValueError(f"control {self.control!r} is not a variant; choose from {list(self.variants)}")
        for pair in self.pairs:
            if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(self.variants):
                raise ValueError(f"a pair must name two different variants, got {pair!r}; choose from "
                                 f"{list(self.variants)}")
        for name, mode in {self.metric: self.mode, **self.verdict_metrics}.items():
            if mode not in _MODES:
                raise ValueError(f"the mode of {name} must be one of {list(_MODES)}, got {mode!r}")

    @property
    def budget_key(self) -> str:
        return "optim.max_steps" if self.unit == "steps" else "optim.epochs"

    @property
    def judged(self) -> dict[str, str]:
        """Every metric with a paired verdict, the compared one first: ``{name: mode}``."""
        return {self.metric: self.mode, **{k: v for k, v in self.verdict_metrics.items() if k != self.metric}}

    @property
    def recorded(self) -> tuple[str, ...]:
        """Every metric a row records: the judged ones, then the extra ones."""
        return tuple(dict.fromkeys([*self.judged, *self.extra]))

    def overrides(self, variant: str, budget: int, seed: int, out, extra: dict) -> dict:
        """The run config of ``variant`` at ``budget`` and ``seed``, written to ``out``."""
        return {**self.base, **self.variants[variant], **extra, "log.progress": False,
                "log.tensorboard": False, "seed": seed, self.budget_key: budget, "log.out_dir": str(out)}
