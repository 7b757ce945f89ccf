"""The exact optimum of the slow layer's convex problem, for the same capacities as the run.

Two forms of the same problem, maximise ``sum_k U_k(x_k)`` (:mod:`ccgym.hopass.utility`):

* :func:`single_link_optimum`: the classes share one bottleneck of capacity ``C``. The
  utilities are increasing and strictly concave, so the optimum fills the link and equalises
  the marginal utilities, ``U_k'(x_k) = mu`` for every ``k`` (KKT). Each class's rate at a price
  is closed-form (:meth:`ClassUtility.rate_at_price`), so the optimum is the root ``mu`` of
  ``sum_k x_k(mu) = C``, found by :func:`scipy.optimize.brentq` to machine precision.
* :func:`network_optimum`: flows with fixed paths over links of given capacities; a class's rate
  is the sum of its flows' rates, ``sum_{f through l} r_f <= c_l``. Solved with scipy's SLSQP on
  the logarithms of the flow rates with the analytic gradient. On one link it agrees with the
  closed form (tested).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ccgym.hopass.utility import ClassUtility, total_utility


@dataclass(frozen=True)
class Optimum:
    """The optimum's class rates (Mb/s), total utility and price (marginal utility at the
    optimum; None from the numerical solver)."""

    rates_mbps: tuple[float, ...]
    utility: float
    price: float | None = None


def single_link_optimum(classes: Sequence[ClassUtility], capacity_mbps: float) -> Optimum:
    """The classes' optimal split of one link of ``capacity_mbps``."""
    from scipy.optimize import brentq

    if not classes:
        raise ValueError("no classes")
    if not capacity_mbps > 0:
        raise ValueError(f"capacity must be positive, not {capacity_mbps}")

    def excess(log_mu: float) -> float:
        mu = math.exp(log_mu)
        return sum(c.rate_at_price(mu) for c in classes) / capacity_mbps - 1.0

    # every demand falls strictly with the price: bracket the root in log space, then solve
    lo, hi = -1.0, 1.0
    while excess(lo) < 0:
        lo *= 2
    while excess(hi) > 0:
        hi *= 2
    log_mu = brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    mu = math.exp(log_mu)
    rates = [c.rate_at_price(mu) for c in classes]
    scale = capacity_mbps / sum(rates)  # the last ulp: the rates fill the link exactly
    rates = [x * scale for x in rates]
    return Optimum(tuple(rates), total_utility(classes, rates), mu)


def network_optimum(
    classes: Sequence[ClassUtility],
    flow_class: Sequence[int],
    flow_links: Sequence[Sequence[int]],
    capacities_mbps: Sequence[float],
    *,
    tol: float = 1e-15,
) -> tuple[Optimum, np.ndarray]:
    """The optimum over flows with fixed paths; returns it and the flows' rates (Mb/s).

    Args:
        classes: the objective classes.
        flow_class: each flow's class index (0-based).
        flow_links: each flow's links, as indices into ``capacities_mbps``.
        capacities_mbps: each link's capacity.
    """
    from scipy.optimize import minimize

    n_flows, n_links, n_cls = len(flow_class), len(capacities_mbps), len(classes)
    if len(flow_links) != n_flows:
        raise ValueError(f"{n_flows} flows but {len(flow_links)} paths")
    member = np.zeros((n_cls, n_flows))
    routing = np.zeros((n_links, n_flows))
    for f, (k, links) in enumerate(zip(flow_class, flow_links, strict=True)):
        if not 0 <= k < n_cls:
            raise ValueError(f"flow {f}: no class {k}")
        member[k, f] = 1.0
        for link in links:
            routing[link, f] = 1.0
    if (member.sum(axis=1) == 0).any():
        raise ValueError("every class needs at least one flow")
    cap = np.asarray(capacities_mbps, dtype=float)
    # Variables: z_f = log(r_f / scale). Optimal rates span orders of magnitude (a min-FCT
    # class can get a millionth of a link another class fills), which SLSQP's absolute
    # tolerances on linear rates miss; the logarithms are all of one size, and r_f > 0 holds
    # by construction. The map is a diffeomorphism of the open orthant, so the problem's
    # unique KKT point is the one SLSQP finds.
    scale = float(cap.max())

    def class_rates(z: np.ndarray) -> np.ndarray:
        return member @ (np.exp(z) * scale)

    def raw_gradient(z: np.ndarray) -> np.ndarray:
        x = class_rates(z)
        d = np.array([c.derivative(float(v)) for c, v in zip(classes, x, strict=True)])
        return (member.T @ d) * np.exp(z) * scale

    def objective(z: np.ndarray) -> float:
        x = class_rates(z)
        return -sum(c.shifted_value(float(v)) for c, v in zip(classes, x, strict=True)) / obj_scale

    def gradient(z: np.ndarray) -> np.ndarray:
        return -raw_gradient(z) / obj_scale

    # start: every link's capacity split evenly over its flows, the tightest link binding
    per_link = np.where(routing.sum(axis=1) > 0, cap / np.maximum(routing.sum(axis=1), 1), np.inf)
    start = np.log(np.array([per_link[routing[:, f] > 0].min() for f in range(n_flows)]) / scale)
    # the objective too: unit gradient at the start, whatever the utilities' units
    obj_scale = float(np.abs(raw_gradient(start)).max()) or 1.0
    res = minimize(
        objective,
        start,
        jac=gradient,
        method="SLSQP",
        constraints=[
            {
                "type": "ineq",
                "fun": lambda z: cap / scale - routing @ np.exp(z),
                "jac": lambda z: -routing * np.exp(z),
            }
        ],
        options={"maxiter": 2000, "ftol": tol},
    )
    flows = np.exp(res.x) * scale
    load = routing @ flows
    # status 8 ("positive directional derivative in the line search") is SLSQP stopping at
    # the limit of floating point; the checks below decide whether the point is the optimum
    if not (res.success or res.status == 8) or not np.all(np.isfinite(flows)):
        raise RuntimeError(f"the optimum solver did not converge: {res.message}")
    if np.any(load > cap * (1 + 1e-6)):
        raise RuntimeError("the optimum solver ended outside the capacity region")
    flows = flows / max(1.0, float(np.max(load / cap)))  # the last ulp inside the links
    rates = member @ flows
    return Optimum(tuple(float(x) for x in rates), total_utility(classes, rates)), flows
