"""tcfuzz worker zygote: imports torch once and forks one child per job. The entry point, run as
`python -u zygote.py --device D`; the job code it forks into lives in child.py (with lift/ and
its allowlist), imported here before any fork so that every child inherits it.

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
import threading
import time

# The protocol channel is a private dup of the original stdout: a stray print() in the zygote
# (or in a torch import side effect) goes to stderr instead of corrupting the protocol.
_PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

# One compile thread per worker: no Inductor compile pool is ever started, here or in a child.
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
# torch.cuda.is_available() asks NVML instead of the CUDA runtime. Imports call it (torch 2.11's
# torch._inductor.runtime.benchmarking, cpp_extension's CUDA_HOME lookup), and a runtime query marks the
# process as having initialized CUDA: every child forked after it then fails with "Cannot re-initialize
# CUDA in forked subprocess" (seen on an H100). With NVML nothing touches CUDA before the fork.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


def tcfuzz_gone(timeout_ms=0):
    """Whether tcfuzz's end of our stdin pipe is closed, waiting up to `timeout_ms` for it. No event is asked
    for: poll reports a hang-up (and an error) regardless, and a job already written is no wake-up. A stdin that
    is no open file (POLLNVAL, at once) is gone too: no job can come, and the watch must not spin on it."""
    poller = select.poll()
    poller.register(0, 0)
    return any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, event in poller.poll(timeout_ms))


def exit_if_orphaned():
    """Exits at once when tcfuzz is gone. bubblewrap keeps no parent-death signal for its first ~100 ms (a
    kill -9 of tcfuzz then leaves the sandbox running), so the zygote checks before and after the long torch
    import (and OrphanWatch during it) instead of only at its first read."""
    if tcfuzz_gone():
        os._exit(0)


class OrphanWatch:
    """While the zygote imports torch (seconds, many under load), a thread exits the process as soon as tcfuzz
    is gone, rather than at the check after the import. Stopped (joined) before anything forks: a fork takes
    no thread along, and a child must not inherit one mid-poll."""

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="orphan-watch", daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.is_set():
            if tcfuzz_gone(50):
                os._exit(0)

    def stop(self):
        self._stop.set()
        self._thread.join()


exit_if_orphaned()
_orphan_watch = OrphanWatch()
_t_import = time.monotonic()


def refuse(message):
    """Tells tcfuzz this interpreter cannot serve (no torch, or one the harness cannot import), then exits."""
    _PROTOCOL_OUT.write(json.dumps({"type": "refuse", "message": message}) + "\n")
    _PROTOCOL_OUT.flush()
    sys.exit(3)


try:
    import torch  # noqa: E402  (imported once here, inherited by every child)
except ImportError as exc:
    refuse(f"{sys.executable} (Python {sys.version.split()[0]}) cannot import torch: {exc}")
try:
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
    _orphan_watch.stop()
    exit_if_orphaned()

    # The job code (child.py, lift/) sits beside this file. Python puts a script's
    # folder first on sys.path; this keeps the sibling imports working under -P or PYTHONSAFEPATH too.
    _WORKER_DIR = os.path.dirname(os.path.abspath(__file__))
    if _WORKER_DIR not in sys.path:
        sys.path.insert(0, _WORKER_DIR)
    from child import (  # noqa: E402  (imported once here, module code only, inherited by every child)
        PHASE_FILE, RESULT_FILE, STDERR_FILE, child_main, exception_record, tail,
    )
    from persistent import (  # noqa: E402
        DONE_KEEP, DONE_NO_RESULT, DONE_RETIRE, DONE_WARM, LEAK_FILE, STICKY_FILE, LinkerUnavailable,
        choose_kernel_linker, serve_jobs, share_precompiled_headers, warm_zygote, write_job,
    )
    from torch_facts import torch_facts  # noqa: E402
    from program_guard import GUARD, REFUSAL_FILE, read_refusals  # noqa: E402
except Exception as exc:  # noqa: BLE001  (an old or broken torch: said once, clearly)
    refuse(f"torch {getattr(torch, '__version__', '?')} from {os.path.dirname(torch.__file__)} cannot run the "
           f"worker harness: {type(exc).__name__}: {exc}")

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


def group_size(pgid):
    """How many processes are in process group `pgid` (a child's session: it, its compiler and anything it forked)."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            count += 1
    return count


def apply_resource_limits(max_file_mb, max_open_files, max_processes):
    """Caps, for the zygote and every child it forks (hard limits: a program cannot raise them again), the
    size of any file written, the open descriptors, and (for a user other than root, whom the kernel
    exempts) the processes. A child whose process group outgrows max_processes is also killed by the
    zygote (Zygote.run_job), which holds for root too."""
    def lower(which, limit):
        """Sets soft and hard to `limit`, or keeps a lower limit tcfuzz was started under (never raises one)."""
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        try:
            resource.setrlimit(which, (limit, limit))
        except (ValueError, OSError) as exc:  # a limit it cannot set is logged, never fatal
            print(f"zygote: cannot set resource limit {which} to {limit}: {exc}", file=sys.stderr)

    if max_file_mb > 0:
        lower(resource.RLIMIT_FSIZE, max_file_mb * 2 ** 20)  # Python ignores SIGXFSZ: writes fail with EFBIG
    if max_open_files > 0:
        lower(resource.RLIMIT_NOFILE, max_open_files)
    if max_processes > 0 and os.geteuid() != 0:
        # RLIMIT_NPROC counts every task of the user, threads included: leave room for what already runs.
        def owned(name):
            try:
                return os.stat(f"/proc/{name}").st_uid == os.getuid()
            except OSError:
                return False
        processes = sum(1 for name in os.listdir("/proc") if name.isdigit() and owned(name))
        lower(resource.RLIMIT_NPROC, (processes + max_processes) * 64)  # up to 64 threads each


def set_parent_death_signal():
    """Dies with SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def close_inherited_fds(keep):
    """In a freshly forked child: closes every descriptor but 0, 1, 2 and `keep` (other children's pipe
    ends the zygote held at the fork), so that closing a pipe in the zygote is seen as EOF."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def enter_child(job_r, done_w):
    """The first steps of every forked child: die with the zygote, hold only its own pipe ends, never
    touch the protocol pipe, read nothing from the zygote's stdin."""
    set_parent_death_signal()
    close_inherited_fds({job_r, done_w})  # the protocol pipe's descriptor included: only the zygote speaks it
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def fork_child(body):
    """Forks a child with a job pipe and a done pipe; the child runs body(job_r, done_w) and never returns.
    Returns (pid, job_w, done_r), the zygote's ends."""
    job_r, job_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            enter_child(job_r, done_w)
            body(job_r, done_w)
        finally:
            os._exit(4)
    os.close(job_r)
    os.close(done_w)
    return pid, job_w, done_r


class SpareChild:
    """A fresh child forked ahead of time that blocks until it is handed one job: the fork is off the hot path."""

    persistent = False
    jobs = 0  # it serves one job; always cold

    def __init__(self):
        self.pid, self.job_w, self.done_r = fork_child(self.serve_one)

    @staticmethod
    def serve_one(job_r, done_w):
        data = b""
        while chunk := os.read(job_r, 1 << 16):
            data += chunk
        if not data:
            os._exit(0)  # the zygote is shutting down
        child_main(json.loads(data), done_w)

    def dispatch(self, job):
        os.write(self.job_w, json.dumps(job).encode())
        os.close(self.job_w)

    def discard(self):
        os.close(self.job_w)  # EOF: the spare exits
        os.close(self.done_r)
        os.waitpid(self.pid, 0)


class PersistentChild:
    """A child that warms up once and then serves many program jobs (persistent.serve_jobs)."""

    persistent = True

    def __init__(self, device):
        self.pid, self.job_w, self.done_r = fork_child(lambda job_r, done_w: serve_jobs(job_r, done_w, device))
        self.jobs = 0  # jobs dispatched so far
        self.warm = False  # it sent DONE_WARM: its warm-up compile is over

    def check_warm(self):
        """Whether its warm-up compile is over (reads, without blocking, the DONE_WARM byte it sends then)."""
        if not self.warm and select.select([self.done_r], [], [], 0)[0]:
            self.warm = os.read(self.done_r, 1) == DONE_WARM  # b"": it died; a job dispatched to it reports that
        return self.warm

    def dispatch(self, job):
        write_job(self.job_w, job)
        self.jobs += 1

    def retire(self):
        """Closes its job pipe: it exits at EOF once its current job is done. The caller reaps it."""
        os.close(self.job_w)
        os.close(self.done_r)


class Zygote:
    """Runs jobs one at a time in forked children: program jobs in a persistent child that serves up to
    `child_jobs` of them (when child_jobs > 1 and the job asks for one), everything
    else in a fresh child; one fresh spare is kept forked in advance, and a persistent standby is forked
    at start and a few jobs before the serving child retires (or at once when it dies), so that its
    warm-up is off the hot path. A persistent child is retired after child_jobs jobs,
    when its RSS exceeds child_rss_mb (0: no bound), when it reports a state leak, and replaced when it
    dies or overruns a job."""

    STANDBY_LEAD_JOBS = 3  # fork the next persistent child this many jobs before the current one retires

    PROCESS_CHECK_S = 0.25  # how often a running child's process group is counted

    def __init__(self, device="cpu", child_jobs=1, child_rss_mb=0, warm=False, max_processes=0,
                 fresh_until_warm=False):
        self.device = device
        # A job that compiles nothing (eager, fp64) does not wait for a persistent child still in its warm-up
        # compile: it runs in the fresh spare (a campaign's first programs; --fresh-until-warm). Compiled jobs
        # still wait: a cold compile in a fresh child beside the warm-up was slower on 2 cores (measured).
        self.fresh_until_warm = fresh_until_warm
        self.max_processes = max_processes  # a child whose process group grows past this is killed (0: no bound)
        self.warm = warm      # warm_zygote() has run (children forked since inherit it)
        self.child_jobs = child_jobs
        self.child_rss = child_rss_mb * 2 ** 20
        self.spare = None
        self.server = None    # the persistent child serving program jobs
        self.standby = None   # its successor, warming up
        self.finished = []  # children that reported their result and may still be exiting

    def wants_persistent(self, job):
        """Whether `job` goes to the persistent child: a program job that asks for it (job["persistent"]),
        with no private cache and no plugin, in a zygote that keeps one."""
        return (self.child_jobs > 1 and job.get("kind", "program") == "program" and bool(job.get("persistent"))
                and not job.get("cache_dir") and not job.get("plugins"))

    def take_child(self, job):
        if self.wants_persistent(job):
            if self.server is None:
                candidate = self.standby or PersistentChild(self.device)
                if self.fresh_until_warm and job.get("mode") != "compiled" and not candidate.check_warm():
                    self.standby = candidate  # it keeps warming; this job needs no compiler
                    return self.take_spare()
                self.server, self.standby = candidate, None
            return self.server
        return self.take_spare()

    def take_spare(self):
        spare, self.spare = self.spare, None
        return spare or SpareChild()

    def refill(self):
        if self.spare is None:
            self.spare = SpareChild()
        if self.child_jobs > 1 and self.standby is None and (
                self.server is None or self.server.jobs >= self.child_jobs - self.STANDBY_LEAD_JOBS):
            self.standby = PersistentChild(self.device)  # warms up now, before it is needed

    def warm_before(self, job):
        """Warms the zygote before the first job that compiles, and re-forks the spare so that it inherits
        the warm state; returns the seconds it took (None when nothing was warmed)."""
        if self.warm or not (job.get("mode") == "compiled" or job.get("kind") == "bisect"):
            return None
        t0 = time.monotonic()
        warm_zygote()
        self.warm = True
        if self.spare is not None:
            self.spare.discard()
            self.spare = None
        return time.monotonic() - t0

    def retire_server(self):
        self.server.retire()
        self.finished.append(self.server.pid)
        self.server = None

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
        for child in (self.server, self.standby):
            if child is not None:
                child.retire()
                self.finished.append(child.pid)
        self.server = self.standby = None
        self.reap_finished(block=True)

    def run_job(self, job):
        """Hands the job to a child, enforces its limits, and returns the result message."""
        job_dir = job["job_dir"]
        os.makedirs(job_dir, exist_ok=True)
        for stale in (RESULT_FILE, PHASE_FILE, REFUSAL_FILE):
            try:
                os.unlink(os.path.join(job_dir, stale))
            except FileNotFoundError:
                pass
        limits = job.get("limits") or {}
        timeout_s = float(limits.get("timeout_s", 60))
        memory_mb = int(limits.get("memory_mb", 0))
        rss_limit = memory_mb * 2 ** 20 if memory_mb else 0

        warm_s = self.warm_before(job)
        t_start = time.monotonic()
        child = self.take_child(job)
        fork_s = time.monotonic() - t_start  # zero when the spare was ready
        pid = child.pid
        jobs_before = child.jobs  # jobs this process ran before this one (dispatch counts them)
        rss_base = rss_bytes(pid) if child.persistent else 0  # a warm child's own size is not the job's
        child.dispatch(job)
        self.refill()  # fork the next spare (and, near retirement, the next persistent child) meanwhile

        deadline = t_start + timeout_s
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(child.done_r, select.POLLIN)
        killed_for = None
        done = b""
        next_process_check = time.monotonic() + self.PROCESS_CHECK_S
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed_for = "timeout"
                break
            events = dict(poller.poll(min(remaining, 0.05) * 1000))
            if child.done_r in events:
                done = os.read(child.done_r, 1)
                if done == DONE_WARM:  # its warm-up ended while this job waited for it
                    child.warm = True
                    continue
                break
            if pidfd in events:
                break
            if rss_limit and rss_bytes(pid) - rss_base > rss_limit:
                killed_for = "oom"
                break
            if self.max_processes and time.monotonic() >= next_process_check:
                next_process_check = time.monotonic() + self.PROCESS_CHECK_S
                processes = group_size(pid)
                if processes > self.max_processes:
                    killed_for = "processes"
                    refuse_for_job(job_dir, f"process limit: {processes} processes in the job "
                                            f"(at most {self.max_processes}; a fork bomb?)")
                    break
        os.close(pidfd)
        wall_s = time.monotonic() - t_start
        reported = done in (DONE_KEEP, DONE_RETIRE)
        if not child.persistent:
            os.close(child.done_r)

        result = None
        if reported:
            if not child.persistent:
                self.finished.append(pid)  # reaped later: its exit is off the hot path
            try:
                with open(os.path.join(job_dir, RESULT_FILE)) as f:
                    result = json.load(f)
            except (OSError, ValueError) as exc:
                result = {"status": "exception", "phase": read_phase(job_dir),
                          "exception": {"type": "HarnessError", "qualified_type": "tcfuzz.HarnessError",
                                        "message": f"child left no readable result: {exc}", "traceback": ""}}
        else:
            if child.persistent:
                os.close(child.job_w)
                os.close(child.done_r)
                self.server = None
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
            elif killed_for == "processes":
                result = {"status": "signal", "phase": phase, "signal": signal.SIGKILL, "signal_name": "SIGKILL"}
            elif killed_for == "oom":
                result = {"status": "oom", "phase": phase}
            elif os.WIFSIGNALED(wait_status):
                sig = os.WTERMSIG(wait_status)
                result = {"status": "signal", "phase": phase, "signal": sig, "signal_name": signal.Signals(sig).name}
            else:
                result = {"status": "signal", "phase": phase, "exit_code": os.WEXITSTATUS(wait_status),
                          "signal": 0, "signal_name": "EXIT"}
            result["stderr_tail"] = tail(os.path.join(job_dir, STDERR_FILE))
        refusals = read_refusals(job_dir)
        if refusals:  # the program tried to reach past its job: that, not how the child ended, is the result
            result = {"status": "refused", "phase": result.get("phase", read_phase(job_dir)), "refusals": refusals,
                      "ended_as": result.get("status"), "times": result.get("times") or {},
                      "exception": {"type": "SandboxRefusal", "qualified_type": "tcfuzz.SandboxRefusal",
                                    "message": f"refused by the tcfuzz sandbox: {refusals[0]}", "traceback": ""}}
        child_info = {"persistent": child.persistent, "jobs_before": jobs_before}
        if child.persistent and reported:
            if done == DONE_RETIRE and os.path.exists(os.path.join(job_dir, STICKY_FILE)):
                child_info["retired"] = "sticky CUDA error"
            elif done == DONE_RETIRE:
                child_info["state_leak"] = tail(os.path.join(job_dir, LEAK_FILE), 400) or "unnamed"
                child_info["retired"] = "state leak"
            elif child.jobs >= self.child_jobs:
                child_info["retired"] = "job count"
            elif self.child_rss and rss_bytes(pid) > self.child_rss:
                child_info["retired"] = "memory"
            if "retired" in child_info:
                self.retire_server()
        self.refill()  # a persistent child that died or retired: its successor starts warming now
        self.reap_finished()
        result.setdefault("times", {})
        result["times"]["fork_s"] = fork_s
        if warm_s is not None:
            result["times"]["zygote_warm_s"] = warm_s
        result["times"]["child_wall_s"] = wall_s
        result["child"] = child_info
        result["type"] = "result"
        result["id"] = job["id"]
        return result


def probe_cuda():
    """Asks a throwaway child whether CUDA works, so the zygote itself never initializes it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        error = ""
        try:
            # Initializes CUDA here (not is_available(), which hides why): the error says what is wrong.
            n = torch.cuda.device_count()
            if n:
                torch.cuda.init()
            ok = n > 0
            names = [torch.cuda.get_device_name(i) for i in range(n)]
            capability = list(torch.cuda.get_device_capability(0)) if n else []
            if not ok:
                error = (f"torch.cuda.device_count() is 0 (torch {torch.__version__}, CUDA {torch.version.cuda}, "
                         f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
        except Exception as exc:  # noqa: BLE001
            ok, n, names, capability = False, 0, [], []
            error = f"{type(exc).__name__}: {exc}"[:600]
        if error:
            print(f"zygote: CUDA is not usable: {error}", file=sys.stderr)
        os.write(w, json.dumps({"available": ok, "count": n, "names": names, "capability": capability,
                                "error": error}).encode())
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


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (the machine, for reports); "cpu" if it is not there."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def option(name, default):
    """The value after `name` on the command line, or `default`."""
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def refuse_for_job(job_dir, what):
    """Records a refusal the zygote itself made for the job (read back as the job's status "refused")."""
    refusals = read_refusals(job_dir) + [what]
    with open(os.path.join(job_dir, REFUSAL_FILE), "w") as f:
        json.dump({"refusals": refusals}, f)


def die_with_tcfuzz():
    """Without the sandbox's PID namespace (--sandbox none), the children's own subprocesses (the C++
    compiler) have no parent-death signal: when tcfuzz dies, the zygote gets SIGTERM instead of SIGKILL
    and kills every child's process group (each child leads one), then its own group, itself included."""
    def on_parent_death(signum, frame):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid():
                    os.killpg(int(name), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
        # Then the zygote's own group, itself included: subprocesses it started in it (the warm-up's ISA probe).
        try:
            os.killpg(0, signal.SIGKILL)
        finally:
            os._exit(1)
    signal.signal(signal.SIGTERM, on_parent_death)
    # A launcher's blocked SIGTERM survives exec; blocked, this handler would never run.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    import ctypes
    # Until here the SIGKILL tcfuzz set before exec stood guard (WorkerPool's dieWithParent).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def main():
    die_with_tcfuzz()
    max_processes = int(option("--max-processes", "0"))
    apply_resource_limits(int(option("--max-file-mb", "0")), int(option("--max-open-files", "0")), max_processes)
    GUARD.install(option("--credential-marks", "").split(","))  # before any fork: every child inherits it
    device = option("--device", "cpu")
    header_cache = share_precompiled_headers(os.environ.get("TCFUZZ_HEADER_CACHE_DIR"))
    child_jobs = int(option("--child-jobs", "1"))
    try:  # before the warm-up's compiler lookup, which torch caches for the process
        kernel_linker = choose_kernel_linker(option("--kernel-linker", "default"))
    except LinkerUnavailable as exc:
        refuse(str(exc))
    # No thread, no torch op: forking stays safe. A zygote with persistent children warms at once (it will
    # compile); one that forks a fresh child per job warms before its first compiled job, if any comes.
    warmed = warm_zygote() if child_jobs > 1 else {}
    hello = {
        "type": "hello",
        **torch_facts(),
        "pid": os.getpid(),
        "device": device,
        "import_s": IMPORT_SECONDS,
        "warm_s": {step: round(seconds, 3) for step, seconds in warmed.items()},
        "warm": bool(warmed),
        "child_jobs": child_jobs,
        "header_cache": header_cache,
        "kernel_linker": kernel_linker,
    }
    if device.startswith("cuda"):
        hello["cuda"] = probe_cuda()
    hello["devices"] = [cpu_model()] + hello.get("cuda", {}).get("names", [])
    # Move every object the imports made out of the collector's reach: a child's GC pass would
    # otherwise touch (and copy-on-write) the pages of all of them.
    import gc
    gc.collect()
    gc.freeze()
    zygote = Zygote(device, child_jobs, int(option("--child-rss-mb", "0")), warm=bool(warmed),
                    max_processes=max_processes, fresh_until_warm="--fresh-until-warm" in sys.argv)
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
    gc.unfreeze()  # nanobind (Triton 3.9) reports frozen objects as leaks at exit


if __name__ == "__main__":
    main()
