package runner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/prices"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// The real pinned agent programs, run from their prepared bundles in
// bubblewrap sandboxes on the Debian base image (internal/testrootfs; codex
// also on the host's root filesystem, the development mode; every bundle in
// every image of agents_matrix_test.go), talking to
// the scripted mock model only through the model gateway. All seven
// programs run by default (make test);
// GAUNTLET_AGENT_E2E=quick runs codex and claude-code only.

const (
	// modelKey is the "real" key: the mock accepts only it, so an answered
	// call proves the gateway swapped it in; no sandbox may ever see it.
	modelKey = "sk-mock-REAL-key-0123456789abcdef"
	// otherSecret is an agent secret of the run ([secrets]).
	otherSecret = "other-secret-value-fedcba9876543210"
	mockModel   = "mock/gpt-5"
	// probe solves the fixture task and records what the agent's tool
	// process sees: its environment and every process's in the sandbox.
	probe = `echo gauntlet > /app/answer.txt && env > /logs/agent/probe-env.txt && ` +
		`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f"; echo; done > /logs/agent/probe-proc.txt 2>/dev/null; true`
)

var mockUsage = modelmock.Usage{Input: 1234, Cached: 1000, Output: 56, Reasoning: 7}

func e2eHarnesses() []string {
	if os.Getenv("GAUNTLET_AGENT_E2E") == "quick" {
		return []string{"codex", "claude-code"}
	}
	return []string{"codex", "claude-code", "gemini-cli", "opencode", "copilot-cli", "cline", "qwen-code"}
}

// requireBundle fails (never skips) when the harness's bundle is not
// prepared.
func requireBundle(t *testing.T, name string) {
	t.Helper()
	h, _ := harness.Lookup(name)
	if _, err := (agentbundle.Cache{}).Path(h); err != nil {
		t.Fatalf("%v\n(prepare the bundles with `make agents`)", err)
	}
}

// mockProvider routes provider "mock" to the mock for every wire API, at
// OpenAI's prices.
func mockProvider(t testing.TB, url string) *gateway.Resolver {
	t.Helper()
	r, err := gateway.ParseOperatorConfig([]byte(fmt.Sprintf(`[providers.mock]
base_urls = { openai-responses = "%[1]s/v1", openai-chat = "%[1]s/v1", anthropic-messages = "%[1]s/v1", gemini = "%[1]s/v1beta" }
prices = "openai"
`, url)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func agentSpec(t testing.TB, name string) sandbox.Spec {
	h, _ := harness.Lookup(name)
	spec := baseSpec(t, name)
	spec.Model = mockModel
	// The fixture task's 256 MB would kill the Node and Bun programs
	// (opencode is SIGKILLed by the memory cgroup); real tasks give 2 GB+.
	spec.MemoryMB = 2048
	// gemini-cli and opencode start in 2–5 s on an idle machine; a busy
	// one (two cores shared by many) takes several times that.
	// A shared machine at a load average of 25–30 (seen 2026-12-03) took
	// opencode 70–117 s for two turns, and over 2 minutes once.
	spec.AgentTimeout = 5 * time.Minute
	spec.Secrets = map[string]secret.Value{h.KeyEnv: modelKey, "MOCK_API_KEY": modelKey, "OTHER_SECRET": otherSecret}
	return spec
}

// Sandboxes the e2e tests run the programs in.
const (
	inImage = "image" // the Debian base image
	onHost  = "host"  // the host's root filesystem (bwrap-host)
)

func runAgentTrial(t *testing.T, spec sandbox.Spec, mock *modelmock.Server, where string) (trialRun, string) {
	t.Helper()
	return runAgentTrialWith(t, spec, mockProvider(t, mock.URL), where)
}

// runAgentTrialWith runs spec with the gateway routing models through models.
func runAgentTrialWith(t *testing.T, spec sandbox.Spec, models *gateway.Resolver, where string) (trialRun, string) {
	t.Helper()
	requireBwrap(t)
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: models,
		Forwarder: runnerBinary, SelfPath: runnerBinary, Isolation: IsolationHostBwrap}
	if h, _ := harness.Lookup(spec.Harness); h.Run != "" && strings.HasPrefix(h.Run, harness.StaticBinDir+"/") {
		// The platform's own program (terminus-2): built, not bundled.
		opts.StaticBinDir = staticBinDir(t)
	} else {
		requireBundle(t, spec.Harness)
	}
	var token string
	onGatewayToken(t, opts.WorkDir, func(tok string) { token = tok })
	if where == inImage {
		img := testImage(t)
		opts.Image, opts.Isolation = &img, IsolationBwrap
	}
	tr, err := run(context.Background(), spec, opts, harness.All())
	if err != nil {
		t.Fatalf("Run(%s): %v", spec.Harness, err)
	}
	if where == inImage {
		assertNoMountsUnder(t, dir)
	}
	if token == "" {
		t.Fatal("no gateway started")
	}
	return trialRun{result: tr, out: opts.OutDir}, token
}

// gatewayTokens are the tests' hooks of testHookGatewayToken, by the
// attempt's work dir: parallel tests each hear of their own attempt.
var gatewayTokens sync.Map

func init() {
	testHookGatewayToken = func(work, token string) {
		if f, ok := gatewayTokens.Load(work); ok {
			f.(func(string))(token)
		}
	}
}

// onGatewayToken calls f with the gateway token of the attempt whose work
// dir is work, for the rest of the test.
func onGatewayToken(t testing.TB, work string, f func(token string)) {
	gatewayTokens.Store(work, f)
	t.Cleanup(func() { gatewayTokens.Delete(work) })
}

var staticBin struct {
	once sync.Once
	dir  string
	err  error
}

// staticBinDir is a directory holding the platform's static helper
// programs (cmd/terminus-2), built once per test binary as make build
// builds them, for Options.StaticBinDir.
func staticBinDir(t testing.TB) string {
	t.Helper()
	staticBin.once.Do(func() {
		dir := filepath.Join(filepath.Dir(runnerBinary), "static-bin")
		if staticBin.err = os.MkdirAll(dir, 0o755); staticBin.err != nil {
			return
		}
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "terminus-2"), "github.com/gauntlet-bench/gauntlet/cmd/terminus-2")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			staticBin.err = fmt.Errorf("build terminus-2: %w\n%s", err, out)
		}
		staticBin.dir = dir
	})
	if staticBin.err != nil {
		t.Fatal(staticBin.err)
	}
	return staticBin.dir
}

// sandboxOf is where a harness's e2e tests run: the Debian minbase image
// (TestAgentMatrix runs every bundle in every test image).
func sandboxOf(string) string {
	return inImage
}

// e2eCases are the harness × sandbox pairs the e2e tests run.
func e2eCases() [][2]string {
	cases := [][2]string{{"codex", onHost}}
	for _, h := range e2eHarnesses() {
		cases = append(cases, [2]string{h, sandboxOf(h)})
	}
	return cases
}

func TestAgentsSolveTheTaskThroughTheGateway(t *testing.T) {
	for _, c := range e2eCases() {
		name, where := c[0], c[1]
		t.Run(name+"/"+where, func(t *testing.T) {
			t.Parallel() // independent attempts: own mock, work dir, cgroups and network
			mock := modelmock.NewServer(modelmock.Script{
				APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
				Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: probe, Description: "solve"}}, {Text: "Done: the task is solved."}},
			})
			defer mock.Close()
			r, token := runAgentTrial(t, agentSpec(t, name), mock, where)
			tr := r.result
			if tr.ExceptionInfo != nil {
				t.Errorf("exception %+v\nstdout:\n%s\nrunner log:\n%s", tr.ExceptionInfo, r.artifact(t, "agent/stdout.txt"), r.artifact(t, RunnerLogFile))
			}
			if got := rewardOf(t, tr); got != 1 {
				t.Fatalf("reward = %v, want 1\nstdout:\n%s\nstderr:\n%s", got, r.artifact(t, "agent/stdout.txt"), r.artifact(t, "agent/stderr.txt"))
			}
			h, _ := harness.Lookup(name)
			if tr.AgentInfo.Name != name || tr.AgentInfo.Version != h.Version {
				t.Errorf("agent_info = %+v, want %s %s", tr.AgentInfo, name, h.Version)
			}
			checkTokensAndCost(t, tr, mock)
			checkTrajectory(t, r, h)
			checkSandboxSawOnlyTheToken(t, r, h)
			checkStoredTextHoldsNoSecret(t, r.out, token)
		})
	}
}

// checkTokensAndCost: the recorded tokens are what the mock sent, summed
// over the calls it answered, and the cost is the price table's.
func checkTokensAndCost(t *testing.T, tr harbor.TrialResult, mock *modelmock.Server) {
	t.Helper()
	answered := 0
	for _, req := range mock.Handler.Requests() {
		if req.Status == 200 {
			answered++
		}
	}
	n := int64(answered)
	ar := tr.AgentResult
	if ar == nil || ar.NInputTokens == nil || ar.NCacheTokens == nil || ar.NOutputTokens == nil {
		t.Fatalf("agent_result = %+v, want tokens", ar)
	}
	if got, want := []int{*ar.NInputTokens, *ar.NCacheTokens, *ar.NOutputTokens}, []int{int(n * 1234), int(n * 1000), int(n * 56)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tokens (input, cached, output) = %v, want %v (%d calls answered)", got, want, n)
	}
	per, _, ok := prices.Price("openai", "gpt-5", prices.Usage{Input: 1234, CacheRead: 1000, Output: 56, Reasoning: 7})
	if !ok {
		t.Fatal("the price table has no openai gpt-5")
	}
	if ar.CostUSD == nil || math.Abs(*ar.CostUSD-float64(n)*per) > 1e-9 {
		t.Errorf("cost = %v, want %d × %v from the price table", ar.CostUSD, n, per)
	}
	if est, _ := ar.Metadata["cost_estimated"].(bool); !est {
		t.Errorf("metadata = %v, want cost_estimated true", ar.Metadata)
	}
}

func checkTrajectory(t *testing.T, r trialRun, h harness.Harness) {
	t.Helper()
	var tr atif.Trajectory
	if err := json.Unmarshal([]byte(r.artifact(t, "agent/"+atif.FileName)), &tr); err != nil {
		t.Fatal(err)
	}
	if err := atif.Validate(tr); err != nil {
		t.Errorf("trajectory does not validate: %v", err)
	}
	found := false
	for _, s := range tr.Steps {
		for _, c := range s.ToolCalls {
			found = found || strings.Contains(string(c.Arguments), "answer.txt")
		}
	}
	if !found {
		t.Errorf("trajectory holds no tool call writing answer.txt: %+v", tr.Steps)
	}
	if tr.Agent.Name != h.Name || tr.Agent.Version != h.Version {
		t.Errorf("trajectory agent = %+v", tr.Agent)
	}
	// The trajectory's totals and result.json agree on tokens, also where
	// the agent's log misses a call (opencode's session-title call).
	if ar, fm := r.result.AgentResult, tr.FinalMetrics; ar == nil || fm == nil || ar.NInputTokens == nil ||
		int64(*ar.NInputTokens) != fm.TotalPromptTokens || int64(*ar.NCacheTokens) != fm.TotalCachedTokens ||
		int64(*ar.NOutputTokens) != fm.TotalCompletionTokens {
		t.Errorf("trajectory totals %+v differ from result.json's agent_result (input, cache, output) %s", fm, tokensOf(ar))
	}
	if log := r.artifact(t, RunnerLogFile); !strings.Contains(log, "trajectory matches the gateway's record") && h.Name != "opencode" {
		t.Errorf("the runner did not confirm the trajectory against the gateway's record:\n%s", log)
	}
	native := filepath.Join(r.out, ArtifactsDir, "agent", nativeLogDir)
	if entries, err := os.ReadDir(native); err != nil || len(entries) == 0 {
		t.Errorf("native log not kept under artifacts/agent/native: %v", err)
	}
}

// checkSandboxSawOnlyTheToken: the tool's environment and every process's
// environment and command line in the sandbox hold the gateway token under
// the harness's key variable, never the key. The probe's files are read as
// collected (redacted): each secret value the runner handed out reads
// [redacted:NAME] there, so the names say which values were seen — the
// token, the other secret, and never a name holding the model key.
func checkSandboxSawOnlyTheToken(t *testing.T, r trialRun, h harness.Harness) {
	t.Helper()
	env := r.artifact(t, "agent/probe-env.txt")
	proc := r.artifact(t, "agent/probe-proc.txt")
	// The program's own environment (in /proc) holds the token; its tool's
	// too, unless the program scrubs its key from what its tools inherit
	// (copilot-cli does).
	if want := h.KeyEnv + "=[redacted:" + gatewayTokenName + "]"; !strings.Contains(env, want) && !strings.Contains(proc, want) {
		t.Errorf("the agent's %s is not the gateway token:\n%s", h.KeyEnv, env)
	}
	for what, data := range map[string]string{"env": env, "/proc": proc} {
		for _, name := range []string{h.KeyEnv, "MOCK_API_KEY"} {
			if strings.Contains(data, "[redacted:"+name+"]") {
				t.Errorf("the model key (secret %s) is visible in the sandbox's %s", name, what)
			}
		}
		if strings.Contains(data, modelKey) {
			t.Errorf("the model key is visible, unredacted, in the sandbox's %s", what)
		}
	}
	if !strings.Contains(proc, "OTHER_SECRET=[redacted:OTHER_SECRET]") {
		t.Errorf("the run's other secret did not reach the agent (its /proc probe: %d bytes)", len(proc))
	}
}

// checkStoredTextHoldsNoSecret searches everything the runner stored for
// every secret value — the model key, the gateway token, the other secret —
// raw, base64 and hex, inside gzip files too.
func checkStoredTextHoldsNoSecret(t *testing.T, out, token string) {
	t.Helper()
	searchStored(t, out, []string{modelKey, otherSecret, token})
}

// searchStored fails for each stored file holding one of values raw,
// base64 or hex (inside gzip files too).
func searchStored(t *testing.T, out string, values []string) {
	t.Helper()
	var forms []string
	for _, v := range values {
		forms = append(forms, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v)))
	}
	files := 0
	_ = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		files++
		data, _ := os.ReadFile(path)
		if strings.HasSuffix(path, ".gz") {
			if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
				data, _ = io.ReadAll(zr)
			}
		}
		for i, f := range forms {
			if strings.Contains(string(data), f) {
				t.Errorf("%s holds secret %d in form %d", strings.TrimPrefix(path, out), i/4, i%4)
			}
		}
		return nil
	})
	if files < 5 {
		t.Errorf("only %d stored files searched", files)
	}
}

func TestAgentAuthFailureIsTheAgentsAuthError(t *testing.T) {
	for _, name := range e2eHarnesses() {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent attempts: own mock, work dir, cgroups and network
			// The mock wants another key than the one the run holds.
			mock := modelmock.NewServer(modelmock.Script{APIKey: "sk-some-other-key-000000", Usage: mockUsage,
				Turns: []modelmock.Turn{{Text: "never"}}})
			defer mock.Close()
			r, _ := runAgentTrial(t, agentSpec(t, name), mock, sandboxOf(name))
			e := r.result.ExceptionInfo
			if e == nil || e.ExceptionType != harbor.ExceptionModelAuth || !strings.HasPrefix(e.ExceptionMessage, "auth:") {
				t.Fatalf("exception = %+v, want %s (auth)", e, harbor.ExceptionModelAuth)
			}
			if r.result.VerifierResult == nil {
				t.Error("the verifier did not run after the agent's model error")
			}
		})
	}
}

func TestAgentDeadEndpointEndsAtTheAgentTimeout(t *testing.T) {
	// codex never exits on an endpoint that does not answer: the agent
	// timeout must end it, and the verifier still runs.
	mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Failure: &modelmock.Failure{Hang: true}})
	defer mock.Close()
	spec := agentSpec(t, "codex")
	spec.AgentTimeout = 4 * time.Second
	r, _ := runAgentTrial(t, spec, mock, inImage)
	if e := r.result.ExceptionInfo; e == nil || e.ExceptionType != harbor.ExceptionAgentTimeout {
		t.Fatalf("exception = %+v, want %s", e, harbor.ExceptionAgentTimeout)
	}
	if r.result.VerifierResult == nil {
		t.Error("the verifier did not run after the agent timeout")
	}
}

func TestAgentMissingBundleIsAnInfraError(t *testing.T) {
	requireBwrap(t)
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"),
		AgentBundles: t.TempDir(), Models: mockProvider(t, mock.URL), Isolation: IsolationHostBwrap}
	_, err := run(context.Background(), agentSpec(t, "codex"), opts, harness.All())
	if err == nil || !strings.Contains(err.Error(), "gauntlet agents install codex") {
		t.Fatalf("Run with no bundle = %v, want an error saying how to prepare it", err)
	}
}

func TestAgentBundleThatCannotRunIsAnInfraError(t *testing.T) {
	// A bundle whose lib/ lacks a library its program links (here an
	// operator's --installed-agent-dir copy of gemini-cli's without
	// libatomic): the attempt cannot start, the platform's fault (retried),
	// not the agent's — even though the image has a libatomic of its own
	// (the host's root), which a bundle never reads.
	requireBwrap(t)
	requireBundle(t, "gemini-cli")
	h, _ := harness.Lookup("gemini-cli")
	full, err := (agentbundle.Cache{}).Path(h)
	if err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := filepath.WalkDir(full, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(full, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(broken, rel), 0o755)
		}
		if rel == "lib/libatomic.so.1" {
			return nil
		}
		return os.Link(path, filepath.Join(broken, rel))
	}); err != nil {
		t.Fatal(err)
	}
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: mockProvider(t, mock.URL),
		Forwarder: runnerBinary, SelfPath: runnerBinary, Isolation: IsolationHostBwrap, InstalledAgentDir: broken}
	_, err = run(context.Background(), agentSpec(t, "gemini-cli"), opts, harness.All())
	if !errors.Is(err, agentbundle.ErrUnrunnable) || !strings.Contains(err.Error(), "node needs libatomic.so.1") {
		t.Fatalf("Run(gemini-cli without its bundle's libatomic) = %v, want ErrUnrunnable naming libatomic", err)
	}
	if len(mock.Handler.Requests()) != 0 {
		t.Error("the model was called although the bundle cannot run")
	}
	assertNoMountsUnder(t, dir)
}

func tokensOf(ar *harbor.AgentResult) string {
	if ar == nil {
		return "none"
	}
	n := func(p *int) string {
		if p == nil {
			return "null"
		}
		return strconv.Itoa(*p)
	}
	return n(ar.NInputTokens) + ", " + n(ar.NCacheTokens) + ", " + n(ar.NOutputTokens)
}
