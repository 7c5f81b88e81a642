package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// Collection reads the environment through an os.Root: a symlink the
// agent left, absolute or climbing, never reaches the host's files; a
// symlink inside a collected directory is not copied; the budget holds.
func TestCollectArtifactsStaysInTheEnvironment(t *testing.T) {
	root, dest := t.TempDir(), t.TempDir()
	host := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(host, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"data/ok.txt": "fine", "dir/a.txt": "a", "dir/sub/b.log": "b", "big/x": strings.Repeat("x", 100)} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"data/abs": host, "data/climb": "../../../../../../../../" + host, "dir/sub/out": host} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	list := []harbor.Artifact{{Source: "/data/ok.txt"}, {Source: "/data/abs"}, {Source: "/data/climb"},
		{Source: "/dir", Destination: "d", Exclude: []string{"*.log"}}, {Source: "/big"}}
	entries, err := collectArtifacts(root, list, dest, 50)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, e := range entries {
		status[e.Source] = e.Status
	}
	want := map[string]string{"/data/ok.txt": artifactOK, "/data/abs": artifactFailed, "/data/climb": artifactFailed, "/dir": artifactOK, "/big": artifactFailed}
	for src, w := range want {
		if status[src] != w {
			t.Errorf("%s: status %q, want %q (%+v)", src, status[src], w, entries)
		}
	}
	err = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if data, _ := os.ReadFile(p); string(data) == "host" {
			t.Errorf("the host's file was collected at %s", p)
		}
		if d.Type()&os.ModeSymlink != 0 {
			t.Errorf("a symlink was collected at %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dest, "d/a.txt")); got != "a" {
		t.Errorf("d/a.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dest, "d/sub/b.log")); err == nil {
		t.Error("an excluded file was collected")
	}
	if !strings.Contains(readFile(t, filepath.Join(dest, harbor.ArtifactsManifestFile)), `"destination": "artifacts/declared/d"`) {
		t.Error("manifest.json lacks the destination of /dir")
	}
}
