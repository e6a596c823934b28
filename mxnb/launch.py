"""``python -m mxnb.launch``: start a distributed KVStore job (MXNet's tools/launch.py, on Ray).

Idea: the launcher is a Ray driver.  It starts (``--launcher local``, the
default) or joins (``--launcher ray``) a Ray cluster, creates the job's
servers as named actors (:func:`~mxnb.kvstore.dist_server.start_servers`),
and runs the command once per worker with the job's coordinates in the
environment (``MXNB_DIST_ADDRESS``, ``MXNB_DIST_JOB``, ``MXNB_DIST_RANK``,
``MXNB_DIST_NUM_WORKERS``, ``MXNB_DIST_NUM_SERVERS``, ``MXNB_DIST_TIMEOUT``;
see :mod:`mxnb.kvstore.dist`).  ``local`` runs the workers as child processes
of the launcher; ``ray`` runs each in a small runner actor spread over the
cluster's nodes, whose output the launcher prints prefixed ``[worker R]``.

Rules:
    * ``local`` starts a private Ray instance (no dashboard, a bounded object
      store) whose servers listen on 127.0.0.1 only, and shuts it down at the end;
    * the launcher exits with the first failing worker's code after stopping
      the others (0 when all succeed); the servers are owned by the launcher,
      so they end with it;
    * ``--timeout`` (``MXNB_DIST_TIMEOUT``, 60 s) bounds every wait of a
      participant on a peer; every number is checked before anything starts
      (:func:`check_launch_numbers`);
    * the launcher owns every process it starts, Ray's daemons included, from
      its first line: it is their subreaper, and whatever ends it (the job, a
      failing worker, Ctrl-C or SIGTERM while Ray starts) kills them all.

Example::

    python -m mxnb.launch -n 2 -s 1 python train.py --epochs 3
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

from .base import ParamError
from .validate import check_count, check_number

__all__ = [
    "WorkerRunner",
    "check_launch_numbers",
    "main",
    "parse_args",
    "run_tasks",
    "start_ray",
]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The launcher's command line."""
    parser = argparse.ArgumentParser(
        prog="python -m mxnb.launch", description="Run a dist_sync / dist_async job on Ray."
    )
    parser.add_argument("-n", "--num-workers", type=int, required=True, help="worker processes")
    parser.add_argument("-s", "--num-servers", type=int, default=1, help="server actors")
    parser.add_argument("--launcher", choices=("local", "ray"), default="local")
    parser.add_argument("--address", default=None, help="Ray cluster (ray launcher; RAY_ADDRESS)")
    parser.add_argument(
        "--timeout",
        type=_number_text,
        default=None,
        help="seconds a participant waits for a dead or stalled peer (MXNB_DIST_TIMEOUT, 60)",
    )
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument(
        "--object-store-mb", type=int, default=256, help="object store of the local Ray instance"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the worker's command")
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("give the command each worker runs, e.g. python train.py")
    if args.timeout is None:
        text = os.environ.get("MXNB_DIST_TIMEOUT", "60")
        try:
            args.timeout = _number_text(text)
        except argparse.ArgumentTypeError:
            parser.error(f"MXNB_DIST_TIMEOUT={text!r} is not a number of seconds")
    try:
        check_launch_numbers(args)
    except ParamError as exc:
        parser.error(str(exc))
    return args


def _number_text(text: str) -> float:
    """A command-line number (range checks follow in :func:`check_launch_numbers`)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def check_launch_numbers(args: argparse.Namespace) -> None:
    """Every number of the launcher, checked in one place (finite, in range); ParamError if not."""
    owner = "python -m mxnb.launch"
    check_count(args.num_workers, "-n/--num-workers", owner, low=1)
    check_count(args.num_servers, "-s/--num-servers", owner, low=1)
    check_count(args.num_cpus, "--num-cpus", owner, low=1)
    check_count(args.object_store_mb, "--object-store-mb", owner, low=1)
    # a bound on every wait of a participant: positive and finite (nan would never time out)
    check_number(args.timeout, "--timeout", owner, low=0, low_open=True)


def _loopback_only() -> None:
    """Make a private Ray instance advertise and bind 127.0.0.1 only.

    Ray turns ``_node_ip_address='127.0.0.1'`` into the machine's reachable
    address, and its servers then listen on every interface.  With clusters
    switched off (Ray's own switch for laptops, read by this process and
    inherited by every process of the instance) the node address is the
    loopback one, and Ray binds its gRPC servers to it alone.
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # read at call time; ray may be imported already


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (Linux ``/proc``; empty elsewhere)."""
    parents = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                parents[int(entry)] = int(stream.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def _descendants() -> set[int]:
    """The pids of this process's children, their children, and so on."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _kill_descendants(keep: set[int]) -> int:
    """SIGKILL every descendant not in ``keep`` (until none is left), reap ours; return the count."""
    killed: set[int] = set()
    for _ in range(20):  # a dying daemon may still fork: look again until nothing new appears
        targets = _descendants() - keep - killed
        if not targets:
            break
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= targets
        time.sleep(0.05)
    for pid in killed:  # our children (orphans too, with the subreaper flag) must not stay zombies
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
    return len(killed)


def _become_subreaper() -> bool:
    """Linux: orphaned descendants are re-parented to this process, not to init.

    Ray's daemons outlive the processes that start them; with this flag
    (``prctl(PR_SET_CHILD_SUBREAPER)``) they stay in this process's tree, so
    :func:`_kill_descendants` finds every one of them.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def start_ray(
    num_cpus: int = 2, object_store_mb: int = 256, address: str | None = None, attempts: int = 3
) -> str:
    """Start a private Ray instance (``address=None``) or join ``address``; return its GCS address.

    Ray gives its node 30 s to start; on a loaded machine that can pass.  A private
    instance then gets another attempt, after the processes the failed one started
    are killed (by pid: only this process's new children).
    """
    import ray

    if address is not None:
        ray.init(address=address, namespace="mxnb", log_to_driver=False, configure_logging=False)
        return ray.get_runtime_context().gcs_address
    _loopback_only()
    for attempt in range(1, attempts + 1):
        before = _descendants()
        # Ray's handles of a failed start's processes warn when collected; they are killed here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                ray.init(
                    address="local",
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    num_cpus=num_cpus,
                    object_store_memory=object_store_mb * 1024 * 1024,
                    namespace="mxnb",
                    log_to_driver=False,
                    configure_logging=False,
                )
                return ray.get_runtime_context().gcs_address
            except Exception as exc:
                _kill_descendants(before)  # what the failed start left running
                if "timed out during startup" not in str(exc) or attempt == attempts:
                    raise
                print(f"mxnb.launch: Ray did not start ({exc}); trying again", file=sys.stderr)
            time.sleep(1.0)
            ray.shutdown()
            gc.collect()
    raise AssertionError("unreachable: the last attempt returns or raises")


def run_tasks(
    fn: Any,
    num_workers: int,
    num_servers: int,
    kvtype: str = "dist_sync",
    timeout: float = 60.0,
    **kwargs: Any,
) -> list[Any]:
    """Run ``fn(kv, **kwargs)`` as a job of ``num_workers`` Ray tasks (in a running Ray driver).

    The in-cluster form of the launcher, for tests, benchmarks and notebooks: it starts
    the job's servers, gives each task its :class:`~mxnb.kvstore.dist.DistKVStore`, and
    returns each worker's result, or the Ray error of a worker that failed.
    """
    import ray

    from .kvstore.dist import DistKVStore, JobConfig
    from .kvstore.dist_server import start_servers

    job = f"tasks-{uuid.uuid4().hex[:8]}"
    servers = start_servers(job, num_servers, num_workers, timeout)

    @ray.remote(num_cpus=1, max_retries=0)
    def worker(rank: int) -> Any:
        from . import engine

        config = JobConfig(None, job, rank, num_workers, num_servers, timeout)
        # The job ends here: its last pushes / pulls, and the failures of its ops, must not
        # outlive it in this process (Ray reuses it for the next job's tasks).
        try:
            result = fn(DistKVStore(kvtype, config), **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):
                engine.get().wait_for_all()  # raises (and forgets) the failures the job left
            raise
        engine.get().wait_for_all()
        return result

    refs = [worker.remote(rank) for rank in range(num_workers)]
    results: list[Any] = []
    for ref in refs:
        try:
            results.append(ray.get(ref, timeout=timeout + 120))
        except ray.exceptions.RayError as exc:
            results.append(exc)
    del servers  # the job's servers end with their last handle
    return results


class WorkerRunner:
    """Runs one worker's command on a node of the cluster (``--launcher ray``; a Ray actor).

    The command's output (stdout and stderr) is kept by line until the launcher polls it.
    """

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **env},
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def poll(self) -> tuple[int | None, list[str]]:
        """The exit code (None while it runs) and the output lines since the last poll."""
        code = self.process.poll()
        if code is not None:
            self.reader.join(timeout=10)
        lines, self.lines = self.lines, []
        return code, lines

    def stop(self) -> None:
        """Kill the worker's process group."""
        _kill(self.process)


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)


class _Job:
    """The workers of one job and how to poll and stop them."""

    def __init__(self, args: argparse.Namespace, address: str, job: str) -> None:
        import ray

        self.local = args.launcher == "local"
        self.handles: list[Any] = []
        for rank in range(args.num_workers):
            env = {
                "MXNB_DIST_ADDRESS": address,
                "MXNB_DIST_JOB": job,
                "MXNB_DIST_RANK": str(rank),
                "MXNB_DIST_NUM_WORKERS": str(args.num_workers),
                "MXNB_DIST_NUM_SERVERS": str(args.num_servers),
                "MXNB_DIST_TIMEOUT": str(args.timeout),
            }
            if self.local:
                process = subprocess.Popen(
                    args.command, env={**os.environ, **env}, start_new_session=True
                )
                self.handles.append(process)
            else:
                runner = ray.remote(num_cpus=0, scheduling_strategy="SPREAD")(WorkerRunner)
                self.handles.append(runner.remote(args.command, env))

    def poll(self) -> list[int | None]:
        import ray

        if self.local:
            return [process.poll() for process in self.handles]
        codes = []
        polled = ray.get([runner.poll.remote() for runner in self.handles], timeout=120)
        for rank, (code, lines) in enumerate(polled):
            for line in lines:
                print(f"[worker {rank}] {line}", end="", flush=True)
            codes.append(code)
        return codes

    def stop(self) -> None:
        import ray

        if self.local:
            for process in self.handles:
                _kill(process)
        else:
            ray.get([runner.stop.remote() for runner in self.handles], timeout=120)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; return the exit code (the first failing worker's, else 0; 130 on Ctrl-C).

    The launcher owns every process it starts, from its first line: whatever
    happens (a worker failing, Ctrl-C or SIGTERM while Ray starts or the job
    runs), every process started below it is killed before it returns.
    """
    keep = _descendants()  # what already ran (main called from a program of its own)
    restore = _terminate_as_interrupt()
    try:
        return _run(parse_args(argv))
    except KeyboardInterrupt:
        print("mxnb.launch: interrupted; stopping every process of the job", file=sys.stderr)
        return 130
    finally:
        _kill_descendants(keep)
        restore()


def _terminate_as_interrupt() -> Any:
    """SIGTERM raises KeyboardInterrupt here (so clean-up runs); returns the undo function."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    """The job of :func:`main`, after the command line is read."""
    import ray

    from .kvstore.dist_server import start_servers

    address = args.address or os.environ.get("RAY_ADDRESS")
    if args.launcher == "ray" and not address:
        print("mxnb.launch: --launcher ray needs --address or RAY_ADDRESS", file=sys.stderr)
        return 2
    gcs = start_ray(
        args.num_cpus, args.object_store_mb, address if args.launcher == "ray" else None
    )
    job = f"job-{uuid.uuid4().hex[:8]}"
    code = 0
    try:
        servers = start_servers(job, args.num_servers, args.num_workers, args.timeout)  # noqa: F841 - handles keep the actors alive
        workers = _Job(args, gcs, job)
        try:
            while True:
                codes = workers.poll()
                failed = [(rank, c) for rank, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    rank, code = failed[0]
                    print(
                        f"mxnb.launch: worker {rank} exited with code {code}; stopping the others",
                        file=sys.stderr,
                    )
                    break
                if all(c == 0 for c in codes):
                    break
                time.sleep(0.2)
        finally:
            workers.stop()
    finally:
        ray.shutdown()
    return code if code > 0 else (1 if code else 0)


def _exit_without_ray_hooks(code: int) -> None:
    """Leave with ``code`` once :func:`main` has stopped every process of the job.

    Ray's exit hooks talk to the processes ``main`` has just killed (its GCS,
    its raylet): after a Ctrl-C while the servers started, the interpreter's
    clean-up crashed in them (exit -11, not 130), and one CI run saw the
    launcher still alive 60 s after a Ctrl-C while Ray started.  Nothing is
    left to clean up, so the launcher flushes its output and leaves without them.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _become_subreaper()
    _exit_without_ray_hooks(main())
