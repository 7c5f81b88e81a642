package image_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
)

func TestSettingsRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "images.toml")
	want := image.Settings{DockerConfig: "/etc/docker.json", MaxRootfsGB: 2,
		Mirrors: []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"http://127.0.0.1:5000"}, SkipUpstream: true}}}
	if err := image.WriteSettings(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := image.LoadSettings(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.DockerConfig != want.DockerConfig || got.MaxRootfsGB != 2 || len(got.Mirrors) != 1 || !got.Mirrors[0].SkipUpstream ||
		got.Mirrors[0].Endpoints[0] != "http://127.0.0.1:5000" {
		t.Fatalf("LoadSettings = %+v, want %+v", got, want)
	}
	if o := got.Options(); o.MaxRootfsBytes != 2<<30 {
		t.Fatalf("Options().MaxRootfsBytes = %d, want 2 GiB", o.MaxRootfsBytes)
	}
	for _, tc := range []struct{ body, want string }{
		{"[[mirrors]]\nprefix = \"docker.io\"\nendpoint = [\"https://m.example.com\"]\n", `unknown key "mirrors.endpoint"`},
		{"[[mirrors]]\nprefix = \"docker.io\"\nendpoints = [\"http://m.example.com\"]\n", "plain http is allowed for loopback mirrors only"},
		{"max_rootfs_gb = -1\n", "max_rootfs_gb -1"},
	} {
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := image.LoadSettings(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadSettings(%q) = %v, want an error containing %q", tc.body, err, tc.want)
		}
	}
}
