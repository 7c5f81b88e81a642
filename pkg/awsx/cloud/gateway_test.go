package cloud_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

const (
	hostedGatewayConfig = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napis = [\"openai-chat\"]\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"
	hostedKeySecretARN  = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gauntlet/hosted-key-AbCdEf"
	hostedRunConfig     = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_names = ["csv-summary"]
[[agents]]
harness = "terminus-2"
model = { type = "hosted", base_model = "Qwen/Qwen3-8B", lora_model_name = "step-400" }
`
)

// TestSubmitHostedModelWithTheOperatorGatewayConfig submits a hosted model
// through the API function's submit stage, built from the environment the
// stack sets: accepted with the operator's gateway config (which hosts
// models), refused at the model's type without it.
func TestSubmitHostedModelWithTheOperatorGatewayConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string
		wantErr string
	}{
		{name: "with the operator's config", config: hostedGatewayConfig},
		{name: "without it", wantErr: "this platform hosts no models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := map[string]string{cloud.EnvStage: "test", cloud.EnvTable: "t", cloud.EnvPlanQueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/plan"}
			if tc.config != "" {
				env[cloud.EnvModelGatewayConfig] = tc.config
			}
			cfg, err := cloud.Load(cloud.Needs{Plan: true, ModelGateway: cloud.API.ModelGateway}, cloudGetenv(env))
			if err != nil {
				t.Fatal(err)
			}
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			plan, err := db.Queue("plan", sqlite.QueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p := &cloud.Platform{Config: cfg, Logger: discard, Ports: pipeline.Ports{Table: db.Table(), Plan: plan}}
			sub, err := p.Submitter()
			if err != nil {
				t.Fatal(err)
			}
			importDemoBench(t, ctx, records.New(db.Table()))
			if got, want := sub.Offers().HostsModels, tc.config != ""; got != want {
				t.Errorf("Offers().HostsModels = %v, want %v", got, want)
			}
			rc, err := runconfig.Parse([]byte(hostedRunConfig))
			if err != nil {
				t.Fatal(err)
			}
			_, err = sub.Submit(ctx, pipeline.SubmitRequest{Workspace: e2eWS, User: e2eUser, Config: rc})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Submit of a hosted model with the operator's config: %v", err)
				}
				return
			}
			var rejected *pipeline.RejectedError
			if !errors.As(err, &rejected) || len(rejected.Problems) != 1 || rejected.Problems[0].Field != "agents[0].model.type" ||
				!strings.Contains(rejected.Problems[0].Message, tc.wantErr) {
				t.Fatalf("Submit without the config = %v, want one problem at agents[0].model.type: %s", err, tc.wantErr)
			}
		})
	}
}

// TestLoadModelGateway: the functions that read the model gateway setting
// get the config; the dispatcher also what its sandbox tasks get (the config
// and the hosted key's secret under the variable api_key_env names); a bad
// config, a key file (no task has one) or a secret without api_key_env
// fails the cold start naming the variable.
func TestLoadModelGateway(t *testing.T) {
	base := stackEnv()
	base[cloud.EnvModelGatewayConfig] = hostedGatewayConfig
	base[cloud.EnvModelGatewayKeySecret] = hostedKeySecretARN
	cfg, err := cloud.Load(cloud.Dispatcher, cloudGetenv(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelGateway != hostedGatewayConfig || cfg.Sandbox.ModelGatewayConfig != hostedGatewayConfig {
		t.Errorf("dispatcher config: ModelGateway %q, Sandbox.ModelGatewayConfig %q; want the operator's TOML", cfg.ModelGateway, cfg.Sandbox.ModelGatewayConfig)
	}
	if diff := cmp.Diff(map[string]string{"GAUNTLET_GATEWAY_KEY_HOSTED": hostedKeySecretARN}, cfg.Sandbox.ModelGatewaySecrets); diff != "" {
		t.Errorf("Sandbox.ModelGatewaySecrets (-want +got):\n%s", diff)
	}
	if cfg, err := cloud.Load(cloud.Grader, cloudGetenv(base)); err != nil || cfg.ModelGateway != "" {
		t.Errorf("grader (reads no model gateway setting): ModelGateway %q, %v; want none", cfg.ModelGateway, err)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit map[string]string
		want string
	}{
		{"malformed config", map[string]string{cloud.EnvModelGatewayConfig: "[hosted]\nbase_url = \"nope\"\n"}, "GAUNTLET_MODEL_GATEWAY_CONFIG: model gateway config: hosted.base_url"},
		{"key file", map[string]string{cloud.EnvModelGatewayConfig: "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_file = \"" + keyFile + "\"\n",
			cloud.EnvModelGatewayKeySecret: ""}, "hosted.api_key_file: a sandbox task has no operator files"},
		{"api_key_env without its secret", map[string]string{cloud.EnvModelGatewayKeySecret: ""}, "GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN is not set"},
		{"secret without api_key_env", map[string]string{cloud.EnvModelGatewayConfig: "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\n"}, "names no hosted.api_key_env"},
	} {
		env := without(base)
		for k, v := range tc.edit {
			env[k] = v
		}
		if _, err := cloud.Load(cloud.Dispatcher, cloudGetenv(env)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func cloudGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// importDemoBench makes examples/demo-bench the managed benchmark demo-bench
// and activates e2eWS's billing, so a submission of it can be accepted.
func importDemoBench(t *testing.T, ctx context.Context, recs *records.Store) {
	t.Helper()
	const path = "../../../examples/catalog.toml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, path)
	if err != nil {
		t.Fatal(err)
	}
	entry, ok := cat.Lookup("demo-bench")
	if !ok {
		t.Fatal("catalog has no demo-bench")
	}
	if _, err := pipelinetest.ImportCatalogEntry(ctx, recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		t.Fatalf("import demo-bench: %v", err)
	}
	if err := recs.Workspaces.PutBilling(ctx, e2eWS, records.Billing{Status: records.BillingActive, Plan: "team"}); err != nil {
		t.Fatal(err)
	}
}
