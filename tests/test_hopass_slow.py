"""HOPASS slow layer: utilities, the exact optimum, the share search, the experiments against the
simulator (the four Table 3 cases, re-convergence) and the bench suites end to end."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ccgym._errors import ScenarioError
from ccgym.bench.runner import load_suite, run_suite
from ccgym.hopass import (
    ClassUtility,
    SlowLayer,
    SlowLayerConfig,
    load_experiment,
    network_optimum,
    project_to_simplex,
    run_experiment,
    single_link_optimum,
    total_utility,
    wrr_weights,
)
from ccgym.hopass.experiment import SlotRecord
from ccgym.scenario import load_scenario

SUITE = load_suite("hopass-slow-layer")
CASES = {sc["label"]: (sc["scenario"], sc["overrides"]) for sc in SUITE["scenario"]}


# ------------------------------------------------------------------------- utilities, optimum


def test_two_prop_fair_classes_share_in_proportion_to_their_priorities() -> None:
    classes = [ClassUtility("prop", weight=1.0), ClassUtility("prop", weight=3.0)]
    opt = single_link_optimum(classes, 10_000.0)
    assert opt.rates_mbps == pytest.approx((2500.0, 7500.0), rel=1e-12)
    # flow counts weigh in the same way: n_k log(x_k / n_k) puts x_k in proportion to n_k
    classes = [ClassUtility("prop", flows=1), ClassUtility("prop", flows=4)]
    assert single_link_optimum(classes, 10_000.0).rates_mbps == pytest.approx((2000.0, 8000.0))
    net, _ = network_optimum(classes, [0, 1], [[0], [0]], [10_000.0])
    assert net.rates_mbps == pytest.approx((2000.0, 8000.0), rel=1e-6)


def test_min_fct_and_alpha_optima_have_their_closed_forms() -> None:
    # min-FCT: U = -lambda s / x, so x_k is proportional to sqrt(lambda_k s_k)
    classes = [ClassUtility("min_fct", size_mb=1.0), ClassUtility("min_fct", size_mb=9.0)]
    assert single_link_optimum(classes, 4000.0).rates_mbps == pytest.approx((1000.0, 3000.0))
    # alpha-fairness with alpha = 2: x_k proportional to sqrt(lambda_k)
    classes = [ClassUtility("alpha", weight=1, alpha=2), ClassUtility("alpha", weight=16, alpha=2)]
    assert single_link_optimum(classes, 5000.0).rates_mbps == pytest.approx((1000.0, 4000.0))


def test_network_optimum_of_the_classic_two_link_line() -> None:
    # flow 0 crosses both unit links, flows 1 and 2 one each: proportional fairness gives the
    # long flow 1/3 and the short ones 2/3 (Kelly's example)
    classes = [ClassUtility("prop") for _ in range(3)]
    opt, flows = network_optimum(classes, [0, 1, 2], [[0, 1], [0], [1]], [1.0, 1.0])
    assert flows == pytest.approx([1 / 3, 2 / 3, 2 / 3], abs=1e-6)
    assert opt.utility == pytest.approx(math.log(1 / 3) + 2 * math.log(2 / 3), abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(
    lam=st.lists(st.floats(0.1, 100), min_size=3, max_size=3),
    alpha=st.floats(0.3, 3.0),
    size=st.floats(0.1, 1000.0),
    flows=st.lists(st.integers(1, 8), min_size=3, max_size=3),
)
# rates six orders of magnitude apart: SLSQP on linear rates stopped 3e-5 short of the optimum
@example(lam=[1.0, 37.0, 0.125], alpha=0.375, size=1.0, flows=[6, 3, 1])
# alpha next to 1: y^(1-a) / (1-a) is 1e5 plus log y, and SLSQP on it ran out of iterations
@example(lam=[2.0, 3.0, 1.0], alpha=0.99999, size=2.0, flows=[1, 2, 2])
def test_numerical_and_closed_form_optima_agree(
    lam: list[float], alpha: float, size: float, flows: list[int]
) -> None:
    classes = [
        ClassUtility("prop", lam[0], flows[0]),
        ClassUtility("alpha", lam[1], flows[1], alpha=alpha),
        ClassUtility("min_fct", lam[2], flows[2], size_mb=size),
    ]
    exact = single_link_optimum(classes, 10_000.0)
    assert sum(exact.rates_mbps) == pytest.approx(10_000.0)
    # KKT: equal marginal utilities
    marginals = [c.derivative(x) for c, x in zip(classes, exact.rates_mbps, strict=True)]
    assert marginals == pytest.approx([exact.price] * 3, rel=1e-8)
    links = [[0]] * sum(flows)
    owner = [k for k, n in enumerate(flows) for _ in range(n)]
    numerical, _ = network_optimum(classes, owner, links, [10_000.0])
    assert numerical.utility == pytest.approx(exact.utility, rel=1e-7, abs=1e-7)
    # no feasible split does better
    for shares in ((0.2, 0.3, 0.5), (0.6, 0.2, 0.2), (1 / 3, 1 / 3, 1 / 3)):
        assert total_utility(classes, [10_000.0 * s for s in shares]) <= exact.utility + 1e-9


def test_utilities_and_their_inverse_derivative() -> None:
    log = ClassUtility("prop", weight=2.0, flows=3)
    assert log.value(300.0) == pytest.approx(2 * 3 * math.log(100.0))
    assert ClassUtility("alpha", alpha=1.0).value(50.0) == pytest.approx(math.log(50.0))
    fct = ClassUtility("min_fct", weight=1.0, flows=2, size_mb=8.0)
    assert fct.value(400.0) == pytest.approx(-2 * 8.0 / 200.0)  # two flows at 200 Mb/s
    for c in (log, ClassUtility("alpha", alpha=0.5, flows=2), fct):
        x = 1234.5
        assert c.rate_at_price(c.derivative(x)) == pytest.approx(x)
    with pytest.raises(ValueError, match="kind"):
        ClassUtility("maxmin")


# ------------------------------------------------------------------------------ the search


def test_projection_and_weights() -> None:
    s = project_to_simplex(np.array([0.9, 0.3, -0.4]), 0.01)
    assert s.sum() == pytest.approx(1.0) and s.min() >= 0.01 - 1e-12
    assert project_to_simplex(np.array([0.2, 0.3, 0.5])) == pytest.approx([0.2, 0.3, 0.5])
    w = wrr_weights([0.0601, 0.6799, 0.26], 100)
    assert sum(w) == 100 and w == [6, 68, 26]
    assert min(wrr_weights([0.001, 0.001, 0.998], 100)) == 1


def test_slow_layer_probes_then_decides_only_on_a_gain() -> None:
    cfg = SlowLayerConfig(delta=0.06)
    layer = SlowLayer(3, lambda r: -float(np.sum((r - [0.5, 0.3, 0.2]) ** 2)), cfg)
    assert layer.is_decision_slot()
    layer.record(layer.next_shares())  # the first decision slot measures the start
    probes = []
    for _ in range(3):
        shares = layer.next_shares()
        probes.append(shares)
        assert shares.sum() == pytest.approx(1.0)
        layer.record(shares)
    # probe k raises class k by delta and lowers each other by delta / 2
    assert probes[0] == pytest.approx([1 / 3 + 0.06, 1 / 3 - 0.03, 1 / 3 - 0.03])
    assert layer.decisions[-1].best_class == 0 and layer.decisions[-1].step > 0
    assert layer.shares[0] > 1 / 3
    # at the optimum no probe beats the decision: the allocation stays and delta halves
    layer = SlowLayer(3, lambda r: -float(np.sum((r - [0.5, 0.3, 0.2]) ** 2)), cfg, [0.5, 0.3, 0.2])
    for _ in range(4):
        layer.record(layer.next_shares())
    assert layer.shares == pytest.approx([0.5, 0.3, 0.2])
    assert layer.decisions[-1].step == 0 and layer.delta == pytest.approx(0.03)


def test_slow_layer_finds_the_optimum_of_an_exact_model() -> None:
    """Rates follow the shares exactly (a WRR bottleneck with every class backlogged)."""
    for label, (_, overrides) in CASES.items():
        data, _ = load_scenario(CASES[label][0], overrides)
        exp = load_experiment(data)
        classes = [c.with_changes(flows=2) for c in exp.classes]
        opt = single_link_optimum(classes, 10_000.0)
        layer = SlowLayer(3, lambda r, c=classes: total_utility(c, r), exp.config)
        for _ in range(4 * 40):
            layer.record(10_000.0 * layer.next_shares())
        got = total_utility(classes, 10_000.0 * layer.shares)
        assert abs(got - opt.utility) <= 0.002 * abs(opt.utility), label


# ------------------------------------------------------------------- against the simulator


@pytest.fixture(scope="module")
def case_runs() -> dict[str, list[dict]]:
    out = {}
    for label, (scenario, overrides) in CASES.items():
        data, _ = load_scenario(scenario, overrides)
        out[label] = run_experiment(data, "hopass").regimes
    return out


@pytest.mark.parametrize("label", list(CASES))
def test_slow_layer_reaches_the_exact_optimum_in_every_table3_case(
    case_runs: dict[str, list[dict]], label: str
) -> None:
    before, after = case_runs[label]
    for regime in (before, after):
        assert regime["error_pct"] < 1.0, regime
        assert regime["alloc_error_pct"] < 5.0, regime
        assert regime["convergence_s"] is not None and regime["convergence_s"] < 0.12
        assert regime["link_util_pct"] > 99.0
    assert before["start_s"] == 0.0 and after["start_s"] == pytest.approx(0.15)
    # the demand change (two more proportional-fairness flows) moves the optimum
    assert after["optimum_rates_mbps"][0] > before["optimum_rates_mbps"][0] + 500


def test_the_slow_layer_writes_weights_and_ecn_thresholds_into_every_switch() -> None:
    scenario, overrides = CASES["case 2"]
    short = ["duration=40ms", "workload[0].flows[6].start=30ms", "workload[0].flows[7].start=30ms"]
    # over DCTCP, where the switches' WRR alone sets the rates, so they equal the weights' shares
    data, _ = load_scenario(scenario, [*overrides, *short, "hopass.transport=dctcp"])
    cfg = load_experiment(data).config
    seen = []

    def check(sim: Any, slot: SlotRecord) -> None:
        qs = sim.switch_queues()
        weights = wrr_weights(slot.shares, cfg.weight_scale)
        # the measured rates are the WRR weights' shares of the 10 Gb/s bottleneck
        assert slot.rates == pytest.approx([w * 100.0 for w in weights], abs=1.0)
        for port, queue in zip(qs["port"], qs["queue"], strict=True):
            kmin, kmax, pmax = sim.queue_ecn(int(port), int(queue))
            share = slot.shares[queue - 1]
            assert kmin == kmax == int(cfg.ecn_floor + share * cfg.ecn_per_share) and pmax == 1
        seen.append(tuple(slot.shares))

    run_experiment(data, "hopass", on_slot=check)
    assert len(seen) == 20 and len(set(seen)) > 5  # probes and moves


def test_without_the_slow_layer_the_allocation_is_far_from_the_optimum() -> None:
    data, _ = load_scenario(*CASES["case 1"])
    (before, _) = run_experiment(data, "dctcp").regimes
    assert before["rates_mbps"] == pytest.approx([10_000 / 3] * 3, rel=0.01)
    assert before["error_pct"] > 50 and before["convergence_s"] is None


def test_reconverges_after_the_min_fct_class_outstanding_bytes_change() -> None:
    scenario, overrides = CASES["case 4"]
    change = ['hopass.change=[{at = "100ms", class = 3, size = "150MB"}]', "duration=220ms"]
    change += ["workload[0].flows[6].start=210ms", "workload[0].flows[7].start=210ms"]
    data, _ = load_scenario(scenario, [*overrides, *change])
    res = run_experiment(data, "hopass")
    before, after = res.regimes[0], res.regimes[1]
    assert after["start_s"] == pytest.approx(0.1)
    assert after["optimum_rates_mbps"][2] > before["optimum_rates_mbps"][2] + 1500
    assert after["error_pct"] < 1.0 and after["alloc_error_pct"] < 5.0
    assert after["alloc_convergence_s"] is not None and after["alloc_convergence_s"] < 0.08
    # the slow layer actually moved: the min-FCT class's rate follows its new optimum
    assert after["rates_mbps"][2] > before["rates_mbps"][2] + 1000


def test_experiment_errors_name_the_key() -> None:
    scenario, overrides = CASES["case 1"]
    for extra, match in (
        (["hopass.slots=3"], "unknown key.*slots"),
        (["switch.queues=3"], "switch.queues must be 4"),
        (['hopass.classes=[{utility="prop"}, {utility="fair"}, {utility="prop"}]'], "kind"),
        (['hopass.change=[{at = "1ms", class = 5, size = "1MB"}]'], "no class 5"),
        (
            ['hopass.classes=[{utility="prop", alpha=2}, {utility="alpha"}, {utility="prop"}]'],
            r"hopass\.classes\[0\]: 'prop' class: alpha is for 'alpha' classes",
        ),
        (
            ['hopass.classes=[{utility="alpha", size="1MB"}, {utility="prop"}, {utility="prop"}]'],
            r"classes\[0\]: 'alpha' class: size is for 'min_fct' classes",
        ),
        (
            ['hopass.classes=[{utility="prop"}, {utility="alpha"}, {utility="min_fct"}]'],
            r"hopass\.classes\[2\]: a 'min_fct' class needs size",
        ),
        (['hopass.change=[{at = "1ms", class = 1, size = "1MB"}]'], "size is for 'min_fct'"),
        (["hopass.delta=0.9"], "delta"),
    ):
        data, _ = load_scenario(scenario, [*overrides, *extra])
        with pytest.raises(ScenarioError, match=match):
            load_experiment(data)


def test_the_slow_layer_over_a_classic_cc_reaches_the_optimum() -> None:
    """The bundled cases run over the fast layer (``transport = "hopass"``, the test above);
    over DCTCP the switches' WRR alone carries the shares, and the search gets there too."""
    scenario, overrides = CASES["case 4"]
    short = ["duration=100ms", "workload[0].flows[6].start=90ms", "workload[0].flows[7].start=90ms"]
    data, _ = load_scenario(scenario, [*overrides, *short, "hopass.transport=dctcp"])
    before = run_experiment(data, "hopass").regimes[0]
    assert before["error_pct"] < 1.0 and before["link_util_pct"] > 99.0
    assert before["convergence_s"] is not None and before["convergence_s"] < 0.08


def test_the_fast_layer_gets_the_class_weights_every_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``transport = "hopass"`` the receivers' token weights follow the shares. The fast
    layer is another deliverable: a stand-in Simulation runs DCTCP and records the calls."""
    import json
    import types

    from ccgym import runner

    real = runner.native()
    calls: list[list[float]] = []

    class FastLayerSim:
        def __init__(self, scenario: str, base_dir: str) -> None:
            data = json.loads(scenario)
            assert data["cc"] == {"algorithm": "hopass"}
            data["cc"] = {"algorithm": "dctcp"}
            self._sim = real.Simulation(json.dumps(data), base_dir)

        def set_hopass_weights(self, weights: list[float]) -> None:
            calls.append(list(weights))

        def __getattr__(self, name: str) -> Any:
            return getattr(self._sim, name)

    monkeypatch.setattr(runner, "native", lambda: types.SimpleNamespace(Simulation=FastLayerSim))
    scenario, overrides = CASES["case 3"]
    short = ["duration=20ms", "workload[0].flows[6].start=10ms", "workload[0].flows[7].start=10ms"]
    data, _ = load_scenario(scenario, [*overrides, *short, "hopass.transport=hopass"])
    res = run_experiment(data, "hopass")
    assert len(calls) == len(res.slots) == 10
    for weights, slot in zip(calls, res.slots, strict=True):
        assert min(weights) == 1.0  # normalised: the smallest class weight is 1 (6.4b)
        wrr = wrr_weights(slot.shares, 100)
        assert weights == pytest.approx([w / min(wrr) for w in wrr])


# ------------------------------------------------------------------------------------ bench


def test_bench_suites_run_end_to_end_at_a_small_size(tmp_path: Path) -> None:
    from ccgym.bench.report import write_report
    from ccgym.bench.tables import build_rows, markdown_table, table_spec

    slow = load_suite("hopass-slow-layer")
    slow["scenario"] = slow["scenario"][3:]  # case 4
    slow["overrides"] = [
        "duration=80ms",
        "workload[0].flows[6].start=50ms",
        "workload[0].flows[7].start=50ms",
    ]
    overall = load_suite("hopass-overall")
    overall["methods"] = ["hopass", "dctcp"]
    overall["overrides"] = [
        "duration=40ms",
        "topology.leaves=2",
        "topology.hosts_per_leaf=4",
        "topology.spines=2",
    ]
    for suite in (slow, overall):
        out = tmp_path / suite["name"]
        records, stats = run_suite(suite, out, jobs=1)
        assert stats.ran == len(suite["methods"]) and stats.cached == 0
        by_method = {r["method"]: r["metrics"] for r in records}
        assert by_method["hopass"]["err"] < by_method["dctcp"]["err"]
        assert all(m["util"] > 95 for m in by_method.values())
        spec = table_spec(suite["table"])
        rows = build_rows(records, spec=spec)
        md = markdown_table(rows, suite["name"], spec)
        assert "hopass" in md
        if suite is slow:  # the report draws every run: once is enough
            report = write_report(suite, records, out).read_text()
            assert "Slow layer over time" in report
        _, again = run_suite(suite, out, jobs=1)
        assert again.ran == 0 and again.cached == len(suite["methods"])
    # the published Table 3 numbers sit beside case 4's hopass row
    assert (
        "2588.2 / 6428.1 / 1642.8" in (tmp_path / "hopass-slow-layer" / "report.html").read_text()
    )


# ------------------------------------------------------------------------- slots against the run


SHORT = ["duration=40ms", "workload[0].flows[6].start=0s", "workload[0].flows[7].start=0s"]
"""A 40 ms run of one regime (the two flows that join at 150 ms start with the others)."""


class _Stop(Exception):
    """Raised by on_slot: the checks under test happen before the first slot."""


def _stop(sim: Any, slot: SlotRecord) -> None:
    raise _Stop


def test_a_slot_longer_than_the_run_is_refused() -> None:
    """``hopass.slot = 2`` is 2 s (a bare number is seconds): no slot fits in a 40 ms run,
    which used to give ``slots 0 regimes []`` and an IndexError at ``res.regimes[0]``."""
    scenario, overrides = CASES["case 1"]
    for method in ("hopass", "dctcp"):
        data, _ = load_scenario(scenario, [*overrides, *SHORT, "hopass.slot=2"])
        with pytest.raises(ScenarioError, match=r"hopass\.slot: value 2 \(seconds\).*40 ms"):
            run_experiment(data, method)


def test_a_regime_with_few_decision_slots_warns() -> None:
    """40 ms of 2 ms slots with three classes: 5 decision slots, as many as ``tail``: the final
    allocation would average the start of the search (a user saw gap 4.20 %, allocation error
    21.9 %, converged at 32 ms). The warning comes before the run."""
    from ccgym.hopass import ShortRegimeWarning
    from ccgym.hopass.experiment import check_slots

    scenario, overrides = CASES["case 1"]
    data, _ = load_scenario(scenario, [*overrides, *SHORT])
    with pytest.warns(ShortRegimeWarning, match=r"from 0 s holds 5 decision slot.*2 x tail = 10"):
        with pytest.raises(_Stop):
            run_experiment(data, "hopass", on_slot=_stop)
    # the bundled run (300 ms, a change at 150 ms: 19 and 18 decision slots) does not warn
    data, _ = load_scenario(scenario, overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_slots(load_experiment(data), data, round(0.3e12))
