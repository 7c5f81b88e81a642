#!/usr/bin/env bash
# The `make run` flow: build gauntlet, start `gauntlet local` in the
# background, add the example benchmark from examples/registry.json, submit
# examples/runs/demo.toml and follow it, then print the leaderboard.
#
#   scripts/demo.sh          run the demo (leaves the server running)
#   scripts/demo.sh stop     stop the server the demo started
#
# The server is left running on purpose: the console and the API are the
# product, and the run the demo made is there to be explored (open the
# console, `bin/gauntlet runs list`, `bin/gauntlet runs download …`).
# A second `make run` reuses the running server.
#
# Environment:
#   GAUNTLET_DATA         data dir (default ./.gauntlet)
#   GAUNTLET_ADDR         listen address (default 127.0.0.1:8080)
#   GAUNTLET_DEMO_CONFIG  run config to submit (default examples/runs/demo.toml)
#   GAUNTLET_DEMO_STOP=1  stop the server at the end (tests do)
#   GAUNTLET_CREDENTIALS  where the server writes CLI credentials
#                         (default ~/.config/gauntlet/credentials)
#   GAUNTLET_SANDBOX      bwrap (default) or process
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
data=${GAUNTLET_DATA:-$root/.gauntlet}
addr=${GAUNTLET_ADDR:-127.0.0.1:8080}
config=${GAUNTLET_DEMO_CONFIG:-examples/runs/demo.toml}
bin=$root/bin
pidfile=$data/server.pid
logfile=$data/server.log

say() { printf '\n==> %s\n' "$*"; }

server_alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

stop_server() {
	if server_alive; then
		local pid
		pid=$(cat "$pidfile")
		kill -TERM "$pid"
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		echo "gauntlet local (pid $pid) stopped"
	else
		echo "no gauntlet local started by the demo is running (data dir $data)"
	fi
	rm -f "$pidfile"
}

if [[ ${1:-} == stop ]]; then
	stop_server
	exit 0
fi

say "building gauntlet and sandbox-runner into bin/"
mkdir -p "$bin"
go build -o "$bin/" ./cmd/gauntlet ./cmd/sandbox-runner

# The data dir and server.log are the operator's alone (gauntlet local
# tightens the dir and its files too): the log holds whatever the server
# logged. No umask for the whole script: sandboxes inherit it.
(umask 077 && mkdir -p "$data")
chmod 700 "$data"
if server_alive; then
	say "reusing gauntlet local (pid $(cat "$pidfile")) on data dir $data"
else
	say "starting gauntlet local on $addr, data dir $data (log: $logfile)"
	args=(local --data "$data" --addr "$addr" --registry examples/registry.json --catalog examples/catalog.toml
		--agents-dir examples/agents --runner "$bin/sandbox-runner" --sandbox "${GAUNTLET_SANDBOX:-bwrap}")
	if [[ -n ${GAUNTLET_CREDENTIALS:-} ]]; then
		args+=(--credentials "$GAUNTLET_CREDENTIALS")
	fi
	(umask 077 && : >"$logfile") && chmod 600 "$logfile"
	nohup "$bin/gauntlet" "${args[@]}" >>"$logfile" 2>&1 &
	(umask 077 && echo $! >"$pidfile")
fi
if [[ ${GAUNTLET_DEMO_STOP:-} == 1 ]]; then
	trap stop_server EXIT
fi

# Wait until the server answers with the token it wrote.
export GAUNTLET_URL="http://$addr"
for i in $(seq 1 300); do
	if [[ -s $data/token ]]; then
		export GAUNTLET_TOKEN
		GAUNTLET_TOKEN=$(cat "$data/token")
		if "$bin/gauntlet" benchmark list >/dev/null 2>&1; then
			break
		fi
	fi
	if ! server_alive; then
		echo "gauntlet local exited; its log:" >&2
		tail -n 30 "$logfile" >&2
		exit 1
	fi
	if ((i == 300)); then
		echo "gauntlet local did not answer on $GAUNTLET_URL within 60 s; its log:" >&2
		tail -n 30 "$logfile" >&2
		exit 1
	fi
	sleep 0.2
done
echo "gauntlet local is up on $GAUNTLET_URL"

say "adding demo-bench@1.0 from examples/registry.json"
"$bin/gauntlet" benchmark add demo-bench@1.0 --wait

say "benchmarks of the workspace (demo-bench is also in the managed catalog, examples/catalog.toml)"
"$bin/gauntlet" benchmark list

say "submitting $config"
"$bin/gauntlet" submit "$config" --yes --watch

# The config names demo-bench: a benchmark key wins over a name, so that is
# the managed demo-bench, not the workspace's demo-bench-1-0 (named
# demo-bench) just added; ask the run which it was.
benchmark=$("$bin/gauntlet" runs list --limit 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["benchmark"])')
say "leaderboard of $benchmark"
"$bin/gauntlet" leaderboard "$benchmark"

cat <<EOF

==> done
  console:  $GAUNTLET_URL/
  API:      $GAUNTLET_URL/v1  (OpenAPI: $GAUNTLET_URL/v1/openapi.json)
  token:    $data/token  (the CLI reads ${GAUNTLET_CREDENTIALS:-~/.config/gauntlet/credentials})
  try:      bin/gauntlet runs list; bin/gauntlet runs download <run-id> -o /tmp
EOF
if [[ ${GAUNTLET_DEMO_STOP:-} == 1 ]]; then
	echo "  the server stops now (GAUNTLET_DEMO_STOP=1); start it again with: make run"
else
	echo "  the server keeps running (pid $(cat "$pidfile"), log $logfile)"
	echo "  stop it with: scripts/demo.sh stop"
fi
