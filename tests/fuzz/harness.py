"""The fuzzer's parent side: a worker process per session, and the invariants of a reply.

:class:`Worker` keeps one ``worker.py`` process and sends it cases; a case that kills the
process or overruns its wall-clock budget becomes a ``died`` or ``timeout`` reply and the next
case gets a fresh process. The ``check_*`` functions turn a reply into a list of violated
invariants (empty: the case passed), so the same code serves the pytest properties (which
assert the list is empty) and the survey mode that records every failure.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("worker.py")
PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"

FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?)*: ")
"""A scenario error starts with the dotted path of the field it is about (``a.b[2].c: ...``)."""

LEAKS = ("panicked", "simulator failure", "RUST_BACKTRACE", ".rs:")
EPS = 1e-9


class Worker:
    """One worker process, restarted after a case kills it or overruns its budget."""

    def __init__(self, timeout_s: float, mem_mb: int = 3072) -> None:
        self.timeout_s = timeout_s
        self.mem_mb = mem_mb
        self.proc: subprocess.Popen[str] | None = None
        self.cases = 0
        self.restarts = 0

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
        env["CCGYM_FUZZ_MEM_MB"] = str(self.mem_mb)
        env.setdefault("RUST_BACKTRACE", "0")
        proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        # stderr is drained in the background so that a chatty case cannot block the worker.
        tail: list[str] = []
        proc.stderr_tail = tail  # type: ignore[attr-defined]

        def drain() -> None:
            assert proc.stderr is not None
            try:
                for line in proc.stderr:
                    tail.append(line)
                    del tail[:-40]
            except ValueError:  # `close` closed the pipe before the dead worker's EOF came
                pass

        threading.Thread(target=drain, daemon=True).start()
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if not ready:
            raise RuntimeError("the fuzz worker did not start: " + "".join(tail))
        return proc

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
            self.proc = None

    def request(self, req: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one case; the reply, or ``died`` / ``timeout`` with the worker's last stderr."""
        if self.proc is None or self.proc.poll() is not None:
            self.close()  # a worker that died: its pipes, before the next one
            self.proc = self._start()
        proc = self.proc
        self.cases += 1
        assert proc.stdin is not None and proc.stdout is not None
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        try:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        t0 = time.perf_counter()
        reader.start()
        reader.join(timeout_s or self.timeout_s)
        elapsed = time.perf_counter() - t0
        tail = "".join(proc.stderr_tail[-10:])  # type: ignore[attr-defined]
        if reader.is_alive():
            proc.kill()
            proc.wait()
            reader.join()
            self.close()
            self.restarts += 1
            return {"status": "timeout", "limit_s": timeout_s or self.timeout_s, "stderr": tail}
        if not line or not line[0]:
            code = proc.wait()
            self.close()
            self.restarts += 1
            name = signal.Signals(-code).name if code < 0 else f"exit {code}"
            return {"status": "died", "returncode": code, "signal": name, "stderr": tail}
        reply = json.loads(line[0])
        reply["elapsed_s"] = round(elapsed, 3)
        return reply


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _ended(reply: dict[str, Any]) -> str:
    """A case that killed its worker or overran its wall-clock budget."""
    return f"the case {reply['status']}: " + json.dumps(
        {k: v for k, v in reply.items() if k != "status"}
    )


def check_error(reply: dict[str, Any], case: dict[str, Any] | None = None) -> list[str]:
    """A rejected scenario must raise ScenarioError whose message names a field and says what
    is wrong (not serde's bare "expected value" for NaN and infinities; an integer given in the
    scenario (``case["exact_int"]``) not called a floating-point number)."""
    if reply.get("type") != "ScenarioError":
        return [
            f"a bad scenario raised {reply.get('type')}, not ScenarioError: {reply.get('message')}"
        ]
    msg = reply.get("message", "")
    bad = []
    if not FIELD.match(msg):
        bad.append(f"the error does not start with the field it is about: {msg!r}")
    elif msg.split(": ", 1)[1].strip() == "expected value":
        bad.append(f"the error names the field but not what is wrong with the value: {msg!r}")
    elif (case or {}).get("exact_int") and "floating point" in msg:
        bad.append(f"an integer is reported as a floating-point number: {msg!r}")
    if "\n" in msg or any(leak in msg for leak in LEAKS):
        bad.append(f"the error leaks internals or spans lines: {msg!r}")
    return bad


def check_consistency(run: dict[str, Any]) -> list[str]:
    """Bytes conserved, the run reached its end, counts and indices within their ranges."""
    s = run["summary"]
    bad = []
    if s["simulated_s"] != s["duration_s"]:
        bad.append(f"the run stopped at {s['simulated_s']} s of {s['duration_s']} s")
    c = s["conservation"]
    if c["sent_bytes"] != c["delivered_bytes"] + c["dropped_bytes"] + c["in_flight_bytes"]:
        bad.append(f"bytes not conserved: {c}")
    if any(v is not None and v < 0 for v in run["fct_s"]):
        bad.append("negative flow completion time")
    f = s["flows"]
    if f["completed"] > f["count"] or s["messages"]["completed"] > s["messages"]["count"]:
        bad.append(f"more completed than exist: flows {f}, messages {s['messages']}")
    for key in ("jain", "host_jain"):
        if _finite(f.get(key)) and not (0 <= f[key] <= 1 + EPS):
            bad.append(f"{key} outside [0, 1]: {f[key]!r}")
    return bad


def check_utilisation(run: dict[str, Any], scenario: dict[str, Any] | None = None) -> list[str]:
    """No port is more than fully used: summary bottleneck, summary ports, port_info.

    Ports whose link is a delivery trace (``[[link]]`` with ``trace`` or ``trace_process``) are
    left out: such a link delivers whole packets at its opportunities, and its reported rate is
    the trace's mean, so over a window shorter than a few opportunities (or a burst of a Poisson
    trace) it carries more than mean rate x window, as mahimahi's links do."""
    links = [x for x in (scenario or {}).get("link") or [] if isinstance(x, dict)]
    traced = {
        f"{x.get('from')}->{x.get('to')}" for x in links if {"trace", "trace_process"} & set(x)
    }
    s = run["summary"]
    bottleneck = s.get("bottleneck") or {}
    utils = (
        [] if bottleneck.get("port") in traced else [("bottleneck", bottleneck.get("utilization"))]
    )
    utils += [
        (f"ports[{p['name']}]", p.get("utilization")) for p in s["ports"] if p["name"] not in traced
    ]
    info = zip(run["port_names"], run["utilization"], strict=True)
    utils += [(f"port_info[{n}]", u) for n, u in info if n not in traced]
    return [f"utilisation above 1: {where} = {u!r}" for where, u in utils
            if _finite(u) and u > 1 + EPS]  # fmt: skip


def check_slowdown(run: dict[str, Any]) -> list[str]:
    """No flow completes faster than its ideal: summary percentiles and flow_info."""
    slow = run["summary"]["flows"]["slowdown"]
    bad = [f"summary slowdown {key} below 1: {slow[key]!r}" for key in ("mean", "p50", "p95", "p99")
           if _finite(slow.get(key)) and slow[key] < 1 - EPS]  # fmt: skip
    low = [(i, v) for i, v in enumerate(run["slowdown"]) if v is not None and v < 1 - EPS]
    if low:
        bad.append(f"flow slowdown below 1 for {len(low)} flows, e.g. flow {low[0][0]}: "
                   f"{low[0][1]!r}")  # fmt: skip
    return bad


SIZE_UNITS = {"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2,
              "GiB": 1024**3}  # fmt: skip


def size_bytes(value: Any) -> float | None:
    """A scenario size in bytes (``"32MiB"``, ``1500``), or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2) not in SIZE_UNITS and m.group(2):
        return None
    try:
        return float(m.group(1)) * SIZE_UNITS.get(m.group(2) or "B", 1)
    except ValueError:
        return None


def check_buffer(run: dict[str, Any], scenario: dict[str, Any]) -> list[str]:
    """No switch queue holds more data than its switch's shared buffer has, and no port more
    than that plus the control packets a port can be expected to hold."""
    sw = scenario.get("switch") or {}
    if not isinstance(sw, dict) or sw.get("buffer_model", "shared") != "shared" \
            or sw.get("discipline", "fifo") == "rank":  # fmt: skip
        return []
    buffer = size_bytes(sw.get("buffer", "32MiB"))
    if buffer is None:
        return []
    bad = [f"data queue above the switch buffer ({buffer:.0f} B): port {port} queue {queue} held "
           f"{peak} B" for port, queue, peak in run.get("data_queue_max", [])
           if peak > buffer + 0.5]  # fmt: skip
    if _receiver_paced(scenario):
        # A receiver-driven receiver (NDP, EQDS, pHost, Homa, HOPASS, the credit transport)
        # paces its pulls, tokens or grants at its own downlink's rate; where the path back to
        # the senders is slower, those control packets (which bypass admission, as in HPCC's
        # ns-3) queue there. The data bound above still holds.
        return bad
    # Control packets (ACKs, NACKs, CNPs, probes) bypass admission, as in HPCC's ns-3: the bound
    # is on data bytes, and a port may hold a few control packets on top. Allow two of the largest
    # per host (a port's control traffic answers the data of the hosts behind it).
    pk = scenario.get("packets") or {}
    ctrl = max((size_bytes(pk.get(k, d)) or d) for k, d in
               (("ack", 64), ("nack", 64), ("cnp", 64), ("probe", 128)))  # fmt: skip
    hosts = _hosts(scenario)
    limit = buffer + 2 * ctrl * hosts
    if sw.get("trim"):
        # Trimming ports also queue cut headers as control, up to their header-queue limit:
        # `trim_header_queue`, or twice `port_buffer`, or twice the buffer.
        cap = size_bytes(sw.get("trim_header_queue", 0)) or 0
        port = size_bytes(sw.get("port_buffer", 0)) or 0
        limit += cap if cap > 0 else 2 * (port if port > 0 else buffer)
    return bad + [f"queue above the switch buffer ({buffer:.0f} B + control): {p['name']} held "
                  f"{p['queue_max_kb'] * 1e3:.0f} B" for p in run["summary"]["ports"]
                  if p["queue_max_kb"] * 1e3 > limit + 0.5]  # fmt: skip


def _receiver_paced(scenario: dict[str, Any]) -> bool:
    """Whether any flow of a generated scenario may run a receiver-driven transport."""
    paced = {"ndp", "eqds", "phost", "homa", "hopass", "credit"}
    tables = [scenario.get("cc"), scenario.get("host")]
    for w in scenario.get("workload") or []:
        if isinstance(w, dict):
            tables += [w.get("cc"), w.get("host")]
    return any(isinstance(t, dict) and paced & {t.get("algorithm"), t.get("loss_recovery")}
               for t in tables)  # fmt: skip


def _hosts(scenario: dict[str, Any]) -> int:
    """Hosts of a generated scenario's topology (an upper bound for the kinds it uses)."""
    topo = scenario.get("topology") or {}
    kind = topo.get("kind")
    if kind == "leaf_spine":
        return int(topo.get("leaves", 1)) * int(topo.get("hosts_per_leaf", 1))
    if kind == "fat_tree":
        return int(topo.get("k", 4)) ** 3 // 4
    if kind == "dumbbell":
        return int(topo.get("left", 1)) + int(topo.get("right", 1))
    return int(topo.get("hosts", 64))


CHECKS = {"consistency": check_consistency, "utilisation": check_utilisation,
          "slowdown": check_slowdown}  # fmt: skip


def check_scenario(
    reply: dict[str, Any],
    checks: tuple[str, ...] = tuple(CHECKS),
    outcome: bool = True,
    case: dict[str, Any] | None = None,
) -> list[str]:
    """Invariants of a ``scenario`` request: rejected with a named field, or finished (within
    the wall-clock budget, without killing the process) and then the ``checks`` on its run, and
    a second run with the same seed identical to the first. With ``outcome=False`` a case that
    did not finish passes (another property judges how it ended). ``case`` (from the
    strategies) adds its own expectations: ``expect_reject`` (a scenario that cannot work must
    be refused) and, for the ``buffer`` check, its scenario."""
    status = reply["status"]
    case = case or {}
    if outcome and status == "ok" and case.get("expect_reject"):
        return [f"accepted a scenario that cannot work: {case['expect_reject']}"]
    if not outcome and status != "ok":
        return []
    if status in ("died", "timeout"):
        return [_ended(reply)]
    if status == "rejected":
        return check_error(reply, case)
    if status == "exception":
        return [f"{reply['type']} in {reply.get('stage')}: {reply['message']}"]
    runs = reply["runs"]
    bad = [
        b for name in checks if name not in ("buffer", "utilisation") for b in CHECKS[name](runs[0])
    ]
    if "utilisation" in checks:
        bad += check_utilisation(runs[0], case.get("scenario"))
    if "buffer" in checks:
        bad += check_buffer(runs[0], case["scenario"])
    for other in runs[1:]:
        if other["summary_text"] != runs[0]["summary_text"]:
            bad.append("same seed, different summary")
        if other["tables_digest"] != runs[0]["tables_digest"]:
            bad.append("same seed, different result tables")
    return bad


def check_bridge(reply: dict[str, Any]) -> list[str]:
    """Invariants of a bridge call sequence: every call succeeds or raises an exception a caller
    is meant to handle (never InternalError, never a dead process); calls the bridge cannot
    honour (the worker gives the reason in ``expect``) raise; and the summary afterwards
    conserves bytes."""
    status = reply["status"]
    if status in ("died", "timeout"):
        return [_ended(reply)]
    if status == "rejected":
        return check_error(reply)
    if status == "exception":
        return [f"{reply['type']} in {reply.get('stage')}: {reply['message']}"]
    bad = []
    for i, out in enumerate(reply["outcomes"]):
        if out["status"] == "exception":
            bad.append(f"call {i} ({out['call']}) raised {out['type']}: {out['message']}")
        elif out.get("expect") and out["status"] != "rejected":
            bad.append(f"call {i} ({out['call']} {out.get('args')}) was accepted: {out['expect']}")
    if "summary_error" in reply:
        bad.append(f"summary after the calls failed: {reply['summary_error']}")
    else:
        c = reply["summary"]["conservation"]
        if c["sent_bytes"] != c["delivered_bytes"] + c["dropped_bytes"] + c["in_flight_bytes"]:
            bad.append(f"bytes not conserved after the calls: {c}")
    return bad
