#!/usr/bin/env bash
# The `make run` flow: build gauntlet, serve the stand-in base images on
# loopback (`gauntlet images serve`: Debian-built images under upstream
# names, no public registry being reachable), start `gauntlet local` in the
# background with that mirror setting and the demo's catalog
# (examples/demo-catalog.toml: its managed demo-bench is four of the fifteen
# demo-bench tasks, so that the first start prepares four images), submit
# examples/runs/demo.toml and follow it, print the leaderboard; then run the
# oracle and nop on demo-envs (a docker_image task, a Dockerfile-only
# task, a separate-verifier task, a healthcheck task and a sidecar-service task), added as soon as the server is up so that its images are prepared
# while the first run runs. Every task runs in its own image, pulled or
# built at the first sync and cached after; each one is printed as it is
# prepared (task n of N, pull or build, seconds).
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
#   GAUNTLET_MOCK_ADDR    where the bundled mock model listens (default 127.0.0.1:8181)
#   GAUNTLET_CACHE        agent bundle cache root (default ~/.cache/gauntlet)
#   GAUNTLET_ADDR         listen address (default 127.0.0.1:8080)
#   GAUNTLET_DEMO_CONFIG  run config to submit (default examples/runs/demo.toml)
#   GAUNTLET_DEMO_CATALOG managed-benchmark catalog (default
#                         examples/demo-catalog.toml; examples/catalog.toml
#                         has all fifteen demo-bench tasks)
#   GAUNTLET_DEMO_BUILT=1 bin/ is already built (make run builds it first)
#   GAUNTLET_DEMO_STOP=1  stop the server at the end (tests do)
#   GAUNTLET_CREDENTIALS  where the server writes CLI credentials
#                         (default ~/.config/gauntlet/credentials)
#   GAUNTLET_SANDBOX      bwrap (default: task images), bwrap-host or process
#   GAUNTLET_REGISTRY_ADDR  where the stand-in base images are served
#                         (default 127.0.0.1:5480)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
data=${GAUNTLET_DATA:-$root/.gauntlet}
addr=${GAUNTLET_ADDR:-127.0.0.1:8080}
config=${GAUNTLET_DEMO_CONFIG:-examples/runs/demo.toml}
catalog=${GAUNTLET_DEMO_CATALOG:-examples/demo-catalog.toml}
bin=$root/bin
pidfile=$data/server.pid
logfile=$data/server.log
regaddr=${GAUNTLET_REGISTRY_ADDR:-127.0.0.1:5480}
regpidfile=$data/registry.pid
reglogfile=$data/registry.log
settings=$data/image-settings.toml
mock_addr=${GAUNTLET_MOCK_ADDR:-127.0.0.1:8181}
mockpid=$data/mock-model.pid
gateway_config=$data/model-gateway.toml

say() { printf '\n==> %s\n' "$*"; }

server_alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
registry_alive() { [[ -f $regpidfile ]] && kill -0 "$(cat "$regpidfile")" 2>/dev/null; }

stop_registry() {
	if registry_alive; then
		kill -TERM "$(cat "$regpidfile")"
		echo "base image registry (pid $(cat "$regpidfile")) stopped"
	fi
	rm -f "$regpidfile"
}

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
	if [[ -f $mockpid ]] && kill -0 "$(cat "$mockpid")" 2>/dev/null; then
		kill -TERM "$(cat "$mockpid")"
		echo "mock model (pid $(cat "$mockpid")) stopped"
	fi
	rm -f "$mockpid"
}

if [[ ${1:-} == stop ]]; then
	stop_server
	stop_registry
	exit 0
fi

# make run has just built bin/ (make build); run alone, the demo builds
# what it uses.
if [[ ${GAUNTLET_DEMO_BUILT:-} != 1 ]]; then
	say "building gauntlet and sandbox-runner into bin/"
	mkdir -p "$bin"
	go build -o "$bin/" ./cmd/gauntlet
	CGO_ENABLED=0 go build -o "$bin/" ./cmd/sandbox-runner # static: it runs inside task images
fi

# The data dir and every file the demo writes in it are the operator's
# alone (gauntlet local tightens the dir and its files too): logs hold
# whatever was logged. Only the demo's own writes get umask 077, never
# gauntlet local (its sandboxes would inherit it).
(umask 077 && mkdir -p "$data")
chmod 700 "$data"
sandbox=${GAUNTLET_SANDBOX:-bwrap}
# The base image registry loads its tarballs (seconds) while the agent
# bundle is prepared.
if [[ $sandbox == bwrap ]]; then
	if registry_alive; then
		say "reusing the base image registry (pid $(cat "$regpidfile")) on $regaddr"
	else
		say "serving the stand-in base images (built from Debian packages by make base-images) on $regaddr, in the background"
		rm -f "$settings"
		(umask 077 && exec nohup "$bin/gauntlet" images serve --addr "$regaddr" --write-settings "$settings" >"$reglogfile" 2>&1) &
		(umask 077 && echo $! >"$regpidfile")
		registry_starting=1
	fi
fi

# The demo's codex agent is the real program (npm @openai/codex, pinned in
# agents/package-lock.json), prepared once into the agent-bundle cache and
# mounted read-only into its sandboxes; a second run reuses it.
say "preparing the codex agent bundle (once; then reused from the cache)"
"$bin/gauntlet" agents install codex

if [[ -n ${registry_starting:-} ]]; then
	for i in $(seq 1 600); do
		[[ -s $settings ]] && break
		if ! registry_alive; then
			echo "gauntlet images serve exited; its log:" >&2
			tail -n 30 "$reglogfile" >&2
			exit 1
		fi
		((i == 600)) && { echo "the base image registry did not start within 120 s" >&2; exit 1; }
		sleep 0.2
	done
	say "the stand-in base images"
	cat "$reglogfile"
fi
# codex talks to the bundled mock model (no API key needed) through the
# model gateway: provider "mock" of the gateway's provider table is routed
# to it. Point the same run at a real provider by changing the model (see
# README.md, "Real agents").
if ! { [[ -f $mockpid ]] && kill -0 "$(cat "$mockpid")" 2>/dev/null; }; then
	say "starting the mock model on $mock_addr (gauntlet mock-model, script fix-median)"
	(umask 077 && exec nohup "$bin/gauntlet" mock-model -listen "$mock_addr" -script fix-median >"$data/mock-model.log" 2>&1) &
	(umask 077 && echo $! >"$mockpid")
fi
(umask 077 && : >"$gateway_config")
cat >"$gateway_config" <<EOF
# Written by scripts/demo.sh: the model gateway's provider "mock" is the
# bundled mock model (gauntlet mock-model); it has no price, so runs show
# tokens and no cost.
[providers.mock]
base_urls = { openai-responses = "http://$mock_addr/v1", openai-chat = "http://$mock_addr/v1", anthropic-messages = "http://$mock_addr/v1", gemini = "http://$mock_addr/v1beta" }
EOF
if server_alive; then
	say "reusing gauntlet local (pid $(cat "$pidfile")) on data dir $data"
else
	say "starting gauntlet local on $addr, data dir $data (log: $logfile)"
	args=(local --data "$data" --addr "$addr" --registry examples/registry.json --catalog "$catalog"
		--agents-dir examples/agents --runner "$bin/sandbox-runner" --sandbox "$sandbox"
		--model-gateway-config "$gateway_config")
	if [[ $sandbox == bwrap ]]; then
		args+=(--image-settings "$settings")
		echo "the first start prepares the managed benchmark's task images (cached in $data after); each is listed when ready"
	fi
	if [[ -n ${GAUNTLET_CREDENTIALS:-} ]]; then
		args+=(--credentials "$GAUNTLET_CREDENTIALS")
	fi
	(umask 077 && : >"$logfile") && chmod 600 "$logfile"
	nohup "$bin/gauntlet" "${args[@]}" >>"$logfile" 2>&1 &
	(umask 077 && echo $! >"$pidfile")
fi
if [[ ${GAUNTLET_DEMO_STOP:-} == 1 ]]; then
	trap 'stop_server; stop_registry' EXIT
fi

# Wait until the server answers with the token it wrote.
export GAUNTLET_URL="http://$addr"
# The first start syncs the managed catalog with its images (with
# examples/catalog.toml: 15 builds, up to half a minute each on a busy
# 2-core machine): allow 30 minutes. Meanwhile each task image is printed
# as the server logs it prepared.
loglines=$(wc -l <"$logfile")
print_prepared() {
	local n
	n=$(wc -l <"$logfile")
	((n > loglines)) || return 0
	sed -n "$((loglines + 1)),${n}p" "$logfile" | sed -n \
		-e 's/.*msg="building task image" task=\([^ ]*\) .*/  building the image of task \1 …/p' \
		-e 's/.*msg="task image prepared" task=\([^ ]*\) n=\([0-9]*\) of=\([0-9]*\) source=\([a-z]*\) seconds=\([0-9.]*\) unavailable=\([a-z]*\).*/  task image \2 of \3  \4  \1  \5 s  unavailable=\6/p' |
		sed 's/  unavailable=false$//; s/  unavailable=true$/  UNAVAILABLE (see benchmark info)/'
	loglines=$n
}
for i in $(seq 1 9000); do
	print_prepared
	if [[ -s $data/token ]]; then
		export GAUNTLET_TOKEN
		GAUNTLET_TOKEN=$(cat "$data/token")
		if out=$("$bin/gauntlet" benchmark list 2>&1); then
			print_prepared
			break
		fi
		# It answers at once, "starting: syncing the catalog" until ready.
		if [[ $out == *"starting: "* && -z ${said_starting:-} ]]; then
			said_starting=1
			echo "gauntlet local is starting: ${out#*starting: }" | sed 's/ (503 UNAVAILABLE)$//'
		fi
	fi
	if ! server_alive; then
		echo "gauntlet local exited; its log:" >&2
		tail -n 30 "$logfile" >&2
		exit 1
	fi
	if ((i == 9000)); then
		echo "gauntlet local did not answer on $GAUNTLET_URL within 30 minutes; its log:" >&2
		tail -n 30 "$logfile" >&2
		exit 1
	fi
	sleep 0.2
done
echo "gauntlet local is up on $GAUNTLET_URL"

# The codex agent's model key: a secret record like any provider's. The
# mock accepts any key; the gateway keeps it out of the sandbox all the same.
printf %s "mock-key-not-a-real-secret" | "$bin/gauntlet" secret set MOCK_API_KEY >/dev/null

# The managed demo-bench is the catalog's (examples/demo-catalog.toml):
# every workspace has it, key demo-bench. `benchmark add` is shown with
# demo-envs above.
if [[ $sandbox == bwrap ]]; then
	say "adding demo-envs@1.0 (a docker_image task, a Dockerfile-only task, a separate verifier, a healthcheck and a sidecar service): its images are prepared while the first run runs"
	"$bin/gauntlet" benchmark add demo-envs@1.0
fi

say "the managed benchmark demo-bench ($catalog)"
"$bin/gauntlet" benchmark info demo-bench

say "benchmarks of the workspace"
"$bin/gauntlet" benchmark list

say "submitting $config to the managed benchmark, key demo-bench"
"$bin/gauntlet" submit "$config" --yes --watch

benchmark=$("$bin/gauntlet" runs list --limit 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["benchmark"])')
if [[ $config == examples/runs/demo.toml && $benchmark != demo-bench ]]; then
	echo "demo: the run went to benchmark $benchmark, not the managed demo-bench" >&2
	exit 1
fi
say "leaderboard of benchmark key $benchmark"
"$bin/gauntlet" leaderboard "$benchmark"

if [[ $sandbox == bwrap ]]; then
	say "demo-envs@1.0: a docker_image task, a Dockerfile-only task, a task graded by a separate verifier image, a task with a healthcheck and one with a sidecar service (images, the verifier's and the sidecar's too, pinned by digest at sync)"
	"$bin/gauntlet" benchmark info demo-envs-1-0 --wait
	say "the oracle and nop on demo-envs, each attempt in its task's image"
	"$bin/gauntlet" submit examples/runs/envs/oracle-nop.toml --yes --watch
	"$bin/gauntlet" leaderboard demo-envs-1-0
fi

say "adding demo-steps@1.0: a multi-step task (three steps in one environment, each with its instruction, tests and min_reward)"
"$bin/gauntlet" benchmark add demo-steps@1.0 --wait
say "the oracle and nop on demo-steps: the oracle passes every step, nop fails the first and stops there"
"$bin/gauntlet" submit examples/runs/steps/oracle-nop.toml --yes --watch
steps_run=$("$bin/gauntlet" runs list --limit 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["id"])')
"$bin/gauntlet" runs info "$steps_run"

cat <<EOF

==> done
  console:  $GAUNTLET_URL/
  API:      $GAUNTLET_URL/v1  (OpenAPI: $GAUNTLET_URL/v1/openapi.json)
  token:    $data/token  (the CLI reads ${GAUNTLET_CREDENTIALS:-~/.config/gauntlet/credentials})
  try:      bin/gauntlet runs list; bin/gauntlet runs download <run-id> -o /tmp
  all 15 demo-bench tasks: bin/gauntlet benchmark add demo-bench@1.0 --wait
EOF
if [[ ${GAUNTLET_DEMO_STOP:-} == 1 ]]; then
	echo "  the server stops now (GAUNTLET_DEMO_STOP=1); start it again with: make run"
else
	echo "  the server keeps running (pid $(cat "$pidfile"), log $logfile)"
	echo "  stop it with: scripts/demo.sh stop"
fi
