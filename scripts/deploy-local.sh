#!/usr/bin/env bash
# deploy-local.sh — rehearse the cloud deploy against moto_server on loopback:
# cfn-lint over the synthesized templates (any error fails), `cdk bootstrap`
# and `cdk deploy --all` of the dev stage, every stack resource
# CREATE_COMPLETE, then the data-plane wiring checked from moto's own describe
# calls (go run ./infra/deploycheck). Needs what `make lambdas` builds, the
# project's npm packages (the pinned CDK CLI) and the preinstalled moto
# (moto_server) and cfn-lint; no Docker, no AWS account.
#
# The stack is synthesized with the context of an emulator deploy:
#   runnerImage, agentsImage       prebuilt image references (an image asset
#                                  needs Docker and `docker login`)
#   restrictDefaultSecurityGroup   false, and no console upload: the two
#                                  Lambda-backed custom resources, whose
#                                  functions moto cannot run without Docker
#   consoleHosting=false,          no CloudFront and no Cognito, which moto
#   consoleOrigin, jwtIssuer,      does not model (a reference to their
#   jwtAudience                    attributes fails its create or describe)
# (docs/DEPLOY.md, "Rehearsing the deploy on an emulator").
#
# MOTO_DEPLOY_PORT (default 4599) is moto's port; KEEP_MOTO=1 leaves it
# running afterwards (its pid in .emulators/deploy-local/moto.pid).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${MOTO_DEPLOY_PORT:-4599}
STATE=$PWD/.emulators/deploy-local
ACCOUNT=123456789012 # moto's account
REGION=us-east-1
RUNNER_IMAGE=$ACCOUNT.dkr.ecr.$REGION.amazonaws.com/gauntlet-runner:local
AGENTS_IMAGE=$ACCOUNT.dkr.ecr.$REGION.amazonaws.com/gauntlet-agents:local
CONSOLE_ORIGIN=http://localhost:8080
JWT_ISSUER=https://issuer.gauntlet.invalid JWT_AUDIENCE=gauntlet-local
CONTEXT=(-c stage=dev -c "runnerImage=$RUNNER_IMAGE" -c "agentsImage=$AGENTS_IMAGE"
	-c restrictDefaultSecurityGroup=false -c consoleHosting=false -c "consoleOrigin=$CONSOLE_ORIGIN"
	-c "jwtIssuer=$JWT_ISSUER" -c "jwtAudience=$JWT_AUDIENCE")

for tool in moto_server cfn-lint; do
	command -v "$tool" >/dev/null || { echo "deploy-local: $tool not found (preinstalled with moto 5.2.1 / cfn-lint on these machines; see shared TOOLING.md)" >&2; exit 1; }
done
mkdir -p "$STATE"

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

stop_moto() {
	if [ -f "$STATE/moto.pid" ]; then
		kill -- "-$(cat "$STATE/moto.pid")" 2>/dev/null || kill "$(cat "$STATE/moto.pid")" 2>/dev/null || true
		rm -f "$STATE/moto.pid"
		for ((i = 0; i < 100; i++)); do port_open || return 0; sleep 0.1; done
	fi
}

# A fresh emulator every time: a stack left by an earlier rehearsal would
# turn this create into an update.
stop_moto
step "moto_server on 127.0.0.1:$PORT"
if port_open; then
	echo "deploy-local: 127.0.0.1:$PORT is taken (an emulator not started by this script?); set MOTO_DEPLOY_PORT" >&2
	exit 1
fi
# The program itself, not pyenv's shim, so that the pid is moto's own.
MOTO=$(command -v moto_server)
if command -v pyenv >/dev/null && [[ $MOTO == */shims/* ]]; then MOTO=$(pyenv which moto_server); fi
setsid "$MOTO" -H 127.0.0.1 -p "$PORT" >"$STATE/moto.log" 2>&1 9>&- &
echo $! >"$STATE/moto.pid"
if [ "${KEEP_MOTO:-}" != 1 ]; then trap stop_moto EXIT; fi
for ((i = 0; i < 300; i++)); do
	if port_open; then break; fi
	kill -0 "$(cat "$STATE/moto.pid")" 2>/dev/null || { echo "deploy-local: moto_server exited; see $STATE/moto.log" >&2; exit 1; }
	sleep 0.1
done
port_open || { echo "deploy-local: moto_server did not open 127.0.0.1:$PORT in 30 s" >&2; exit 1; }

# localhost, not 127.0.0.1: moto reads the bucket of a template URL from its host.
export AWS_ENDPOINT_URL=http://localhost:$PORT AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	AWS_REGION=$REGION AWS_DEFAULT_REGION=$REGION CDK_DEFAULT_ACCOUNT=$ACCOUNT CDK_DEFAULT_REGION=$REGION
unset AWS_PROFILE AWS_SESSION_TOKEN
CDK=(npx --no-install cdk --no-notices --no-version-reporting)

# The lookups of an environment-bound synth (the region's availability
# zones) are cached in cdk.context.json; moto's belong to no real account.
[ -e cdk.context.json ] || trap 'rm -f cdk.context.json; [ "${KEEP_MOTO:-}" = 1 ] || stop_moto' EXIT

# Bootstrap first: it runs the app too (without this context) into cdk.out.
step "cdk bootstrap aws://$ACCOUNT/$REGION"
"${CDK[@]}" bootstrap "aws://$ACCOUNT/$REGION" "${CONTEXT[@]}"

step "cdk synth"
rm -rf cdk.out
"${CDK[@]}" synth --quiet "${CONTEXT[@]}"

step "cfn-lint cdk.out (errors fail; warnings are printed)"
cfn-lint --non-zero-exit-code error cdk.out/*.template.json

step "cdk deploy --all"
start=$SECONDS
# --method=direct: CreateStack rather than a change set; moto 5.2.1 gives a
# stack created from a change set no outputs and no exports.
"${CDK[@]}" deploy --app cdk.out --all --require-approval never --progress events --method=direct
echo "deployed in $((SECONDS - start)) s"

step "every resource CREATE_COMPLETE, the data-plane wiring (moto's describe calls)"
go run ./infra/deploycheck -stage dev -runner-image "$RUNNER_IMAGE" -agents-image "$AGENTS_IMAGE" \
	-console-origin "$CONSOLE_ORIGIN" -jwt-issuer "$JWT_ISSUER" -jwt-audience "$JWT_AUDIENCE"
