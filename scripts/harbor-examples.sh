#!/usr/bin/env bash
# Runs Harbor's own example tasks (examples/tasks/ of a Harbor checkout) with
# the oracle and nop through a gauntlet local of its own, as docs/ENVIRONMENTS.md
# ("Harbor's example tasks") reports them. The tasks are read from the checkout,
# never copied into this repository; their FROM lines are adapted to the stand-in
# bases `gauntlet images serve` offers (ubuntu:22.04 → ubuntu:24.04,
# python:3.12-slim → python:3.13-slim).
#
#   HARBOR_SRC=/path/to/harbor scripts/harbor-examples.sh
#
# HARBOR_SRC is a Harbor checkout (a work tree), or a bare repository, whose
# HEAD is read. Needs bin/ (make build), root, and the stand-in bases
# (make base-images). Ports: 8590 (API), 5590 (base registry).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src=${HARBOR_SRC:?set HARBOR_SRC to a Harbor checkout or bare repository}
work=$(mktemp -d /tmp/harbor-examples.XXXXXX)
chmod 700 "$work"
tasks=(hello-world hello-user hello-workdir hello-healthcheck hello-multi-step-simple
	hello-multi-step-advanced environment-env-single environment-env-multi
	separate-verifier-environment separate-verifier-multi-step sidecar-artifacts
	reward-kit-example hello-alpine)

mkdir -p "$work/examples/tasks"
for t in "${tasks[@]}"; do
	if [[ -d $src/examples/tasks/$t ]]; then
		cp -r "$src/examples/tasks/$t" "$work/examples/tasks/"
	else
		git -C "$src" archive HEAD "examples/tasks/$t" | tar -x -C "$work"
	fi
done
grep -rl 'ubuntu:22.04\|python:3.12-slim' "$work/examples/tasks" | xargs -r sed -i 's/ubuntu:22.04/ubuntu:24.04/; s/python:3.12-slim/python:3.13-slim/'

python3 - "$work" "${tasks[@]}" <<'EOF'
import json, sys
work, tasks = sys.argv[1], sys.argv[2:]
reg = [{"name": "harbor-examples", "version": "0", "description": "Harbor's example tasks",
        "tasks": [{"name": t, "git_url": "", "git_commit_id": "", "path": "examples/tasks/" + t} for t in tasks]}]
json.dump(reg, open(work + "/registry.json", "w"), indent=1)
EOF
cat >"$work/run.toml" <<'EOF'
[experiment]
benchmark = "harbor-examples-0"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 2
max_retries = 0

[[agents]]
harness = "oracle"

[[agents]]
harness = "nop"
EOF

cleanup() { kill "${server:-}" "${registry:-}" 2>/dev/null || true; }
trap cleanup EXIT
"$root/bin/gauntlet" images serve --addr 127.0.0.1:5590 --write-settings "$work/settings.toml" >"$work/registry.log" 2>&1 &
registry=$!
until [[ -s $work/settings.toml ]]; do sleep 0.2; done
"$root/bin/gauntlet" local --data "$work/data" --addr 127.0.0.1:8590 --registry "$work/registry.json" \
	--agents-dir "$root/examples/agents" --runner "$root/bin/sandbox-runner" --sandbox bwrap \
	--image-settings "$work/settings.toml" >"$work/server.log" 2>&1 &
server=$!
export GAUNTLET_URL=http://127.0.0.1:8590
until [[ -s $work/data/token ]] && GAUNTLET_TOKEN=$(cat "$work/data/token") "$root/bin/gauntlet" benchmark list >/dev/null 2>&1; do sleep 0.5; done
export GAUNTLET_TOKEN
GAUNTLET_TOKEN=$(cat "$work/data/token")
"$root/bin/gauntlet" benchmark add harbor-examples@0 --wait
"$root/bin/gauntlet" benchmark info harbor-examples-0 --wait
"$root/bin/gauntlet" submit "$work/run.toml" --yes --watch
run=$("$root/bin/gauntlet" runs list --limit 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["id"])')
echo
echo "per task (reward, or why none):"
for f in "$work"/data/blobs/runs/"$run"/slots/*/*/1/g0/result.json; do
	python3 - "$f" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = (r.get("verifier_result") or {}).get("rewards")
e = ((r.get("exception_info") or {}).get("exception_message") or "")[:120]
print(f'  {r["agent_info"]["name"]:7} {r["task_name"]:32} {v if v is not None else "-"} {e}')
EOF
done
echo "(work dir: $work)"
