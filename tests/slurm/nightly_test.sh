#!/usr/bin/env bash
# The nightly job on a real single-node Slurm (ctest SlurmNightly, label slurm). It starts munged,
# slurmctld and slurmd on localhost from a slurm.conf of its own in a temp directory (no systemd, no
# cgroups, no accounting), submits the nightly with scripts/nightly (three CPU shards of one minute, 1 CPU
# each, fuzzing against a planted-bug backend: TEST FIXTURE tcfuzz_planted_raise of
# tests/fixtures/planted_backends.py, not a PyTorch bug), waits for the merge job, and checks:
#   - summary.md names the three shards with the programs each one's fuzzer_stats counted; night.json is valid;
#   - every merged signature's hits are the sum of the shards' raw findings, and the planted failure
#     found by several shards is one merged signature;
#   - the merge job started after every array task had ended (scontrol's times and the jobs' own logs);
#   - a second night (one shard) finds the first by itself: the planted failure is "seen before".
# It stops the daemons and leaves nothing running. Not root: skipped (exit 77). Root without the Slurm
# packages (scripts/setup installs slurmctld, slurmd, slurm-client and munge): a failure that says so.
#
#   tests/slurm/nightly_test.sh SOURCE_DIR TCFUZZ_BINARY [PYTHON]
# TCFUZZ_SLURM_KEEP=1 keeps the temp directory (the daemons' logs, the night) for a look afterwards.
set -euo pipefail
SRC="$(cd "${1:?usage: nightly_test.sh SOURCE_DIR TCFUZZ_BINARY [PYTHON]}" && pwd)"
TCFUZZ="${2:?usage: nightly_test.sh SOURCE_DIR TCFUZZ_BINARY [PYTHON]}"
PY="${3:-$SRC/.venv/bin/python}"
log() { printf '[slurm-test %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[slurm-test] FAIL: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  echo "[slurm-test] SKIP: the single-node Slurm test runs its daemons as root (slurmd starts jobs as any user); run it as root"
  exit 77
fi
for b in munged slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
  command -v "$b" >/dev/null 2>&1 ||
    fail "$b not found: the Slurm test needs Debian's slurmctld, slurmd, slurm-client and munge (scripts/setup installs them: apt-get install slurmctld slurmd slurm-client munge)"
done
[ -x "$TCFUZZ" ] || fail "no tcfuzz binary at $TCFUZZ"
[ -x "$PY" ] || fail "no Python at $PY (scripts/setup creates .venv)"

T="$(mktemp -d /tmp/tcfuzz-slurm.XXXXXX)"
chmod 755 "$T"
pids=()        # the daemons, in start order
jobs_to_cancel=()
cleanup() {
  local rc=$?
  set +e
  if ((${#jobs_to_cancel[@]})) && [ -f "$T/slurm.conf" ]; then
    scancel "${jobs_to_cancel[@]}" 2>/dev/null
    for _ in $(seq 30); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 1; done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  # Anything else of ours (a job's process that outlived scancel): it names the temp dir or carries
  # SLURM_CONF=$T/slurm.conf in its environment.
  local left=()
  for d in /proc/[0-9]*; do
    local p="${d#/proc/}"
    [ "$p" = $$ ] && continue
    if tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF "$T/" ||
       tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "SLURM_CONF=$T/slurm.conf"; then
      left+=("$p")
    fi
  done
  if ((${#left[@]})); then
    log "still running after the daemons stopped, killed: $(ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" 2>/dev/null | tr '\n' ';')"
    kill -9 "${left[@]}" 2>/dev/null
    ((rc == 0)) && rc=1
  fi
  if pgrep -f "$T/slurm.conf" >/dev/null || pgrep -f "$T/munge" >/dev/null; then
    log "FAIL: a daemon is still running: $(pgrep -af "$T/")"; ((rc == 0)) && rc=1
  fi
  if ((rc != 0)) || [ "${TCFUZZ_SLURM_KEEP:-0}" = 1 ]; then
    if ((rc != 0)); then
      for f in "$T"/slurmctld.log "$T"/slurmd.log "$T"/munged.log; do
        [ -f "$f" ] && { echo "--- tail of $f"; tail -n 25 "$f"; }
      done
      for f in "$T"/nights/*/logs/*.out; do [ -f "$f" ] && { echo "--- tail of $f"; tail -n 15 "$f"; }; done
    fi
    log "kept $T"
  else
    rm -rf "$T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- munge: its own key, socket and files --------------------------------------------------------
mkdir -p "$T/munge" "$T/state" "$T/spool"
chmod 700 "$T/munge"
head -c 1024 /dev/urandom >"$T/munge/munge.key"
chmod 400 "$T/munge/munge.key"
munged -F --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munge/munged.seed" \
  >"$T/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$T/munge/munge.socket" ] && break; sleep 0.2; done
[ -S "$T/munge/munge.socket" ] || fail "munged did not start: $(cat "$T/munged.out" "$T/munged.log" 2>/dev/null | tail -n 5)"

# --- slurm.conf for this host --------------------------------------------------------------------
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  fail "no free TCP port found"
}
node="$(hostname -s)"
ctld_port="$(free_port)"
slurmd_port="$(free_port)"
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))
mem_mb=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) / 2 ))
cat >"$T/slurm.conf" <<EOF
# tcfuzz's single-node test cluster (tests/slurm/nightly_test.sh)
ClusterName=tcfuzz-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=3600
# Three 1-CPU shards at once on a 2-core machine: the node claims 3 CPUs whatever it has.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=3 RealMemory=$mem_mb State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"

log "starting slurmctld (port $ctld_port) and slurmd (node $node, port $slurmd_port) from $SLURM_CONF"
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 60); do
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a Slurm daemon exited at start: $(tail -n 5 "$T"/slurmctld.out "$T"/slurmd.out 2>/dev/null)"; done
  state="$(sinfo -h -N -n "$node" -o %t 2>/dev/null || true)"
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || fail "the node is not idle after 60 s (state '$state')"
log "node $node idle"

# --- The nightly: three CPU shards of one minute ---------------------------------------------------
sandbox=bwrap
bwrap --ro-bind / / --dev /dev --proc /proc --unshare-net true 2>/dev/null || sandbox=none
nights="$T/nights"
export NIGHTLY_ROOT="$nights" NIGHTLY_SHARD_MINUTES=1 \
  NIGHTLY_SHARD_TIME=10 NIGHTLY_DEVICE=cpu NIGHTLY_GRES= NIGHTLY_CPUS=1 NIGHTLY_WORKERS=1 \
  NIGHTLY_MEM= NIGHTLY_MERGE_CPUS=1 NIGHTLY_MERGE_MEM= NIGHTLY_MERGE_TIME=15 NIGHTLY_PARTITION= \
  NIGHTLY_ACCOUNT= NIGHTLY_QOS= NIGHTLY_SBATCH_ARGS= NIGHTLY_JOB_NAME=tcfuzz-slurm-test \
  NIGHTLY_TCFUZZ="$TCFUZZ" NIGHTLY_PYTHON="$PY" \
  NIGHTLY_FUZZ_ARGS="--llm off --status log --no-triage --sandbox $sandbox --timeout 60 --backend tcfuzz_planted_raise --plugin $SRC/tests/fixtures/planted_backends.py" \
  NIGHTLY_MERGE_ARGS="--no-triage --no-regress"

# Submits the night $1 (NIGHTLY_SHARDS shards, base seed $2) with scripts/nightly, waits for its merge job
# (deadline: 8 minutes) and saves scontrol's view of both jobs as $T/$1.array and $T/$1.merge.
run_night() {
  local name="$1" submit array_id merge_id merge_state deadline
  local night="$nights/$name"
  NIGHTLY_DATE="$name" NIGHTLY_SEED="$2" "$SRC/scripts/nightly" --dry-run >/dev/null || fail "scripts/nightly --dry-run failed"
  submit="$(NIGHTLY_DATE="$name" NIGHTLY_SEED="$2" "$SRC/scripts/nightly")" || fail "scripts/nightly failed: $submit"
  echo "$submit"
  array_id="$(sed -n 's/^array_job_id=//p' "$night/jobs")"
  merge_id="$(sed -n 's/^merge_job_id=//p' "$night/jobs")"
  [[ "$array_id" =~ ^[0-9]+$ && "$merge_id" =~ ^[0-9]+$ ]] || fail "no job ids in $night/jobs"
  jobs_to_cancel=("$array_id" "$merge_id")
  grep -q "job $array_id" <<<"$submit" && grep -q "job $merge_id" <<<"$submit" || fail "scripts/nightly did not print the job ids"
  scontrol -o show job "$merge_id" | grep -q "Dependency=afterany:${array_id}" ||
    fail "the merge job does not depend on the array: $(scontrol -o show job "$merge_id")"
  deadline=$(( $(date +%s) + 480 ))
  while :; do
    merge_state="$(scontrol -o show job "$merge_id" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
    case "$merge_state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE) break ;; esac
    (( $(date +%s) < deadline )) || fail "the merge job of $name is still $merge_state after 8 minutes: $(squeue 2>&1)"
    sleep 3
  done
  log "night $name: merge job $merge_id $merge_state"
  jobs_to_cancel=()
  scontrol -o show job "$array_id" >"$T/$name.array"
  scontrol -o show job "$merge_id" >"$T/$name.merge"
  [ "$merge_state" = COMPLETED ] || fail "the merge job of $name ended $merge_state: $(tail -n 20 "$night/logs/merge.out" 2>/dev/null)"
}

# Night one: three shards. Night two: one shard, which finds the previous night by itself.
NIGHTLY_SHARDS=3 run_night 2026-01-02 700
NIGHTLY_SHARDS=1 run_night 2026-01-03 800

# --- The checks ------------------------------------------------------------------------------------
python3 - "$nights" "$T" <<'EOF'
import datetime, json, pathlib, re, sqlite3, sys
nights, tmp = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
night = nights / "2026-01-02"
errors = []
def check(ok, what):
    if not ok: errors.append(what)

def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()

# The dependency: by Slurm's clock and by the jobs' own logs.
def check_dependency(name, shards):
    night = nights / name
    tasks = [fields(l) for l in open(tmp / f"{name}.array") if l.strip()]
    merge = fields(open(tmp / f"{name}.merge").read())
    check(sorted(t.get("ArrayTaskId") for t in tasks) == [str(i) for i in range(shards)],
          f"{name}: array tasks {[t.get('ArrayTaskId') for t in tasks]}")
    for t in tasks:
        check(t.get("JobState") == "COMPLETED", f"{name}: task {t.get('ArrayTaskId')} ended {t.get('JobState')}")
    last_end = max(t["EndTime"] for t in tasks)
    check(ts(merge["StartTime"]) >= ts(last_end),
          f"{name}: scontrol says the merge started {merge['StartTime']}, before the last task ended ({last_end})")
    shard_ends = {}
    for i in range(shards):
        m = re.search(rf"^nightly: shard {i} end ([\d.]+) rc=(\d+)", (night / "logs" / f"shard-{i}.out").read_text(), re.M)
        check(m is not None, f"{name}: shard {i}'s log has no end line")
        if m: shard_ends[i] = float(m.group(1))
    mlog = (night / "logs" / "merge.out").read_text()
    m = re.search(r"^nightly: merge start ([\d.]+)", mlog, re.M)
    check(m is not None, f"{name}: the merge log has no start line")
    if m and shard_ends:
        check(float(m.group(1)) > max(shard_ends.values()), f"{name}: logs: merge started at {m.group(1)}, shards ended {shard_ends}")
    check(re.search(r"^nightly: merge end [\d.]+ rc=0", mlog, re.M) is not None, f"{name}: the merge log has no successful end")
    print(f"{name}: last of {shards} array task(s) ended {last_end}, merge started {merge['StartTime']} "
          f"(logs: last shard end {max(shard_ends.values(), default=0):.3f} < merge start {m.group(1) if m else '?'})")
check_dependency("2026-01-02", 3)
check_dependency("2026-01-03", 1)

# The summary names each shard with the programs its fuzzer_stats counted.
summary = (night / "summary.md").read_text()
rows = {}
for line in summary.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 8 and re.fullmatch(r"shard-\d\d", cells[0]):
        rows[cells[0]] = cells
shard_hits = {}  # signature id -> {shard: raw findings}
total_programs = 0
for i in range(3):
    name = f"shard-{i:02d}"
    campaign = night / "campaigns" / name
    stats = dict(re.match(r"^(\w+)\s*:\s*(.*)$", l).groups() for l in (campaign / "fuzzer_stats").read_text().splitlines()
                 if re.match(r"^\w+\s*:", l))
    programs = int(stats["programs_done"])
    total_programs += programs
    check(name in rows, f"summary.md does not list {name}")
    if name in rows:
        check(rows[name][1] == "ok", f"{name}: status {rows[name][1]}")
        check(rows[name][2] == str(700 + i), f"{name}: seed {rows[name][2]}, not {700 + i}")
        check(rows[name][5] == str(programs), f"{name}: summary says {rows[name][5]} programs, fuzzer_stats {programs}")
    db = sqlite3.connect(f"file:{campaign / 'findings.sqlite'}?mode=ro", uri=True)
    for sig, n in db.execute("SELECT signature_id, COUNT(*) FROM findings GROUP BY signature_id"):
        shard_hits.setdefault(sig, {})[name] = n
    db.close()
check(total_programs > 0, "no shard judged a program")

# night.json is valid, and each signature's hits are the sum over the shards.
nj = json.loads((night / "night.json").read_text())
check(nj.get("night") == night.name, f"night.json names night {nj.get('night')}")
sigs = {s["id"]: s for s in nj.get("signatures", [])}
check(set(sigs) == set(shard_hits), f"night.json signatures {sorted(sigs)} != shards' {sorted(shard_hits)}")
for sig, per_shard in shard_hits.items():
    s = sigs.get(sig, {})
    check(s.get("hits") == sum(per_shard.values()), f"{sig}: {s.get('hits')} hits merged, shards found {per_shard}")
    check(s.get("status") == "new", f"{sig}: status {s.get('status')} on a first night")
planted = [s for s in sigs.values() if "planted compiler failure" in s.get("key", "")]
check(len(planted) >= 1, f"the planted failure was not found (signatures: {[s.get('key') for s in sigs.values()]})")
by_shards = max((len(shard_hits.get(s["id"], {})) for s in planted), default=0)
check(len(planted) == 1, f"the planted failure is {len(planted)} merged signatures, not one: {[s['key'] for s in planted]}")
check(by_shards >= 2, f"the planted failure was found by {by_shards} shard(s), not several: {shard_hits}")
for s in planted:
    print(f"planted signature {s['id']}: {s['hits']} hits = {shard_hits.get(s['id'])}")
print(f"programs: {total_programs} over 3 shards; signatures merged: {len(sigs)}; the planted one found by {by_shards} shard(s)")

# Night two found night one by itself: the planted failure is seen before, since 2026-01-02.
night2 = nights / "2026-01-03"
nj2 = json.loads((night2 / "night.json").read_text())
check(str(nj2.get("previous") or "").endswith("/2026-01-02"), f"night two compared with {nj2.get('previous')}, not 2026-01-02")
db = sqlite3.connect(f"file:{night2 / 'campaigns' / 'shard-00' / 'findings.sqlite'}?mode=ro", uri=True)
hits2 = dict(db.execute("SELECT signature_id, COUNT(*) FROM findings GROUP BY signature_id").fetchall())
db.close()
sigs2 = {s["id"]: s for s in nj2.get("signatures", [])}
summary2 = (night2 / "summary.md").read_text()
check("Compared with [2026-01-02]" in summary2, "night two's summary.md does not say it compared with 2026-01-02")
for s in planted:
    if s["id"] not in hits2:
        print(f"note: night two's one shard did not find the planted failure ({hits2})")
        continue
    s2 = sigs2.get(s["id"], {})
    check(s2.get("status") == "seen-before" and s2.get("first_night") == "2026-01-02",
          f"night two: the planted failure is {s2.get('status')} since {s2.get('first_night')}, not seen-before since 2026-01-02")
    check(s2.get("hits") == hits2[s["id"]], f"night two: {s2.get('hits')} hits merged, its shard found {hits2[s['id']]}")
    seen = summary2.split("## Seen before", 1)[-1].split("\n## ", 1)[0]
    check(s["id"] in seen, f"night two's summary.md does not list {s['id']} under Seen before:\n{seen}")
    print(f"night two: {s['id']} seen before (since {s2.get('first_night')}), {s2.get('hits')} hits")
if errors:
    print("FAIL:\n  " + "\n  ".join(errors), file=sys.stderr)
    sys.exit(1)
EOF
night="$nights/2026-01-02"
if [ -f "$night/plots/campaign.png" ]; then log "plots: $night/plots/campaign.png"; else log "note: no plot (tcfuzz plot: $(grep 'plot' "$night/logs/merge.out" | tail -n 1))"; fi
log "PASS"
