"""Running bench jobs as Ray tasks (``ccgym bench --ray ADDRESS``).

Only the place where a job runs changes: :func:`ccgym.bench.runner.run_suite` still decides what
to run (the cache, resume), and every result comes back to it to be cached and tabulated, exactly
as from its process pool. Ray is the optional extra ``ray`` (``pip install 'ccgym[ray]'``).

``ADDRESS`` is one of

* ``local``: start a private Ray instance on this machine for this run (as many CPUs as
  ``--jobs``, default all) and shut it down afterwards;
* ``auto``: Ray's meaning, the cluster already running on this machine (``ray start --head``, or
  the one named by ``RAY_ADDRESS``);
* ``HOST:PORT`` (a cluster's GCS address) or ``ray://HOST:PORT`` (Ray Client).

A remote cluster needs the same ccgym (and native module) as the driver: every task reports its
:func:`~ccgym.bench.runner.code_version`, and a mismatch stops the run, since its results would be
cached under the driver's version.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

J = TypeVar("J")

LOCAL = "local"
AUTO = "auto"
CLIENT_PREFIX = "ray://"
CONNECT_TIMEOUT_S = 5.0
"""How long to wait for a TCP connection to the cluster before giving up: ``ray.init`` itself
retries an unreachable address for minutes without failing."""


class RayVersionError(RuntimeError):
    """A Ray worker runs another ccgym version than the driver."""


def import_ray() -> Any:
    """Import Ray, or fail with the command that installs it."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "--ray needs Ray, which is not installed: pip install 'ccgym[ray]' "
            "(or pip install 'ray>=2.9')"
        ) from None
    return ray


def _host_port(address: str) -> tuple[str, int]:
    text = address.removeprefix(CLIENT_PREFIX)
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"bad Ray address {address!r}: use local, auto, HOST:PORT or ray://HOST:PORT"
        )
    return host.strip("[]"), int(port)


def check_address(address: str) -> str:
    """Return ``address`` if it has one of the accepted forms, else raise ValueError."""
    if address not in (LOCAL, AUTO):
        _host_port(address)
    return address


def _resolve_auto() -> str:
    """The address ``auto`` stands for, or a ConnectionError if no cluster runs here."""
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        try:  # where Ray itself looks: the latest cluster started on this machine
            from ray._private.services import canonicalize_bootstrap_address

            address = canonicalize_bootstrap_address(AUTO)
        except Exception:  # a private helper: if it moved, let ray.init report
            return AUTO
    if not address:
        raise ConnectionError(
            "--ray auto: no Ray cluster is running on this machine (start one with "
            "`ray start --head`, or use --ray local for a private one)"
        )
    return address


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ConnectionError unless a TCP connection to ``HOST:PORT`` opens within ``timeout``."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise ConnectionError(f"cannot reach the Ray cluster at {address}: {reason}") from None


def connect(address: str, num_cpus: int | None = None) -> bool:
    """Connect to (or start) Ray for ``address``; True when this call initialised Ray.

    A process that is already connected (``ray.is_initialized()``) keeps its connection.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address == LOCAL:
        # Workers of a local instance inherit this process's environment (PYTHONPATH too), so
        # they import the same ccgym.
        ray.init(
            address=LOCAL, num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, **quiet
        )
        return True
    target = _resolve_auto() if address == AUTO else address
    if target != AUTO:
        check_reachable(target)
    try:
        ray.init(address=target, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ConnectionError(f"cannot connect to the Ray cluster at {address}: {e}") from None
    return True


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
    """Run on a worker: ``fn(*args)``, with the worker's ccgym code version."""
    from ccgym.bench.runner import code_version

    return code_version(), fn(*args)


def _get(ray: Any, ref: Any) -> Any:
    """``ray.get(ref)``, raising a failed task's own exception (a user's bad input is one line,
    not Ray's traceback of the worker)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise


def run_on_ray(
    fn: Callable[..., Any],
    calls: Sequence[tuple[J, tuple[Any, ...]]],
    on_result: Callable[[J, Any], None],
    address: str,
    *,
    num_cpus: int | None = None,
    context: Callable[[J], AbstractContextManager[Any]] | None = None,
) -> None:
    """Run ``fn(*args)`` for every ``(job, args)`` of ``calls`` as a Ray task (1 CPU each).

    ``on_result(job, result)`` is called in this process as each task finishes, in completion
    order. On an error (a failed task, Ctrl-C) the remaining tasks are cancelled and the error is
    raised: a task's own exception as the task raised it (without Ray's wrapper and its
    traceback text), inside ``context(job)`` when given. Ray is shut down afterwards if this
    call started or connected it.
    """
    if not calls:
        return
    ray = import_ray()
    from ccgym.bench.runner import code_version

    started = connect(address, num_cpus)
    expected = code_version()
    pending: dict[Any, J] = {}
    try:
        task = ray.remote(num_cpus=1)(_call)
        pending = {task.remote(fn, args): job for job, args in calls}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                with context(job) if context is not None else nullcontext():
                    version, result = _get(ray, ref)
                if version != expected:
                    raise RayVersionError(
                        f"a Ray worker runs ccgym {version}, this process {expected}: install "
                        "the same ccgym (and native module) on the cluster"
                    )
                on_result(job, result)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
