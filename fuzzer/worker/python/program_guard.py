"""The program guard: the Python layer of the worker sandbox, which names what a program tried to reach.

The OS sandbox (bubblewrap; fuzzer/worker/Sandbox.cpp) is the boundary: a worker sees no secret, no home
directory and no network, and writes only under its work directory. Inside it, this guard turns a
program's attempt to reach past its job (read the environment, open a file outside Python's own trees,
write a file, start a process, open a socket, load native code) into a *refusal*: the attempt raises
SandboxRefusal, and the job's status becomes "refused" whatever the program did with that exception. So a
hostile or careless program is reported as a sandbox refusal, never as a torch bug.

An attempt is the program's when the innermost frame outside Python's standard library runs the
program file. torch's own files, processes and environment reads (Inductor's compiler subprocesses and
cache files) are therefore never refused. The guard is no boundary by itself (a program can disguise its
frames, or read posix.environ); the OS sandbox is, and it leaves such a program nothing to find.

Audit hooks are per process and permanent, so there is one guard per process (GUARD), installed by the
zygote before it forks; a child points it at its job's program (watch) and lets go after the job (release).
"""

import json
import os
import site
import sys
import sysconfig

REFUSAL_FILE = "refusal.json"
MAX_REFUSALS = 50  # a program that keeps trying after this many refusals (a fork-bomb loop) is ended

# Audit events (https://docs.python.org/3/library/audit_events.html) by what they reach.
_PROCESS_EVENTS = frozenset({
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen",
    "pty.spawn", "os.startfile",
})
_NETWORK_EVENTS = frozenset({
    "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "urllib.Request", "http.client.connect", "ftplib.connect",
    "smtplib.connect", "poplib.connect", "imaplib.open", "nntplib.connect", "telnetlib.Telnet.open",
})
_FS_CHANGE_EVENTS = frozenset({
    "os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown", "os.symlink", "os.link",
    "os.truncate", "os.utime", "os.chdir", "os.chflags", "os.setxattr", "os.removexattr", "shutil.rmtree",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.move", "shutil.chown",
})
_FS_READ_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob", "os.listxattr", "os.getxattr"})
_NATIVE_EVENTS = frozenset({"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function"})
_WATCHED = _PROCESS_EVENTS | _NETWORK_EVENTS | _FS_CHANGE_EVENTS | _FS_READ_EVENTS | _NATIVE_EVENTS

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Device files any numeric program may read.
_READABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


class SandboxRefusal(PermissionError):
    """Raised into a program that tried to reach past its job; the job is reported as refused."""


def _standard_library_dirs():
    """Python's standard library folders, less its site-packages (where torch may be installed)."""
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)}))


def _package_dirs():
    dirs = set(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    dirs.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(sorted(os.path.realpath(d) + os.sep for d in dirs))


class ProgramGuard:
    """The audit hook that refuses a watched program's attempts to reach past its job (module docstring)."""

    def __init__(self):
        self.program = None   # realpath of the watched program file; None: nothing is watched
        self.job_dir = None
        self.refusals = []    # what the watched program tried, in order (the first MAX_REFUSALS)
        self._installed = False
        self._busy = False    # re-entrancy: what the hook itself does raises audit events too
        self._stdlib = _standard_library_dirs()
        self._packages = _package_dirs()
        self._readable = ()
        self._realpaths = {}  # co_filename -> realpath, for the frame test
        self._credential_marks = ()

    def install(self, credential_marks=()):
        """Adds the audit hook and guards os.environ (once per process; the zygote calls it before forking).
        `credential_marks`: name fragments of credential variables (tcfuzz's looksLikeCredential list)."""
        if self._installed:
            return
        self._installed = True
        self._credential_marks = tuple(m.upper() for m in credential_marks if m)
        sys.addaudithook(self._audit)
        self._guard_environ()

    def watch(self, program_path, job_dir):
        """From now on, attempts made by frames of `program_path` are refused; `job_dir` is readable to it."""
        self.program = os.path.realpath(program_path)
        self.job_dir = os.path.realpath(job_dir)
        self.refusals = []
        roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, self.job_dir)}
        roots.update(os.path.realpath(p) for p in sys.path if p and os.path.isdir(p))
        self._readable = tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots))

    def release(self):
        """Stops watching (a persistent child's next job watches its own program)."""
        self.program = None
        self.job_dir = None

    # -- whose attempt is it --------------------------------------------------------------------
    def _is_stdlib(self, filename):
        if filename.startswith("<frozen "):
            return True
        return filename.startswith(self._stdlib) and not filename.startswith(self._packages)

    def _program_frame(self, frame):
        """The innermost frame outside the standard library runs the watched program."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not self._is_stdlib(filename) and filename != __file__:
                real = self._realpaths.get(filename)
                if real is None:
                    real = self._realpaths[filename] = os.path.realpath(filename)
                return real == self.program
            frame = frame.f_back
        return False

    # -- the rules ----------------------------------------------------------------------------------
    def _readable_path(self, path):
        real = os.path.realpath(path)
        return real in _READABLE_DEVICES or (real + os.sep).startswith(self._readable)

    def _refusal(self, event, args):
        """What the attempt reaches ("what: detail"), or None when a program may do it."""
        if event in _PROCESS_EVENTS:
            return f"process: {event} {_shown(args)}"
        if event in _NETWORK_EVENTS:
            return f"network: {event} {_shown(args)}"
        if event in _NATIVE_EVENTS:
            return f"native code: {event}"
        if event in _FS_CHANGE_EVENTS:
            return f"filesystem write: {event} {_shown(args)}"
        path = args[0] if args else None
        if isinstance(path, int) or path is None:
            return None  # an already open descriptor, or the current directory's listing
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        path = os.fspath(path)
        if event == "open":
            mode, flags = (args[1] if len(args) > 1 else "r") or "r", (args[2] if len(args) > 2 else 0) or 0
            if any(c in str(mode) for c in "wax+") or flags & _WRITE_FLAGS:
                return f"filesystem write: open {path!r} mode {mode!r}"
        if not self._readable_path(path):
            return f"filesystem read outside the job: {event} {path!r}"
        return None

    def _audit(self, event, args):
        if self.program is None or event not in _WATCHED or self._busy:
            return
        self._busy = True
        try:
            if not self._program_frame(sys._getframe(1)):
                return
            what = self._refusal(event, args)
        finally:
            self._busy = False
        if what is not None:
            self.refuse(what)

    def refuse(self, what):
        """Records the refusal (in memory and in the job's refusal.json, which outlives a killed child)
        and raises it into the program; ends the process after MAX_REFUSALS."""
        self._busy = True
        try:
            if len(self.refusals) < MAX_REFUSALS:
                self.refusals.append(what)
                try:
                    with open(os.path.join(self.job_dir, REFUSAL_FILE), "w") as f:
                        json.dump({"refusals": self.refusals}, f)
                except OSError:
                    pass
            else:
                os._exit(5)  # it ignores refusals (a retry loop): the zygote reports the refusal file
        finally:
            self._busy = False
        raise SandboxRefusal(f"refused by the tcfuzz sandbox: {what}")

    # -- the environment ----------------------------------------------------------------------------
    def _credential(self, key):
        name = os.fsdecode(key) if isinstance(key, bytes) else str(key)
        return any(mark in name.upper() for mark in self._credential_marks)

    def _guard_environ(self):
        """Refuses the program's reads of os.environ (and os.getenv, which reads it) that go after secrets: a
        variable whose name marks a credential, or the whole mapping (iteration, repr, dict(os.environ)).
        Reading one ordinary setting (TORCHINDUCTOR_CACHE_DIR) is allowed. The worker's environment holds no
        secret anyway (Sandbox.cpp builds it from an allowlist)."""
        guard = self
        environ_class = type(os.environ)
        originals = {name: getattr(environ_class, name) for name in ("__getitem__", "__iter__", "__repr__")}

        def guarded(name):
            original = originals[name]

            def method(self, *args):
                if (guard.program is not None and not guard._busy and (not args or guard._credential(args[0]))
                        and guard._program_frame(sys._getframe(1))):
                    key = args[0] if args else ""
                    guard.refuse(f"environment read: os.environ{'[' + repr(key) + ']' if key else ''}")
                return original(self, *args)

            method.__name__ = name
            return method

        for name in originals:
            setattr(environ_class, name, guarded(name))


def _shown(args):
    """A short text of an audit event's plain arguments, for the refusal (never an environment mapping)."""
    return " ".join(repr(a) for a in args[:3] if isinstance(a, (str, bytes, int, tuple)))[:200]


def read_refusals(job_dir):
    """The refusals a job's child recorded in its job directory ([] when none)."""
    try:
        with open(os.path.join(job_dir, REFUSAL_FILE)) as f:
            return list(json.load(f).get("refusals") or [])
    except (OSError, ValueError):
        return []


GUARD = ProgramGuard()
