#!/usr/bin/env bash
# Where one tool call's time goes, step by step, read from the kernel.
#
#   end2end/bench/trace_call.sh <app_overhead binary> [app:1 | mcp:1 | direct:1]
#
# Runs the benchmark's binary (`cargo bench -p strad-server --bench app_overhead --no-run`
# prints its path) on one path (`STRAD_BENCH_ONLY`), and for three seconds of its calls
# records with bpftrace every send, and every read that returned data, of the benchmark's
# process (strad's threads and the caller's), the upstream Node server and PostgreSQL. It
# prints the median time between consecutive events of a call, a call starting at each of
# the caller's sends: "strad R#1 -> strad S#1" is strad's work from reading the request to
# sending the next thing (the upstream request). Needs root, bpftrace and tracefs.
set -euo pipefail

binary=$(realpath "$1")
mode=${2:-app:1}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
# shellcheck disable=SC2064 # the directory is known now
trap "rm -rf '$work'" EXIT
[ -e /sys/kernel/tracing/available_events ] || mount -t tracefs nodev /sys/kernel/tracing

# Sends: write, writev, sendto, sendmsg. Reads: read, readv, recvfrom, recvmsg.
cat > "$work/trace.bt" <<'EOF'
tracepoint:raw_syscalls:sys_enter
/ (args->id == 1 || args->id == 20 || args->id == 44 || args->id == 46)
  && (comm == "postgres" || pid == $1 || pid == $2) /
{
  printf("%llu %d %d %s S %d %d\n", nsecs, pid, tid, comm, args->id, args->args[0]);
}
tracepoint:raw_syscalls:sys_enter
/ (args->id == 0 || args->id == 19 || args->id == 45 || args->id == 47)
  && (comm == "postgres" || pid == $1 || pid == $2) /
{
  @fd[tid] = args->args[0];
  @reading[tid] = 1;
}
tracepoint:raw_syscalls:sys_exit
/ @reading[tid] == 1 /
{
  if (args->ret > 0) {
    printf("%llu %d %d %s R %d %d\n", nsecs, pid, tid, comm, args->id, @fd[tid]);
  }
  delete(@reading[tid]);
  delete(@fd[tid]);
}
interval:s:3 { exit(); }
EOF

cd "$root/server"
export PATH="$root/end2end/node_modules/.bin:$PATH:/usr/sbin"
DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@localhost/postgres?host=/run/postgresql}" \
  STRAD_BENCH_ONLY=$mode "$binary" --bench > "$work/bench.log" 2>&1 &
bench=$!
for _ in $(seq 1 900); do
  grep -q "profiling window" "$work/bench.log" && break
  sleep 0.2
done
grep -q "profiling window" "$work/bench.log" || { cat "$work/bench.log"; exit 1; }
# The upstream: the example server's node process, a child of the benchmark.
node=$(pgrep -P "$bench" -x node | head -1)
sleep 1
bpftrace "$work/trace.bt" "$bench" "$node" > "$work/trace" 2>/dev/null
wait "$bench"
tail -1 "$work/bench.log"

python3 - "$work/trace" "$bench" "$node" <<'EOF'
import collections, statistics, sys

path, bench, node = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
events = []
for line in open(path):
    fields = line.split()
    if len(fields) != 7 or not fields[0].isdigit():
        continue
    at, pid, comm, direction = int(fields[0]), int(fields[1]), fields[3], fields[4]
    if pid == bench:
        who = "strad" if comm.startswith("strad") else "caller"
    elif pid == node:
        who = "node"
    elif comm == "postgres":
        who = "pg"
    else:
        continue
    events.append((at, f"{who} {direction}"))
events.sort()
starts = [i for i, (_, what) in enumerate(events) if what == "caller S"]
steps, cycles = collections.defaultdict(list), []
for first, end in zip(starts, starts[1:]):
    seen, before, label = collections.Counter(), events[first][0], "caller S"
    for at, what in events[first + 1:end]:
        seen[what] += 1
        steps[f"{label} -> {what}#{seen[what]}"].append((at - before) / 1000)
        before, label = at, f"{what}#{seen[what]}"
    cycles.append((events[end][0] - events[first][0]) / 1000)
print(f"{len(cycles)} calls, a call every {statistics.median(cycles):.0f} µs (median)")
for step, times in sorted(steps.items(), key=lambda kv: -len(kv[1])):
    if len(times) >= len(cycles) / 2:
        print(f"{step:40s} {len(times):6d} calls  median {statistics.median(times):7.1f} µs")
EOF
