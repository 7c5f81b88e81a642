package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func TestEnvCollisionsWithTheHarnessKeyVariable(t *testing.T) {
	keyEnv := func(harness string) string {
		if harness == "keyed" {
			return "MODEL_KEY"
		}
		return ""
	}
	model := &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "OPENAI"}
	tests := []struct {
		name      string
		cfg       runconfig.Config
		harnesses []string
		want      []string // fields
	}{
		{"agent env", runconfig.Config{Agents: []runconfig.Agent{{Model: model, Env: map[string]string{"MODEL_KEY": "x"}}}},
			[]string{"keyed"}, []string{"agents[0].env.MODEL_KEY"}},
		{"run env, reported once", runconfig.Config{Env: map[string]string{"MODEL_KEY": "x"},
			Agents: []runconfig.Agent{{Model: model}, {Name: "b", Model: model}}},
			[]string{"keyed", "keyed"}, []string{"env.MODEL_KEY"}},
		{"harness without a key variable", runconfig.Config{Agents: []runconfig.Agent{{Model: model, Env: map[string]string{"MODEL_KEY": "x"}}}},
			[]string{"plain"}, nil},
		{"agent without an api key secret", runconfig.Config{Agents: []runconfig.Agent{{Env: map[string]string{"MODEL_KEY": "x"}}}},
			[]string{"keyed"}, nil},
		{"other variables", runconfig.Config{Env: map[string]string{"LOG_LEVEL": "x"}, Agents: []runconfig.Agent{{Model: model}}},
			[]string{"keyed"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range envCollisions(tt.cfg, tt.harnesses, nil, keyEnv) {
				if p.Code != CodeInvalidConfig || p.Message == "" {
					t.Errorf("problem %+v: want code %s and a message", p, CodeInvalidConfig)
				}
				got = append(got, p.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("envCollisions fields (-want +got):\n%s", diff)
			}
		})
	}
}
