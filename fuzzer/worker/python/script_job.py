"""The worker child's "script" jobs: a plain Python script (a repro.py) run in a fresh interpreter, with the tails
of what it printed as the result."""

import os
import signal
import subprocess
import sys
import time

SCRIPT_STDOUT_FILE = "script_stdout.txt"
SCRIPT_STDERR_FILE = "script_stderr.txt"
SCRIPT_TAIL_CHARS = 8000
TRACE_DIR = "torch_trace"  # a traced script job's TORCH_TRACE folder, inside its job directory


def run_script_job(run):
    """Runs run.job["program"] with this Python in the job directory, inside this child's process group and under
    its address-space limit (inherited): the zygote's timeout kills it with the group. With job["trace"], torch's
    structured trace log (TORCH_TRACE) goes to <job dir>/torch_trace."""
    run.mark("run")
    t0 = time.monotonic()
    out_path = os.path.join(run.dir, SCRIPT_STDOUT_FILE)
    err_path = os.path.join(run.dir, SCRIPT_STDERR_FILE)
    env = dict(os.environ)
    if run.job.get("trace"):
        env["TORCH_TRACE"] = os.path.join(run.dir, TRACE_DIR)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.run([sys.executable, run.job["program"]], cwd=run.dir, stdin=subprocess.DEVNULL,
                              stdout=out, stderr=err, env=env)
    run.times["run_s"] = time.monotonic() - t0
    tails = {"stdout_tail": tail(out_path, SCRIPT_TAIL_CHARS), "stderr_tail": tail(err_path, SCRIPT_TAIL_CHARS),
             "times": run.times}
    if proc.returncode < 0:
        sig = -proc.returncode
        name = signal.Signals(sig).name if sig in signal.valid_signals() else f"SIG{sig}"
        return {"status": "signal", "phase": "run", "signal": sig, "signal_name": name, **tails}
    return {"status": "ok", "phase": "done", "exit_code": proc.returncode, **tails}


def tail(path, limit=4000):
    """The last `limit` bytes of the file at `path` as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
