package cloud_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
)

// stackEnv is what the CDK stack sets for a function wiring every port.
func stackEnv() map[string]string {
	return map[string]string{
		"GAUNTLET_STAGE": "dev", "GAUNTLET_TABLE": "gauntlet-dev-Table",
		"GAUNTLET_PLAN_QUEUE_URL":        "https://sqs.us-east-1.amazonaws.com/111122223333/plan",
		"GAUNTLET_SLOTS_QUEUE_URL":       "https://sqs.us-east-1.amazonaws.com/111122223333/slots",
		"GAUNTLET_COMPLETIONS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/111122223333/completions",
		"GAUNTLET_RESULTS_QUEUE_URL":     "https://sqs.us-east-1.amazonaws.com/111122223333/results",
		"GAUNTLET_SYNC_QUEUE_URL":        "https://sqs.us-east-1.amazonaws.com/111122223333/sync",
		"GAUNTLET_BUCKET":                "gauntlet-dev-artifacts", "GAUNTLET_SECRETS_PREFIX": "gauntlet/dev/",
		"GAUNTLET_SECRETS_KMS_KEY": "arn:aws:kms:us-east-1:111122223333:key/k1",
		"GAUNTLET_CLUSTER":         "arn:aws:ecs:us-east-1:111122223333:cluster/sandboxes",
		"GAUNTLET_SUBNETS":         "subnet-a, subnet-b", "GAUNTLET_SECURITY_GROUPS": "sg-1",
		"GAUNTLET_SANDBOX_TASK_ROLE_ARN":      "arn:aws:iam::111122223333:role/task",
		"GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN": "arn:aws:iam::111122223333:role/exec",
		"GAUNTLET_SANDBOX_LOG_GROUP":          "/gauntlet/dev/sandboxes", "GAUNTLET_SANDBOX_TASK_FAMILY": "gauntlet-dev-sandbox",
		"GAUNTLET_RUNNER_IMAGE":    "111122223333.dkr.ecr.us-east-1.amazonaws.com/runner:1",
		"GAUNTLET_SANDBOX_KMS_KEY": "arn:aws:kms:us-east-1:111122223333:key/sandbox",
		"GAUNTLET_SANDBOX_MIRRORS": "docker.io=111122223333.dkr.ecr.us-east-1.amazonaws.com/docker-hub, ghcr.io=111122223333.dkr.ecr.us-east-1.amazonaws.com/ghcr",
		"GAUNTLET_JWT_ISSUER":      "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Abc", "GAUNTLET_JWT_AUDIENCE": "client-1",
		"GAUNTLET_MAX_SANDBOXES": "25", "LOG_LEVEL": "warn", "GAUNTLET_REGISTRY": "https://registry.example/registry.json",
		"GAUNTLET_IMAGE_BUILD_PROJECT": "gauntlet-dev-images", "GAUNTLET_TASK_IMAGES_REPOSITORY": "gauntlet-dev-task-images",
		"GAUNTLET_TASK_IMAGES_REPOSITORY_URI": "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-dev-task-images",
	}
}

func without(env map[string]string, names ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func TestLoad(t *testing.T) {
	full := stackEnv()
	sandboxCfg := ecssandbox.Config{
		Cluster: full["GAUNTLET_CLUSTER"], Subnets: []string{"subnet-a", "subnet-b"}, SecurityGroups: []string{"sg-1"},
		TaskRoleARN: full["GAUNTLET_SANDBOX_TASK_ROLE_ARN"], ExecutionRoleARN: full["GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN"],
		LogGroup: "/gauntlet/dev/sandboxes", RunnerImage: full["GAUNTLET_RUNNER_IMAGE"], Family: "gauntlet-dev-sandbox",
		Mirrors: map[string]string{
			"docker.io": "111122223333.dkr.ecr.us-east-1.amazonaws.com/docker-hub",
			"ghcr.io":   "111122223333.dkr.ecr.us-east-1.amazonaws.com/ghcr",
		},
	}
	tests := []struct {
		name    string
		needs   cloud.Needs
		env     map[string]string
		want    cloud.Config
		wantErr []string
	}{
		{name: "leaderboard reads only the table", needs: cloud.Leaderboard,
			env:  map[string]string{"GAUNTLET_STAGE": "dev", "GAUNTLET_TABLE": "t"},
			want: cloud.Config{Stage: "dev", Table: "t", LogLevel: slog.LevelInfo}},
		{name: "dispatcher", needs: cloud.Dispatcher, env: full, want: cloud.Config{
			Stage: "dev", Table: "gauntlet-dev-Table", SlotsQueueURL: full["GAUNTLET_SLOTS_QUEUE_URL"],
			CompletionsQueueURL: full["GAUNTLET_COMPLETIONS_QUEUE_URL"], ResultsQueueURL: full["GAUNTLET_RESULTS_QUEUE_URL"], Bucket: "gauntlet-dev-artifacts",
			SecretsPrefix: "gauntlet/dev/", SecretsKMSKey: full["GAUNTLET_SECRETS_KMS_KEY"], Sandbox: func() ecssandbox.Config {
				c := sandboxCfg
				c.KMSKey = full["GAUNTLET_SANDBOX_KMS_KEY"]
				return c
			}(),
			MaxSandboxes: 25, LogLevel: slog.LevelWarn}},
		{name: "api", needs: cloud.API, env: full, want: cloud.Config{
			Stage: "dev", Table: "gauntlet-dev-Table", PlanQueueURL: full["GAUNTLET_PLAN_QUEUE_URL"],
			SyncQueueURL: full["GAUNTLET_SYNC_QUEUE_URL"], Bucket: "gauntlet-dev-artifacts",
			SecretsPrefix: "gauntlet/dev/", SecretsKMSKey: full["GAUNTLET_SECRETS_KMS_KEY"],
			JWTIssuer: full["GAUNTLET_JWT_ISSUER"], JWTAudience: "client-1", Registry: full["GAUNTLET_REGISTRY"],
			LogLevel: slog.LevelWarn}},
		{name: "api with another identity provider's admin role", needs: cloud.API, env: func() map[string]string {
			e := without(full)
			e["GAUNTLET_ADMIN_CLAIM"], e["GAUNTLET_ADMIN_GROUP"] = "roles", "platform-operator"
			return e
		}(), want: cloud.Config{
			Stage: "dev", Table: "gauntlet-dev-Table", PlanQueueURL: full["GAUNTLET_PLAN_QUEUE_URL"],
			SyncQueueURL: full["GAUNTLET_SYNC_QUEUE_URL"], Bucket: "gauntlet-dev-artifacts",
			SecretsPrefix: "gauntlet/dev/", SecretsKMSKey: full["GAUNTLET_SECRETS_KMS_KEY"],
			JWTIssuer: full["GAUNTLET_JWT_ISSUER"], JWTAudience: "client-1", AdminClaim: "roles", AdminGroup: "platform-operator",
			Registry: full["GAUNTLET_REGISTRY"], LogLevel: slog.LevelWarn}},
		{name: "grader", needs: cloud.Grader, env: full, want: cloud.Config{
			Stage: "dev", Table: "gauntlet-dev-Table", ResultsQueueURL: full["GAUNTLET_RESULTS_QUEUE_URL"],
			Bucket: "gauntlet-dev-artifacts", LogLevel: slog.LevelWarn}},
		{name: "every missing variable is named", needs: cloud.Watchdog,
			env:     without(full, "GAUNTLET_TABLE", "GAUNTLET_COMPLETIONS_QUEUE_URL", "GAUNTLET_RUNNER_IMAGE"),
			wantErr: []string{"GAUNTLET_TABLE is not set", "GAUNTLET_COMPLETIONS_QUEUE_URL is not set", "GAUNTLET_RUNNER_IMAGE is not set"}},
		{name: "the dispatcher needs the sandbox KMS key", needs: cloud.Dispatcher,
			env: without(full, "GAUNTLET_SANDBOX_KMS_KEY"), wantErr: []string{"GAUNTLET_SANDBOX_KMS_KEY is not set"}},
		{name: "a mirror is host=prefix", needs: cloud.Dispatcher,
			env: func() map[string]string {
				e := without(full)
				e["GAUNTLET_SANDBOX_MIRRORS"] = "docker.io"
				return e
			}(), wantErr: []string{`GAUNTLET_SANDBOX_MIRRORS: "docker.io" is not registry-host=repository-prefix`}},
		{name: "malformed values", needs: cloud.Dispatcher,
			env: func() map[string]string {
				e := without(full)
				e["GAUNTLET_SLOTS_QUEUE_URL"], e["GAUNTLET_MAX_SANDBOXES"], e["LOG_LEVEL"] = "slots", "-1", "loud"
				return e
			}(),
			wantErr: []string{`GAUNTLET_SLOTS_QUEUE_URL="slots" is not a queue URL`, `GAUNTLET_MAX_SANDBOXES="-1"`, `LOG_LEVEL="loud"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cloud.Load(tt.needs, func(n string) string { return tt.env[n] })
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load() = %+v, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Load() error = %v, want it to say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load() (-want +got):\n%s", diff)
			}
		})
	}
}
