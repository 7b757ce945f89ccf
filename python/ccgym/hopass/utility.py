"""Utilities of HOPASS's objective classes (shared/specs/learning_cc.md section 6.2 and 6.4b).

Every objective class ``k`` has an aggregate rate ``x_k`` (Mb/s), a flow count ``n_k`` and a
priority ``lambda_k``; its utility is that of its ``n_k`` flows sharing ``x_k`` equally,

    U_k(x_k) = lambda_k * n_k * u(x_k / n_k),

with the per-flow utility ``u`` of the class's objective (the paper's Table 2):

* proportional fairness: ``u(y) = log(y)``;
* alpha-fairness: ``u(y) = y^(1 - alpha) / (1 - alpha)`` (``alpha = 1`` is the log case);
* minimum flow completion time: ``u(y) = -s / y``, with ``s`` the flow's size (here in Mb, so
  that ``-u`` is the flow's completion time in seconds at rate ``y``); ``n_k * (-u)`` is then
  the total completion time of the class's flows.

Rates are in Mb/s, as in the paper's Table 3. The total utility is the sum over classes. All
three are increasing and strictly concave, so the optimum over a capacity region is unique.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("prop", "alpha", "min_fct")
"""The objective kinds: proportional fairness, alpha-fairness, minimum FCT."""


@dataclass(frozen=True)
class ClassUtility:
    """The objective of one class: kind, priority ``weight`` (lambda_k), ``flows`` (n_k),
    ``alpha`` (alpha-fairness only) and ``size_mb`` (min-FCT only: s, in megabits)."""

    kind: str
    weight: float = 1.0
    flows: int = 1
    alpha: float = 2.0
    size_mb: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"utility kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ValueError(f"utility weight (lambda) must be positive, not {self.weight}")
        if self.flows < 1:
            raise ValueError(f"a class needs at least one flow, not {self.flows}")
        if self.kind == "alpha" and not (self.alpha > 0 and math.isfinite(self.alpha)):
            raise ValueError(f"alpha must be positive, not {self.alpha}")
        if self.kind == "min_fct" and not (self.size_mb > 0 and math.isfinite(self.size_mb)):
            raise ValueError(f"min-FCT size must be positive, not {self.size_mb}")

    def value(self, x: float) -> float:
        """U_k at aggregate rate ``x`` Mb/s (``-inf`` at ``x <= 0``)."""
        if x <= 0:
            return -math.inf
        n, y = self.flows, x / self.flows
        if self.kind == "prop" or (self.kind == "alpha" and self.alpha == 1.0):
            u = math.log(y)
        elif self.kind == "alpha":
            u = y ** (1.0 - self.alpha) / (1.0 - self.alpha)
        else:
            u = -self.size_mb / y
        return self.weight * n * u

    def shifted_value(self, x: float) -> float:
        """:meth:`value` less a constant of the class (so with the same maximiser): for alpha
        utilities ``w n (y^(1-a) - 1) / (1 - a)``, computed with ``expm1``, which tends to
        ``w n log y`` as ``a`` tends to 1 where :meth:`value` grows as ``1 / (1 - a)``; a solver
        on :meth:`value` there sees a huge constant and differences in its last digits."""
        if self.kind != "alpha" or self.alpha == 1.0 or x <= 0:
            return self.value(x)
        a = 1.0 - self.alpha
        return self.weight * self.flows * math.expm1(a * math.log(x / self.flows)) / a

    def derivative(self, x: float) -> float:
        """dU_k/dx at ``x`` Mb/s (> 0)."""
        y = x / self.flows
        if self.kind == "prop":
            return self.weight / y
        if self.kind == "alpha":
            return self.weight * y ** (-self.alpha)
        return self.weight * self.size_mb / (y * y)

    def rate_at_price(self, price: float) -> float:
        """The rate where the marginal utility equals ``price`` (the inverse of
        :meth:`derivative`): the class's demand at that price, in closed form."""
        n = self.flows
        if self.kind == "prop":
            return n * self.weight / price
        if self.kind == "alpha":
            return n * (self.weight / price) ** (1.0 / self.alpha)
        return n * math.sqrt(self.weight * self.size_mb / price)

    def with_changes(self, **changes: Any) -> ClassUtility:
        """A copy with some fields changed (a demand change: flows, size_mb, weight)."""
        fields = {k: getattr(self, k) for k in ("kind", "weight", "flows", "alpha", "size_mb")}
        fields.update(changes)
        return ClassUtility(**fields)


def total_utility(classes: Sequence[ClassUtility], rates_mbps: Sequence[float]) -> float:
    """Sum of the classes' utilities at their aggregate rates (Mb/s)."""
    if len(classes) != len(rates_mbps):
        raise ValueError(f"{len(classes)} classes but {len(rates_mbps)} rates")
    return sum(c.value(float(x)) for c, x in zip(classes, rates_mbps, strict=True))


OWN_KEYS = {"prop": set(), "alpha": {"alpha"}, "min_fct": {"size"}}
"""The keys of a class table that only one kind takes (``alpha``, ``size``)."""

REQUIRED_KEYS = {"prop": set(), "alpha": set(), "min_fct": {"size"}}
"""The keys a kind cannot do without: a min-FCT class's flow size has no sensible default."""


def class_from_table(table: Mapping[str, Any], where: str) -> ClassUtility:
    """A :class:`ClassUtility` from a TOML table ``{ utility = "prop", weight = 1, flows = 2,
    alpha = 2, size = "100MB" }`` (``size`` a ccgym size: bytes, or a string with a unit).

    ``utility`` is required, and ``size`` for ``min_fct``; ``weight`` defaults to 1, ``flows``
    to 1 and ``alpha`` (``alpha`` classes) to 2. A key of another kind (``alpha`` on a ``prop``
    class, ``size`` on an ``alpha`` one) is refused: it would be ignored, so it is likely a
    mistake."""
    known = {"utility", "weight", "flows", "alpha", "size"}
    unknown = set(table) - known
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
    if "utility" not in table:
        raise ValueError(f"{where}: needs utility = one of {', '.join(KINDS)}")
    kind = table["utility"]
    if kind in KINDS:
        other = sorted((set().union(*OWN_KEYS.values()) - OWN_KEYS[kind]) & set(table))
        if other:
            owners = ", ".join(f"{k} is for {o!r} classes" for k in other
                               for o, keys in OWN_KEYS.items() if k in keys)  # fmt: skip
            raise ValueError(f"{where}: {kind!r} class: {owners}; remove it")
        missing = sorted(REQUIRED_KEYS[kind] - set(table))
        if missing:
            raise ValueError(
                f"{where}: a {kind!r} class needs {' and '.join(missing)} (its flows' size,"
                ' s in u = -s / y, e.g. size = "200MB")'
            )
    args: dict[str, Any] = {"kind": table["utility"]}
    if "weight" in table:
        args["weight"] = float(table["weight"])
    if "flows" in table:
        args["flows"] = int(table["flows"])
    if "alpha" in table:
        args["alpha"] = float(table["alpha"])
    if "size" in table:
        args["size_mb"] = parse_size_bytes(table["size"]) * 8e-6
    try:
        return ClassUtility(**args)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


_SIZE_UNITS = {
    "B": 1.0, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9,
    "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3,
}  # fmt: skip


def parse_size_bytes(value: Any) -> float:
    """A ccgym size (docs/scenarios.md, "Units"): a number of bytes or ``"100MB"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        for unit in sorted(_SIZE_UNITS, key=len, reverse=True):
            if text.endswith(unit):
                return float(text[: -len(unit)].strip()) * _SIZE_UNITS[unit]
        return float(text)
    raise ValueError(f"not a size: {value!r}")
