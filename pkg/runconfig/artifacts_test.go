package runconfig

import (
	"slices"
	"testing"
)

const artifactsBase = `
[experiment]
benchmark = "demo-bench"
[[agents]]
harness = "oracle"
`

// Trial-level artifacts (Harbor's job-config `artifacts`): absolute
// paths, kept through Render; bad ones are errors naming the entry.
func TestParseTrialArtifacts(t *testing.T) {
	cfg, err := Parse([]byte(`artifacts = ["/app/out.txt", "/logs/agent/trajectory.json/"]` + artifactsBase))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/app/out.txt", "/logs/agent/trajectory.json"}
	if !slices.Equal(cfg.Artifacts, want) {
		t.Errorf("Artifacts = %q, want %q", cfg.Artifacts, want)
	}
	out, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil || !slices.Equal(again.Artifacts, want) {
		t.Errorf("rendered and parsed again: %q, %v\n%s", again.Artifacts, err, out)
	}
	for _, tt := range []struct{ toml, field, msg string }{
		{`artifacts = ["relative.txt"]`, "artifacts[0]", "must be an absolute path in the environment"},
		{`artifacts = ["/ok", "/app/../../etc/passwd"]`, "artifacts[1]", "'..'"},
		{`artifacts = ["/"]`, "artifacts[0]", "below /"},
		{`artifacts = [3]`, "artifacts[0]", "must be a path string"},
		{`artifacts = "/app"`, "artifacts", "must be an array"},
	} {
		_, err := Parse([]byte(tt.toml + artifactsBase))
		checkErrors(t, err, []wantErr{{tt.field, tt.msg}})
	}
}
