package runner

import (
	"errors"
	"fmt"
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
	entries, err := collectArtifacts(onlyMain(root), list, dest, "artifacts/declared", 50)
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

// onlyMain is the roots of a trial with no sidecar service.
func onlyMain(root string) func(string) (string, error) {
	return func(service string) (string, error) {
		if service != "" {
			return "", errors.New("no such service")
		}
		return root, nil
	}
}

// A sidecar's artifacts come from its own filesystem into the one flat
// directory, as Harbor lays them out; a service that is not running is a
// failed entry; an artifact whose place an earlier one took is refused
// (Harbor keeps the first), whatever service each came from.
func TestCollectArtifactsFromServices(t *testing.T) {
	main, api, dest := t.TempDir(), t.TempDir(), t.TempDir()
	for root, files := range map[string]map[string]string{
		main: {"app/out.txt": "from-main", "var/log/api/orders.log": "main's copy"},
		api:  {"var/log/api/orders.log": "from-api", "tmp/stats.json": "{}"},
	} {
		for name, body := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rootOf := func(service string) (string, error) {
		switch service {
		case "":
			return main, nil
		case "api":
			return api, nil
		}
		return "", fmt.Errorf("service %s is not running", service)
	}
	list := []harbor.Artifact{
		{Source: "/var/log/api/orders.log", Service: "api"},
		{Source: "/tmp/stats.json", Service: "api"},
		{Source: "/app/out.txt"},
		{Source: "/var/log/api/orders.log"},  // main's: the api's took its place
		{Source: "/var/log", Service: "api"}, // holds a place already taken
		{Source: "/x", Service: "gone"},
	}
	entries, err := collectArtifacts(rootOf, list, dest, "artifacts/declared", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{artifactOK, artifactOK, artifactOK, artifactFailed, artifactFailed, artifactFailed}
	for i, e := range entries {
		if e.Status != want[i] {
			t.Errorf("%s (service %q): status %q, want %q: %s", e.Source, e.Service, e.Status, want[i], e.Error)
		}
	}
	if !strings.Contains(entries[3].Error, "collides") || !strings.Contains(entries[5].Error, "service gone is not running") {
		t.Errorf("errors do not say why: %q, %q", entries[3].Error, entries[5].Error)
	}
	if got := readFile(t, filepath.Join(dest, "var/log/api/orders.log")); got != "from-api" {
		t.Errorf("orders.log = %q, want the api service's (collected first)", got)
	}
	if got := readFile(t, filepath.Join(dest, "app/out.txt")); got != "from-main" {
		t.Errorf("app/out.txt = %q", got)
	}
	if !strings.Contains(readFile(t, filepath.Join(dest, harbor.ArtifactsManifestFile)), `"service": "api"`) {
		t.Error("manifest.json does not name the service")
	}
}
