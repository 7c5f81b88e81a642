package harbor

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A config file never holds a secret's value: sensitive names (Harbor's
// rule) and secret records become ${NAME} templates.
func TestConfigEnv(t *testing.T) {
	tests := []struct {
		name    string
		literal map[string]string
		secrets []string
		want    map[string]string
	}{
		{"nothing", nil, nil, nil},
		{"plain literals kept", map[string]string{"LOG_LEVEL": "info"}, nil, map[string]string{"LOG_LEVEL": "info"}},
		{"sensitive literals templated", map[string]string{"MY_api_key": "v1", "GH_TOKEN": "v2", "DB_PASSWORD": "v3",
			"AWS_SECRET": "v4", "GCP_CREDENTIALS": "v5", "BASIC_AUTH": "v6"},
			nil, map[string]string{"MY_api_key": "${MY_api_key}", "GH_TOKEN": "${GH_TOKEN}", "DB_PASSWORD": "${DB_PASSWORD}",
				"AWS_SECRET": "${AWS_SECRET}", "GCP_CREDENTIALS": "${GCP_CREDENTIALS}", "BASIC_AUTH": "${BASIC_AUTH}"}},
		{"secrets by name", map[string]string{"A": "1"}, []string{"OPENAI_API_KEY", "PLAIN_NAME"},
			map[string]string{"A": "1", "OPENAI_API_KEY": "${OPENAI_API_KEY}", "PLAIN_NAME": "${PLAIN_NAME}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ConfigEnv(tt.literal, tt.secrets)); diff != "" {
				t.Errorf("ConfigEnv(%v, %v) (-want +got):\n%s", tt.literal, tt.secrets, diff)
			}
		})
	}
}

func TestTrialConfigRaw(t *testing.T) {
	c := TrialConfig{Task: TrialTask{Name: "org/task", Ref: "sha256:ab"}, TrialName: "task__0-1-g0", TimeoutMultiplier: 1.5,
		Agent: TrialAgent{Name: "codex", ModelName: "openai/gpt-5.2"}}
	raw, err := c.Raw()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"task":{"name":"org/task","ref":"sha256:ab"},"trial_name":"task__0-1-g0","timeout_multiplier":1.5,` +
		`"agent":{"name":"codex","model_name":"openai/gpt-5.2"},"environment":{},"verifier":{}}`
	if string(raw) != want {
		t.Errorf("Raw() = %s, want %s", raw, want)
	}
	c.Task.Path = "x"
	if _, err := c.Raw(); err == nil {
		t.Errorf("Raw() of a task with both path and name succeeded, want an error")
	}
}

// Harbor's three task ids read and write back as Harbor writes them.
func TestTaskIDForms(t *testing.T) {
	for _, doc := range []string{
		`{"org":"acme","name":"task","ref":"sha256:ab"}`,
		`{"org":"acme","name":"task","ref":null}`,
		`{"git_url":"https://example.com/t.git","git_commit_id":"abc","path":"tasks/t"}`,
		`{"path":"tasks/t"}`,
	} {
		var id TaskID
		if err := json.Unmarshal([]byte(doc), &id); err != nil {
			t.Fatalf("Unmarshal(%s): %v", doc, err)
		}
		got, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != doc {
			t.Errorf("TaskID %s written back as %s", doc, got)
		}
	}
}
