package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// rejected submits doc and returns its problems, failing the test unless
// the submission was rejected without writing anything.
func (e *env) rejected(svc *pipeline.Service, doc string) []pipeline.Problem {
	e.t.Helper()
	_, before, err := e.db.Stream().Read(e.ctx, "", 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = svc.Submit(e.ctx, pipeline.SubmitRequest{Workspace: testWS, User: testUser, Document: []byte(doc)})
	var rej *pipeline.RejectedError
	if !errors.As(err, &rej) {
		e.t.Fatalf("Submit = %v, want a *RejectedError", err)
	}
	if changes, _, err := e.db.Stream().Read(e.ctx, before, 100); err != nil || len(changes) != 0 {
		e.t.Errorf("a rejected submission wrote %d items (%v), want none", len(changes), err)
	}
	return rej.Problems
}

func findProblem(problems []pipeline.Problem, code, field string) (pipeline.Problem, bool) {
	for _, p := range problems {
		if p.Code == code && p.Field == field {
			return p, true
		}
	}
	return pipeline.Problem{}, false
}

func TestSubmitAcceptsJudgeBenchmarks(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "essay", 60)
	for _, entry := range []benchmark.CatalogEntry{
		{Key: "judged", Name: "judged", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional,
			PassThreshold: 1, Judge: benchmark.Judge{Required: true, DefaultModel: "openai/gpt-5.2"}},
		{Key: "pinned", Name: "pinned", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional,
			PassThreshold: 1, Judge: benchmark.Judge{Required: true, DefaultModel: "anthropic/claude-haiku-4-5", ModelPinned: true}},
	} {
		if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.recs.Workspaces.PutSecretRecord(e.ctx, records.SecretRecord{Workspace: testWS, Scope: secret.Workspace, Name: "JUDGE_KEY", SetBy: testUser}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, doc, wantModel string
	}{
		{"default model", "[experiment]\nbenchmark = \"judged\"\n[execution]\njudge_api_key_secret = \"JUDGE_KEY\"\n[[agents]]\nharness = \"nop\"\n", "openai/gpt-5.2"},
		{"model chosen", "[experiment]\nbenchmark = \"judged\"\n[execution]\njudge_model = \"anthropic/claude-sonnet-4-5\"\njudge_api_key_secret = \"JUDGE_KEY\"\n[[agents]]\nharness = \"nop\"\n", "anthropic/claude-sonnet-4-5"},
		{"pinned grader", "[experiment]\nbenchmark = \"pinned\"\n[execution]\njudge_api_key_secret = \"JUDGE_KEY\"\n[[agents]]\nharness = \"nop\"\n", "anthropic/claude-haiku-4-5"},
	}
	for _, tt := range tests {
		r := e.submit(tt.doc)
		if r.Settings.JudgeModel != tt.wantModel || r.Settings.JudgeAPIKeySecret != "JUDGE_KEY" {
			t.Errorf("%s: settings judge = %q key %q, want %q key JUDGE_KEY", tt.name, r.Settings.JudgeModel, r.Settings.JudgeAPIKeySecret, tt.wantModel)
		}
		if slices.Contains(r.Settings.VerifierSecretNames, "JUDGE_KEY") {
			t.Errorf("%s: the judge key is among the verifier's secrets %v; it must reach only the gateway", tt.name, r.Settings.VerifierSecretNames)
		}
	}
	// The pinned grader still refuses a model, and a judge benchmark still
	// needs its key.
	problems := e.rejected(e.svc, "[experiment]\nbenchmark = \"pinned\"\n[execution]\njudge_model = \"openai/gpt-5.2\"\njudge_api_key_secret = \"JUDGE_KEY\"\n[[agents]]\nharness = \"nop\"\n")
	if _, ok := findProblem(problems, pipeline.CodeInvalidConfig, "execution.judge_model"); !ok {
		t.Errorf("pinned grader with a model: problems = %+v, want invalid_config on execution.judge_model", problems)
	}
	problems = e.rejected(e.svc, "[experiment]\nbenchmark = \"judged\"\n[[agents]]\nharness = \"nop\"\n")
	if _, ok := findProblem(problems, pipeline.CodeInvalidConfig, "execution.judge_api_key_secret"); !ok {
		t.Errorf("judge without key: problems = %+v, want invalid_config on execution.judge_api_key_secret", problems)
	}
}

func TestSubmitResolvesAKeyBeforeAName(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "mine", 60)
	// A workspace benchmark whose NAME is the managed benchmark's KEY.
	entry := benchmark.CatalogEntry{Key: "my-bench", Name: "demo-bench", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, testWS, entry, time.Now()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref, wantKey, wantSpace string
	}{
		{"demo-bench", "demo-bench", pipeline.PlatformWorkspace}, // the managed key wins over the workspace name
		{"my-bench", "my-bench", testWS},
	}
	for _, tt := range tests {
		r := e.submit("[experiment]\nbenchmark = \"" + tt.ref + "\"\n[[agents]]\nharness = \"nop\"\n")
		if r.Benchmark != tt.wantKey || r.ManifestWorkspace != tt.wantSpace {
			t.Errorf("benchmark %q resolved to %s in %s, want %s in %s", tt.ref, r.Benchmark, r.ManifestWorkspace, tt.wantKey, tt.wantSpace)
		}
	}
	// A name still resolves when no key matches.
	if _, err := e.recs.Benchmarks.UpdateSync(e.ctx, testWS, "my-bench", func(st *records.SyncState) error { b := &st.Benchmark; b.Name = "My Bench"; return nil }); err != nil {
		t.Fatal(err)
	}
	if r := e.submit("[experiment]\nbenchmark = \"My Bench\"\n[[agents]]\nharness = \"nop\"\n"); r.Benchmark != "my-bench" {
		t.Errorf("benchmark %q resolved to %s, want my-bench", "My Bench", r.Benchmark)
	}
}

func TestIdempotentReplaySurvivesLapsedBilling(t *testing.T) {
	e := newEnv(t, envOptions{})
	req := pipeline.SubmitRequest{Workspace: testWS, User: testUser, Document: []byte(oneOracle), IdempotencyKey: "k-1"}
	first, err := e.svc.Submit(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.recs.Workspaces.PutBilling(e.ctx, testWS, records.Billing{Status: records.BillingPastDue}); err != nil {
		t.Fatal(err)
	}
	again, err := e.svc.Submit(e.ctx, req)
	if err != nil || !again.Replayed || again.Run.ID != first.Run.ID {
		t.Errorf("replay after billing lapsed = %s replayed=%v, %v; want run %s replayed", again.Run.ID, again.Replayed, err, first.Run.ID)
	}
	req.IdempotencyKey = "k-2"
	if _, err := e.svc.Submit(e.ctx, req); !errors.Is(err, pipeline.ErrBillingRequired) {
		t.Errorf("a new submission with lapsed billing = %v, want ErrBillingRequired", err)
	}
}

// deleteBeforeTransact is the real table on which the first transaction is
// preceded by deleting an item, as a concurrent delete would.
type deleteBeforeTransact struct {
	store.Table
	pk, sk string
	once   sync.Once
}

func (d *deleteBeforeTransact) Transact(ctx context.Context, ops []store.Op) error {
	var err error
	d.once.Do(func() { err = d.Table.Delete(ctx, d.pk, d.sk, store.Cond{}) })
	if err != nil {
		return err
	}
	return d.Table.Transact(ctx, ops)
}

func TestSubmitRacingABenchmarkDeleteWritesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "mine", 60)
	entry := benchmark.CatalogEntry{Key: "doomed", Name: "doomed", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, testWS, entry, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The benchmark item's key, as records lays it out (WS#<ws> | BENCH#<key>).
	racing := e.withTable(&deleteBeforeTransact{Table: e.db.Table(), pk: "WS#" + testWS, sk: "BENCH#doomed"})
	_, err := racing.Submit(e.ctx, pipeline.SubmitRequest{Workspace: testWS, User: testUser,
		Document: []byte("[experiment]\nbenchmark = \"doomed\"\n[[agents]]\nharness = \"nop\"\n")})
	var rej *pipeline.RejectedError
	if !errors.As(err, &rej) || !errors.Is(err, pipeline.ErrUnknownBenchmark) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("Submit racing a delete = %v, want an unknown-benchmark rejection saying it was deleted", err)
	}
	if _, err := e.recs.Benchmarks.Benchmark(e.ctx, testWS, "doomed"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("the benchmark was not deleted (%v); the test raced nothing", err)
	}
	runs, _, err := e.recs.Runs.RunsByWorkspace(e.ctx, testWS, "", 10)
	if err != nil || len(runs) != 0 {
		t.Errorf("%d runs stored (%v), want none", len(runs), err)
	}
}

// TestSubmitRefusesVerifierOnManagedBenchmarks checks Osmosis's rule:
// [verifier] applies to registry datasets only, so on a managed benchmark
// it is refused before anything else about it is checked.
func TestSubmitRefusesVerifierOnManagedBenchmarks(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "graded", 60)
	entry := benchmark.CatalogEntry{Key: "secretive", Name: "secretive", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional,
		PassThreshold: 1, RequiredSecrets: []string{"GRADER_TOKEN"}}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.recs.Workspaces.PutSecretRecord(e.ctx, records.SecretRecord{Workspace: testWS, Scope: secret.Workspace, Name: "GRADER_TOKEN", SetBy: testUser}); err != nil {
		t.Fatal(err)
	}
	problems := e.rejected(e.svc, `
[experiment]
benchmark = "secretive"
[verifier]
env = { GRADER_TOKEN = "literal", OTHER = "fine" }
[[agents]]
harness = "nop"
`)
	want := []pipeline.Problem{{Code: pipeline.CodeInvalidConfig, Field: "verifier"}}
	if diff := cmp.Diff(want, problems, cmpopts.IgnoreFields(pipeline.Problem{}, "Message")); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(problems) == 1 && !strings.Contains(problems[0].Message, "registry datasets only") {
		t.Errorf("message %q does not say [verifier] is for registry datasets only", problems[0].Message)
	}
}
