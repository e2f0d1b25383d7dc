"""tcfuzz worker zygote: imports torch once and forks one child per job. The entry point, run as
`python -u zygote.py --device D`; the job code it forks into lives in child.py (with lift.py and
allowlist.py), imported here before any fork so that every child inherits it.

Runs inside the worker sandbox (see fuzzer/worker/Sandbox.cpp). Talks JSON lines:
  stdin  <- {"type": "job", ...}            one job per line (see fuzzer/worker/Protocol.h)
  stdout -> {"type": "hello", ...}          once, after torch is imported
  stdout -> {"type": "result", ...}         one per job, in order
The zygote runs no torch op before forking (libgomp's thread pool and CUDA do not survive a fork).
Each child gets its own session (process group), an address-space limit, and a deadline; when it
dies, the zygote turns the death into a result. A child never writes to the protocol pipe.
"""

import json
import os
import resource
import select
import signal
import sys
import time

# The protocol channel is a private dup of the original stdout: a stray print() in the zygote
# (or in a torch import side effect) goes to stderr instead of corrupting the protocol.
_PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

# One compile thread per worker: no Inductor compile pool is ever started, here or in a child.
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
_t_import = time.monotonic()
import torch  # noqa: E402  (imported once here, inherited by every child)
import torch._dynamo  # noqa: E402,F401
import torch._inductor.config  # noqa: E402,F401

torch._inductor.config.compile_threads = 1
# The modules torch.compile imports lazily on first use: imported here, they cost nothing per job.
# These are module imports only; no torch op runs before the fork.
import torch._inductor.compile_fx  # noqa: E402,F401
import torch._functorch.aot_autograd  # noqa: E402,F401
import torch._dynamo.backends.common  # noqa: E402,F401
import torch.utils._pytree as pytree  # noqa: E402,F401  (used by the children)
from torch.overrides import TorchFunctionMode  # noqa: E402,F401  (used by the children)

IMPORT_SECONDS = time.monotonic() - _t_import

# The job code (child.py, lift.py, allowlist.py) sits beside this file. Python puts a script's folder
# first on sys.path; this keeps the sibling imports working under -P or PYTHONSAFEPATH too.
_WORKER_DIR = os.path.dirname(os.path.abspath(__file__))
if _WORKER_DIR not in sys.path:
    sys.path.insert(0, _WORKER_DIR)
from child import (  # noqa: E402  (imported once here, module code only, inherited by every child)
    PHASE_FILE, RESULT_FILE, STDERR_FILE, child_main, exception_record, tail,
)


def send(msg):
    """Writes one protocol message (a JSON line) to tcfuzz; only the zygote speaks the protocol."""
    _PROTOCOL_OUT.write(json.dumps(msg, default=str) + "\n")
    _PROTOCOL_OUT.flush()


def rss_bytes(pid):
    """The resident set size of process `pid` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def read_phase(job_dir):
    """The phase the job's child last recorded (ChildRun.mark), "start" when it recorded none."""
    try:
        with open(os.path.join(job_dir, PHASE_FILE)) as f:
            return f.read().strip() or "start"
    except OSError:
        return "start"


def set_parent_death_signal():
    """Dies with SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class SpareChild:
    """A child forked ahead of time that blocks until it is handed a job: the fork is off the hot path."""

    def __init__(self):
        job_r, job_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                set_parent_death_signal()
                os.close(job_w)
                os.close(done_r)
                _PROTOCOL_OUT.close()  # only the zygote speaks the protocol
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                data = b""
                while chunk := os.read(job_r, 1 << 16):
                    data += chunk
                if not data:
                    os._exit(0)  # the zygote is shutting down
                child_main(json.loads(data), done_w)
            finally:
                os._exit(4)
        os.close(job_r)
        os.close(done_w)
        self.pid, self.job_w, self.done_r = pid, job_w, done_r

    def dispatch(self, job):
        os.write(self.job_w, json.dumps(job).encode())
        os.close(self.job_w)

    def discard(self):
        os.close(self.job_w)  # EOF: the spare exits
        os.close(self.done_r)
        os.waitpid(self.pid, 0)


class Zygote:
    """Runs jobs one at a time in forked children, keeping one spare child forked in advance."""

    def __init__(self):
        self.spare = None
        self.finished = []  # children that reported their result and may still be exiting

    def take_spare(self):
        spare, self.spare = self.spare, None
        return spare or SpareChild()

    def refill(self):
        if self.spare is None:
            self.spare = SpareChild()

    def reap_finished(self, block=False):
        still = []
        for pid in self.finished:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if done == 0:
                still.append(pid)
                continue
            try:
                os.killpg(pid, signal.SIGKILL)  # stragglers left in its process group
            except (ProcessLookupError, PermissionError):
                pass
        self.finished = still

    def shutdown(self):
        if self.spare:
            self.spare.discard()
            self.spare = None
        self.reap_finished(block=True)

    def run_job(self, job):
        """Hands the job to a child, enforces its limits, and returns the result message."""
        job_dir = job["job_dir"]
        os.makedirs(job_dir, exist_ok=True)
        for stale in (RESULT_FILE, PHASE_FILE):
            try:
                os.unlink(os.path.join(job_dir, stale))
            except FileNotFoundError:
                pass
        limits = job.get("limits") or {}
        timeout_s = float(limits.get("timeout_s", 60))
        memory_mb = int(limits.get("memory_mb", 0))
        rss_limit = memory_mb * 2 ** 20 if memory_mb else 0

        t_start = time.monotonic()
        child = self.take_spare()
        fork_s = time.monotonic() - t_start  # zero when the spare was ready
        pid = child.pid
        child.dispatch(job)
        self.refill()  # fork the next spare while this job runs

        deadline = t_start + timeout_s
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(child.done_r, select.POLLIN)
        killed_for = None
        reported = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed_for = "timeout"
                break
            events = dict(poller.poll(min(remaining, 0.05) * 1000))
            if child.done_r in events:
                reported = os.read(child.done_r, 1) == b"1"
                break
            if pidfd in events:
                break
            if rss_limit and rss_bytes(pid) > rss_limit:
                killed_for = "oom"
                break
        os.close(pidfd)
        os.close(child.done_r)
        wall_s = time.monotonic() - t_start

        result = None
        if reported:
            self.finished.append(pid)  # reaped later: its exit is off the hot path
            try:
                with open(os.path.join(job_dir, RESULT_FILE)) as f:
                    result = json.load(f)
            except (OSError, ValueError) as exc:
                result = {"status": "exception", "phase": read_phase(job_dir),
                          "exception": {"type": "HarnessError", "qualified_type": "tcfuzz.HarnessError",
                                        "message": f"child left no readable result: {exc}", "traceback": ""}}
        else:
            if killed_for:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, wait_status = os.waitpid(pid, 0)
            try:
                os.killpg(pid, signal.SIGKILL)  # stragglers in the group (compile workers)
            except (ProcessLookupError, PermissionError):
                pass
            phase = read_phase(job_dir)
            if killed_for == "timeout":
                result = {"status": "timeout", "phase": phase}
            elif killed_for == "oom":
                result = {"status": "oom", "phase": phase}
            elif os.WIFSIGNALED(wait_status):
                sig = os.WTERMSIG(wait_status)
                result = {"status": "signal", "phase": phase, "signal": sig, "signal_name": signal.Signals(sig).name}
            else:
                result = {"status": "signal", "phase": phase, "exit_code": os.WEXITSTATUS(wait_status),
                          "signal": 0, "signal_name": "EXIT"}
            result["stderr_tail"] = tail(os.path.join(job_dir, STDERR_FILE))
        self.reap_finished()
        result.setdefault("times", {})
        result["times"]["fork_s"] = fork_s
        result["times"]["child_wall_s"] = wall_s
        result["type"] = "result"
        result["id"] = job["id"]
        return result


def probe_cuda():
    """Asks a throwaway child whether CUDA works, so the zygote itself never initializes it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ok = torch.cuda.is_available()
            n = torch.cuda.device_count() if ok else 0
        except Exception:  # noqa: BLE001
            ok, n = False, 0
        os.write(w, json.dumps({"available": ok, "count": n}).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"available": False, "count": 0}


def main():
    set_parent_death_signal()  # without the sandbox's --die-with-parent, still die with tcfuzz
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    hello = {
        "type": "hello",
        "torch": torch.__version__,
        "torch_git": torch.version.git_version,
        "torch_dir": os.path.dirname(torch.__file__),
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "device": device,
        "import_s": IMPORT_SECONDS,
    }
    if device.startswith("cuda"):
        hello["cuda"] = probe_cuda()
    # Move every object the imports made out of the collector's reach: a child's GC pass would
    # otherwise touch (and copy-on-write) the pages of all of them.
    import gc
    gc.collect()
    gc.freeze()
    zygote = Zygote()
    zygote.refill()
    send(hello)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            job = json.loads(line)
        except ValueError as exc:
            send({"type": "error", "message": f"malformed job line: {exc}"})
            continue
        if job.get("type") == "quit":
            break
        try:
            send(zygote.run_job(job))
        except Exception as exc:  # noqa: BLE001  (a harness bug is reported, the zygote lives on)
            send({"type": "result", "id": job.get("id"), "status": "exception", "phase": "harness",
                  "exception": exception_record(exc)})
    zygote.shutdown()


if __name__ == "__main__":
    main()
