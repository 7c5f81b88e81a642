package harbor

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Separate verifiers and declared artifacts run (issue 23, items 2 and 3):
// they are read as Harbor reads them and no longer make a task unsupported.
func TestParseTaskConfigSeparateVerifierAndArtifacts(t *testing.T) {
	doc := `artifacts = ["/tmp/configured-artifact.txt", {source = "/app/out", destination = "out", exclude = ["*.pyc"]}, {source = "/x", service = "main"}]
[verifier]
timeout_sec = 60.0
environment_mode = "separate"
[verifier.environment]
network_mode = "no-network"
cpus = 1
memory_mb = 2048
storage_mb = 10240
gpus = 0
mcp_servers = []
[environment]
docker_image = "ubuntu:24.04"
memory_mb = 4096
`
	cfg, err := ParseTaskConfig([]byte(doc), "task.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Unsupported) != 0 {
		t.Errorf("Unsupported = %q, want none", cfg.Unsupported)
	}
	want := []Artifact{{Source: "/tmp/configured-artifact.txt"}, {Source: "/app/out", Destination: "out", Exclude: []string{"*.pyc"}}, {Source: "/x", Service: "main"}}
	if diff := cmp.Diff(want, cfg.Artifacts); diff != "" {
		t.Errorf("Artifacts (-want +got):\n%s", diff)
	}
	if got := []string{cfg.Artifacts[0].HostPath(), cfg.Artifacts[1].HostPath()}; !cmp.Equal(got, []string{"tmp/configured-artifact.txt", "out"}) {
		t.Errorf("HostPath = %q", got)
	}
	if !cfg.Verifier.Separate() {
		t.Error("Separate() = false, want true")
	}
	ve := cfg.VerifierEnvironment()
	if ve.MemoryMB != 2048 || ve.StorageMB != 10240 || ve.NetworkMode != NetworkNone || ve.DockerImage != "" {
		t.Errorf("VerifierEnvironment = %+v, want [verifier.environment]'s (no docker_image: built from tests/)", ve)
	}
}

// Harbor's resolution table for environment_mode and [verifier.environment].
func TestVerifierModeResolution(t *testing.T) {
	tests := []struct {
		toml     string
		separate bool
		memory   int
	}{
		{"[environment]\nmemory_mb = 512", false, 0},
		{"[environment]\nmemory_mb = 512\n[verifier.environment]\nmemory_mb = 256", true, 256},
		{"[environment]\nmemory_mb = 512\n[verifier]\nenvironment_mode = \"shared\"", false, 0},
		{"[environment]\nmemory_mb = 512\n[verifier]\nenvironment_mode = \"separate\"", true, 512}, // a fresh copy of [environment]
	}
	for _, tt := range tests {
		cfg, err := ParseTaskConfig([]byte(tt.toml), "task.toml")
		if err != nil {
			t.Fatalf("%q: %v", tt.toml, err)
		}
		if cfg.Verifier.Separate() != tt.separate {
			t.Errorf("%q: Separate() = %v, want %v", tt.toml, cfg.Verifier.Separate(), tt.separate)
		}
		if tt.separate && cfg.VerifierEnvironment().MemoryMB != tt.memory {
			t.Errorf("%q: verifier memory %d, want %d", tt.toml, cfg.VerifierEnvironment().MemoryMB, tt.memory)
		}
	}
}

// Bad artifacts and verifier modes are errors naming the file and field.
func TestParseTaskConfigBadArtifacts(t *testing.T) {
	tests := []struct{ toml, field, reason string }{
		{`artifacts = ["relative/out.txt"]`, "artifacts[0]", "absolute path"},
		{`artifacts = ["/app/../../etc/passwd"]`, "artifacts[0]", "'..'"},
		{`artifacts = ["/"]`, "artifacts[0]", "below /"},
		{`artifacts = [{destination = "x"}]`, "artifacts[0].source", "required"},
		{`artifacts = [{source = "/ok", destination = "/abs"}]`, "artifacts[0].destination", "relative"},
		{`artifacts = [{source = "/ok", destination = "a/../../b"}]`, "artifacts[0].destination", "'..'"},
		{`artifacts = [{source = "/ok", destination = "manifest.json"}]`, "artifacts[0].destination", "reserved"},
		{`artifacts = "/app"`, "artifacts", "array"},
		{`artifacts = [3]`, "artifacts[0]", "path or a table"},
		{"[verifier]\nenvironment_mode = \"elsewhere\"", "verifier.environment_mode", "must be"},
		{"[verifier]\nenvironment_mode = \"shared\"\n[verifier.environment]\ncpus = 1", "verifier.environment_mode", "incompatible"},
		{"[verifier.environment]\nmemory = \"lots\"", "verifier.environment.memory", "invalid size"},
	}
	for _, tt := range tests {
		_, err := ParseTaskConfig([]byte(tt.toml), "task.toml")
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%q: error %v, want a FieldError", tt.toml, err)
			continue
		}
		if fe.File != "task.toml" || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
			t.Errorf("%q: %v, want field %s with %q", tt.toml, err, tt.field, tt.reason)
		}
	}
	if _, err := ParseArtifacts([]any{"/ok", "nope"}, "job.json", "artifacts"); err == nil || !strings.Contains(err.Error(), "job.json: artifacts[1]") {
		t.Errorf("ParseArtifacts: %v, want an error naming job.json: artifacts[1]", err)
	}
}
