#!/usr/bin/env bash
# HTTP API load test: seeds a `gauntlet local` data dir with a benchmark of
# 50 entrants × 500 tasks × 5 attempts (pkg/server/benchseed), serves it on
# 127.0.0.1, and runs wrk (50 connections, 30 s, 2 threads) against
#   GET /v1/benchmarks/api-bench-1-0/leaderboard
#   GET /v1/runs/{id}
# then writes the p99 latency and the error counts into docs/BENCHMARKS.md
# under "HTTP API" (other sections are left alone).
#
#   scripts/bench-api.sh             full run (≈ 2 minutes)
#   BENCH_DURATION=5s scripts/bench-api.sh   a quick check
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
duration=${BENCH_DURATION:-30s}
connections=${BENCH_CONNECTIONS:-50}
threads=${BENCH_THREADS:-2}

if ! command -v wrk >/dev/null 2>&1; then
	echo "installing wrk"
	(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

work=$(mktemp -d)
server_pid=
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "==> building"
go build -o "$work/" ./cmd/gauntlet ./cmd/sandbox-runner

echo "==> seeding 50 entrants × 500 tasks (10 categories) × 5 attempts"
start=$(date +%s)
GAUNTLET_SEED_DIR="$work/data" go test -count=1 -run '^TestSeed$' ./pkg/server/benchseed >/dev/null
echo "seeded in $(($(date +%s) - start)) s"
run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"][0])' "$work/data/seeded.json")
bench=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["benchmark"])' "$work/data/seeded.json")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$work/gauntlet" local --data "$work/data" --addr "127.0.0.1:$port" --credentials - --sandbox process \
	--catalog "" --log-level warn >"$work/server.log" 2>&1 &
server_pid=$!
token=$(cat "$work/data/token")
for _ in $(seq 1 100); do
	if "$work/gauntlet" benchmark list --url "$url" --token "$token" >/dev/null 2>&1; then break; fi
	sleep 0.2
done

# The platform starts by catching up with the change stream the seeding
# wrote (recomputing the seeded runs' metrics); measure the API once it is
# idle, as a server between runs is: its CPU time must grow by under 5% of
# a core over a second (a minute at most).
clk=$(getconf CLK_TCK)
start=$(date +%s)
for _ in $(seq 1 60); do
	before=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
	sleep 1
	after=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
	if ((100 * (after - before) < 5 * clk)); then break; fi
done
idle_after=$(($(date +%s) - start))
echo "server idle after $idle_after s"

# measure NAME PATH: wrk, then print "p99_ms non2xx socket_errors requests rps".
measure() {
	local out
	out=$(wrk -t"$threads" -c"$connections" -d"$duration" --latency -H "Authorization: Bearer $token" "$url$2")
	echo "$out" >"$work/wrk-$1.txt"
	echo "$out" >&2
	python3 - "$work/wrk-$1.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
p99 = re.search(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
reqs = re.search(r"(\d+) requests in", text)
rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
errors = sum(int(x) for x in sock.groups()) if sock else 0
print(f"{ms(*p99.groups()):.2f} {int(non2xx.group(1)) if non2xx else 0} {errors} {reqs.group(1)} {float(rps.group(1)):.0f}")
EOF
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "==> GET /v1/benchmarks/$bench/leaderboard"
read -r lb_p99 lb_non2xx lb_sock lb_reqs lb_rps < <(measure leaderboard "/v1/benchmarks/$bench/leaderboard")
echo "==> GET /v1/runs/$run"
read -r run_p99 run_non2xx run_sock run_reqs run_rps < <(measure run "/v1/runs/$run")

section=$(cat <<EOF
## HTTP API

\`scripts/bench-api.sh\`: \`gauntlet local\` on 127.0.0.1 with a benchmark of
50 entrants × 500 tasks (10 categories) × 5 attempts (125,000 attempt results, seeded by
\`pkg/server/benchseed\` and scored by the pipeline's recompute), \`wrk -t$threads
-c$connections -d$duration --latency\` with a bearer token, on this 2-core
machine shared with the wrk client. Target: p99 under 20 ms, no errors.
The load starts once the server is idle: it first catches up with the
change stream the seeding wrote (idle after $idle_after s here).

| route | requests | req/s | p99 | non-2xx | socket errors |
|---|---|---|---|---|---|
| \`GET /v1/benchmarks/{key}/leaderboard\` (50 ranked rows) | $lb_reqs | $lb_rps | $lb_p99 ms | $lb_non2xx | $lb_sock |
| \`GET /v1/runs/{id}\` (one agent, 2,500 results) | $run_reqs | $run_rps | $run_p99 ms | $run_non2xx | $run_sock |

Measured $(date -u +%Y-%m-%d), load average before the runs: $load (the
machine is shared; other work inflates the tail). Both routes render stored,
precomputed documents (the pipeline's leaderboard item and the run's metrics
item, never the 125,000 results), and the API keeps the rendered answer:
a leaderboard for 1 s, a run for 1 s while it may change and for good once
it ended with current metrics. Concurrent misses render once
(singleflight) and an expired answer is served while its successor
renders, so no request queues behind a refresh; API tokens are re-checked
against the store every 10 s.

The tasks are spread over 10 categories, so each run's metrics carry
per-category pass@1; the stored leaderboard is a head item plus one part per
(metric, group), so a board of any realistic size stays under the 400 KB
item limit.
EOF
)
python3 - docs/BENCHMARKS.md "$section" <<'EOF'
import os, re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
pattern = re.compile(r"^## HTTP API\n.*?(?=^## |\Z)", re.S | re.M)
if pattern.search(text):
    text = pattern.sub(lambda _: section + "\n", text, count=1)
else:
    text = text.rstrip() + "\n\n" + section
open(path, "w").write(text.rstrip() + "\n")
EOF
echo "==> docs/BENCHMARKS.md updated: leaderboard p99 $lb_p99 ms, run p99 $run_p99 ms"
