package pipeline_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

const oneOracle = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[[agents]]
harness = "oracle"
`

func TestSubmitRejectsBadInputAndWritesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.recs.Workspaces.PutBilling(e.ctx, "ws-past-due", records.Billing{Status: records.BillingPastDue}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		workspace string
		doc       string
		wantCodes []string
		wantField string
		wantIs    error
	}{
		{name: "invalid config", workspace: testWS, doc: oneOracle + "\n[execution]\nattempts_per_task = 0\nbogus = 1\n",
			wantCodes: []string{pipeline.CodeInvalidConfig, pipeline.CodeInvalidConfig}, wantField: "execution.attempts_per_task"},
		{name: "unknown task set", workspace: testWS, doc: `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "nope"
[[agents]]
harness = "oracle"
`, wantCodes: []string{pipeline.CodeInvalidConfig}, wantField: "tasks.task_set"},
		{name: "unknown benchmark", workspace: testWS, doc: `
[experiment]
benchmark = "no-such-bench"
[[agents]]
harness = "oracle"
`, wantCodes: []string{pipeline.CodeUnknownBenchmark}, wantField: "experiment.benchmark", wantIs: pipeline.ErrUnknownBenchmark},
		{name: "missing secret record", workspace: testWS, doc: oneOracle + `
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
`, wantCodes: []string{pipeline.CodeMissingSecret}, wantField: "agents[0].model.api_key_secret"},
		{name: "invalid billing", workspace: "ws-past-due", doc: oneOracle,
			wantCodes: []string{pipeline.CodeBillingRequired}, wantIs: pipeline.ErrBillingRequired},
		{name: "no billing and a missing secret", workspace: "ws-none", doc: oneOracle + "[agents.model]\ntype = \"provider\"\nmodel = \"x/y\"\napi_key_secret = \"KEY\"\n",
			wantCodes: []string{pipeline.CodeBillingRequired, pipeline.CodeMissingSecret}, wantIs: pipeline.ErrBillingRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, before, err := e.db.Stream().Read(e.ctx, "", 100000)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.svc.Submit(e.ctx, pipeline.SubmitRequest{Workspace: tt.workspace, User: testUser, Document: []byte(tt.doc)})
			var rej *pipeline.RejectedError
			if !errors.As(err, &rej) {
				t.Fatalf("Submit = %v, want a *RejectedError", err)
			}
			var codes []string
			fieldSeen := tt.wantField == ""
			for _, p := range rej.Problems {
				codes = append(codes, p.Code)
				if p.Message == "" {
					t.Errorf("problem %+v has no message", p)
				}
				fieldSeen = fieldSeen || p.Field == tt.wantField
			}
			if diff := cmp.Diff(tt.wantCodes, codes); diff != "" {
				t.Errorf("problem codes (-want +got):\n%s\nproblems: %+v", diff, rej.Problems)
			}
			if !fieldSeen {
				t.Errorf("no problem names field %q: %+v", tt.wantField, rej.Problems)
			}
			if !errors.Is(err, pipeline.ErrRejected) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Errorf("errors.Is(%v, ErrRejected / %v) = false", err, tt.wantIs)
			}
			if changes, _, err := e.db.Stream().Read(e.ctx, before, 100); err != nil || len(changes) != 0 {
				t.Errorf("a rejected submission wrote %d items (%v), want none", len(changes), err)
			}
			if msgs, _ := e.queues["plan"].Receive(e.ctx, 10, time.Second, 0); len(msgs) != 0 {
				t.Errorf("a rejected submission sent %d plan messages", len(msgs))
			}
		})
	}
}

func TestSubmitAcceptsSecretsAndIsIdempotent(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, ref := range []secret.Ref{{Workspace: testWS, Scope: secret.Personal, Owner: testUser, Name: "OPENAI_API_KEY"}} {
		if err := e.recs.Workspaces.PutSecretRecord(e.ctx, records.SecretRecord{Workspace: ref.Workspace, Scope: ref.Scope, Owner: ref.Owner, Name: ref.Name, SetBy: testUser}); err != nil {
			t.Fatal(err)
		}
	}
	doc := oneOracle + "[agents.model]\ntype = \"provider\"\nmodel = \"openai/gpt-5.2\"\napi_key_secret = \"OPENAI_API_KEY\"\n"
	req := pipeline.SubmitRequest{Workspace: testWS, User: testUser, Document: []byte(doc), IdempotencyKey: "key-1"}
	first, err := e.svc.Submit(e.ctx, req)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if first.Run.Status != run.Pending || len(first.Run.Tasks) != 3 || first.Replayed {
		t.Errorf("first submit = %s, %d tasks, replayed %v", first.Run.Status, len(first.Run.Tasks), first.Replayed)
	}
	if !slices.Equal(first.Agents[0].SecretNames, []string{"OPENAI_API_KEY"}) {
		t.Errorf("agent secret names = %v", first.Agents[0].SecretNames)
	}
	again, err := e.svc.Submit(e.ctx, req)
	if err != nil || !again.Replayed || again.Run.ID != first.Run.ID {
		t.Errorf("replayed submit = %s replayed=%v, %v; want run %s replayed", again.Run.ID, again.Replayed, err, first.Run.ID)
	}
	req.Document = []byte(oneOracle)
	if _, err := e.svc.Submit(e.ctx, req); !errors.Is(err, records.ErrConflict) {
		t.Errorf("same key, other request = %v, want ErrConflict", err)
	}
	if msgs, _ := e.queues["plan"].Receive(e.ctx, 10, time.Second, 0); len(msgs) != 1 {
		t.Errorf("%d plan messages, want 1", len(msgs))
	}
}
