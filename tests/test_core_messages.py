"""Scenario errors about numbers say what is wrong, in the user's terms (issue 16, class 8).

NaN and infinities reach the core as the JSON tokens ``NaN`` / ``Infinity``, which serde_json
used to reject with a bare "expected value"; integers beyond 64 bits were echoed as floating
point (``1e+20``). Each error still names the field.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import ScenarioError  # noqa: E402


def scenario(**extra: Any) -> dict[str, Any]:
    return {
        "duration": "100us",
        "topology": {"kind": "star", "hosts": 3},
        "workload": [{"kind": "long", "receiver": 0}],
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"seed": float("nan")}, "seed: value NaN: is not a number; give a finite number"),
        (
            {"host": {"min_rate_fraction": float("inf")}},
            "host.min_rate_fraction: value Infinity: is infinite",
        ),
        ({"cc": {"algorithm": "dctcp", "g": float("-inf")}}, "cc.g: value -Infinity: is infinite"),
        (
            {"packets": {"payload": 10**20}},
            "packets.payload: invalid value: integer `100000000000000000000`",
        ),
        (
            {"seed": 10**25},
            f"seed: invalid value: integer `{10**25}`, expected an integer from 0 to",
        ),
    ],
)
def test_number_errors_name_the_field_and_the_value_as_written(
    extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScenarioError) as e:
        ccgym.run(scenario(**extra), progress=False)
    assert str(e.value).startswith(message)


def test_nan_in_a_toml_file_is_named(tmp_path: Any) -> None:
    path = tmp_path / "nan.toml"
    path.write_text(
        'duration = "100us"\n[topology]\nkind = "star"\nhosts = 3\n'
        '[switch.ecn]\npmax = nan\n[[workload]]\nkind = "long"\n'
    )
    with pytest.raises(ScenarioError, match=r"^switch\.ecn\.pmax: value NaN: is not a number"):
        ccgym.run(str(path), progress=False)


def test_scenario_errors_survive_pickling() -> None:
    """Bench workers send a refused scenario's error to their parent by pickle; the message
    naming the field must arrive intact (it used to fail as `_sim.ScenarioError` could not be
    found by that name)."""
    import json
    import pickle

    from ccgym import _sim

    try:
        _sim.Simulation(json.dumps({"duration": "-1ms"}), ".")
    except ScenarioError as e:
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is ScenarioError and str(back) == str(e) and "duration" in str(back)
    else:
        raise AssertionError("a negative duration must be refused")
