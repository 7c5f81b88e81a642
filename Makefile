# gauntlet — make targets install what they need (Debian packages via apt-get,
# npm packages into ./node_modules, Go tools into ./bin).

SHELL := /bin/bash
export PATH := $(CURDIR)/bin:$(PATH)
export GOFLAGS ?= -mod=mod
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

GO ?= go
STATICCHECK_VERSION := v0.8.2
BIN := $(CURDIR)/bin

.PHONY: agents node-modules-guard all build test lint run stop deps tools bench clean lambdas synth deploy-local cdk-cli emulators-up emulators-down base-images prices run-deps fuzz buildkit

FUNCTIONS := api planner dispatcher grader ingester leaderboard registrysync watchdog

all: build

## run-deps: the Debian packages the local platform uses — bubblewrap
## (sandboxes), buildah (Dockerfile task images), mmdebstrap (the stand-in
## base images), slirp4netns (public-network sandboxes), e2fsprogs (each
## attempt's size-limited writable layer) and git (registry tasks).
RUN_APT := bubblewrap:bwrap buildah:buildah mmdebstrap:mmdebstrap slirp4netns:slirp4netns e2fsprogs:mkfs.ext4 git:git
## deps: run-deps plus what only the tests use — Java (DynamoDB Local),
## chromium (the console's browser test), tmux (terminus-2's tmux terminal),
## iproute2 (network namespaces of the sandbox network tests), uidmap and
## fuse-overlayfs (rootless sandboxes: subordinate ids, the FUSE overlay) —
## the project-local npm packages pinned in package-lock.json (the CDK CLI,
## emulators, playwright-core), which `make run` never needs, and the
## unprivileged account with subordinate ids the rootless sandbox tests run
## the runner as.
TEST_APT := $(RUN_APT) openjdk-17-jre-headless:java chromium:chromium tmux:tmux iproute2:ip uidmap:newuidmap fuse-overlayfs:fuse-overlayfs
ROOTLESS_ACCOUNT := gauntlet-rootless
ROOTLESS_IDS := 400000-465535
define apt_install
	@missing=""; for p in $(1); do command -v $${p#*:} >/dev/null 2>&1 || missing="$$missing $${p%%:*}"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (apt-get)"; \
		(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
endef
run-deps:
	$(call apt_install,$(RUN_APT))
deps:
	$(call apt_install,$(TEST_APT))
	@if [ "$$(id -u)" = 0 ]; then \
		id $(ROOTLESS_ACCOUNT) >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin $(ROOTLESS_ACCOUNT); \
		grep -q '^$(ROOTLESS_ACCOUNT):' /etc/subuid 2>/dev/null || usermod --add-subuids $(ROOTLESS_IDS) --add-subgids $(ROOTLESS_IDS) $(ROOTLESS_ACCOUNT); \
	fi
	@if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
		echo "installing npm packages (package-lock.json)"; npm ci --no-audit --no-fund --loglevel=error; \
	fi
	@$(MAKE) --no-print-directory node-modules-guard

# npm packages ship Go templates (aws-cdk's init templates); a go.mod marks
# node_modules as another module so ./... never descends into it.
node-modules-guard:
	@if [ -d node_modules ] && [ ! -f node_modules/go.mod ]; then printf 'module node_modules\n' > node_modules/go.mod; fi

tools: $(BIN)/staticcheck

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## build: every binary into ./bin; sandbox-runner and terminus-2 run inside
## the task's image, mounted read-only: static, no libc.
build:
	$(GO) build -o $(BIN)/ ./cmd/...
	# Static: image sandboxes run it inside the task's image (see docs/SANDBOX.md).
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/sandbox-runner
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/terminus-2 ./cmd/terminus-2

## agents: the agent bundles — codex, claude-code, gemini-cli and qwen-code
## (each with its Node), opencode, pinned in agents/package-lock.json — prepared once into
## ${GAUNTLET_CACHE:-~/.cache/gauntlet}/agents (≈ 1.35 GB; npm ci of the
## lock, then pruned). A second run, or CI's fresh clone with the same
## cache, reuses them. `make run` prepares codex alone.
agents: build
	$(BIN)/gauntlet agents install

## lint: gofmt, go vet, staticcheck.
lint: tools node-modules-guard
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './node_modules/*' -not -path './cdk.out/*' -not -path './build/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

## test: everything — lint, then every test (the AWS adapters' tests start
## DynamoDB Local and fauxqs through scripts/emulators.sh; stopped afterwards).
test: deps lint agents base-images
	@status=0; $(GO) test -count=1 -timeout 25m ./... || status=$$?; \
	scripts/emulators.sh down; exit $$status

emulators-up:
	scripts/emulators.sh up

emulators-down:
	scripts/emulators.sh down

## lambdas: one bootstrap per function for the provided.al2023 arm64 runtime.
lambdas:
	@for f in $(FUNCTIONS); do \
		echo "lambda $$f"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o build/lambda/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## run: the main job — `gauntlet local` running a real demo run (scripts/demo.sh);
## `make stop` stops the server it leaves running. bin/ is built here once
## (GAUNTLET_DEMO_BUILT tells the demo not to build it again).
run: run-deps build base-images
	GAUNTLET_DEMO_BUILT=1 scripts/demo.sh

stop:
	scripts/demo.sh stop

## prices: pkg/prices/genai-prices.json, and the sample of the package's own
## prices pkg/prices' test compares with, from npm @pydantic/genai-prices
## (pinned in tools/prices/package-lock.json).
prices:
	cd tools/prices && npm ci --no-audit --no-fund
	node tools/prices/generate.cjs
	node tools/prices/sample.cjs

cdk-cli:
	@[ -x node_modules/.bin/cdk ] || npm ci --no-audit --no-fund --loglevel=error
	@$(MAKE) --no-print-directory node-modules-guard

## synth: the CloudFormation templates into cdk.out/ (CDK CLI pinned in
## package.json), then cfn-lint over them: any error fails (warnings print).
synth: lambdas cdk-cli
	npx --no-install cdk synth --quiet
	cfn-lint --non-zero-exit-code error cdk.out/*.template.json

## deploy-local: the cloud deploy rehearsed on moto_server (loopback, no
## Docker, no AWS): cfn-lint, cdk bootstrap, cdk deploy --all of the dev
## stage, every resource CREATE_COMPLETE, then the data-plane wiring from
## moto's describe calls (infra/deploycheck). See docs/DEPLOY.md.
deploy-local: lambdas cdk-cli
	scripts/deploy-local.sh

## fuzz: every native fuzz target (parsers of outside input) for FUZZTIME
## each, one after the other; `make test` runs their seed corpora only.
## Minimization is capped (FUZZMINIMIZE) so new inputs do not stall the run.
FUZZTIME ?= 60s
FUZZMINIMIZE ?= 5s
FUZZ_TARGETS := \
	./pkg/runconfig:FuzzParse \
	./pkg/harbor:FuzzParseRegistry \
	./pkg/harbor:FuzzParseTaskConfig \
	./pkg/harbor:FuzzDecodeTrialResult \
	./pkg/harbor:FuzzParseReward \
	./pkg/score:FuzzReadJSONL \
	./pkg/api:FuzzRequestBodies \
	./pkg/runner:FuzzExtractTarGz \
	./pkg/image:FuzzApplyLayer
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
	done

## base-images: the Debian rootfs tarballs (mmdebstrap) that stand in for the
## upstream base images in tests and the demo, into
## $${GAUNTLET_CACHE:-~/.cache/gauntlet}/base; kept once built.
base-images:
	scripts/base-images.sh

## buildkit: moby/buildkit's buildkitd and buildctl (v0.26.2, built from the
## Go module) into $${GAUNTLET_CACHE:-~/.cache/gauntlet}/buildkit, kept once
## built; BenchmarkBuilders compares them with buildah and docker.
buildkit:
	scripts/buildkit.sh

## bench: the performance measurements reported in docs/BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

clean:
	rm -rf $(BIN) cdk.out
