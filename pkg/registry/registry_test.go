package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

const exampleRegistry = "../../examples/registry.json"

func TestOpenLocations(t *testing.T) {
	tests := []struct {
		name     string
		location string
		wantPath string // "" for http(s)
		wantErr  string
	}{
		{"relative path", "examples/registry.json", "examples/registry.json", ""},
		{"file URL", "file:///srv/reg/registry.json", "/srv/reg/registry.json", ""},
		{"file URL localhost", "file://localhost/srv/registry.json", "/srv/registry.json", ""},
		{"https", "https://example.com/registry.json", "", ""},
		{"http", "http://127.0.0.1:8080/registry.json", "", ""},
		{"empty", "", "", "registry location is empty"},
		{"ftp", "ftp://example.com/registry.json", "", `scheme "ftp" is not supported`},
		{"file URL with host", "file://example.com/registry.json", "", "must name a local path"},
		{"http without host", "http:///registry.json", "", "URL has no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenWith(tt.location, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open(%q) error = %v, want it to contain %q", tt.location, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.location, err)
			}
			want := ""
			if tt.wantPath != "" {
				want, _ = filepath.Abs(tt.wantPath)
			}
			if c.path != want {
				t.Errorf("Open(%q) path = %q, want %q", tt.location, c.path, want)
			}
		})
	}
}

func TestLocalRegistryFetch(t *testing.T) {
	ctx := context.Background()
	for _, location := range []string{exampleRegistry, "file://" + mustAbs(t, exampleRegistry)} {
		t.Run(location, func(t *testing.T) {
			src, err := Open(location)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			reg, err := src.Registry(ctx)
			if err != nil {
				t.Fatalf("Registry: %v", err)
			}
			d, err := reg.Resolve("demo-bench", "")
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if len(d.Tasks) != 15 {
				t.Fatalf("demo-bench has %d tasks, want 15", len(d.Tasks))
			}
			ref := d.Tasks[0]
			dst := filepath.Join(t.TempDir(), "task")
			got, err := src.FetchTask(ctx, ref, dst)
			if err != nil {
				t.Fatalf("FetchTask(%s): %v", ref.Name, err)
			}
			wantDir := mustAbs(t, filepath.Join("../../examples", ref.Path))
			if diff := cmp.Diff(Fetched{Ref: ref, LocalDir: wantDir}, got); diff != "" {
				t.Errorf("FetchTask mismatch (-want +got):\n%s", diff)
			}
			if a, b := digest(t, wantDir), digest(t, dst); a != b {
				t.Errorf("copied task digest %s, source %s", b, a)
			}
		})
	}
}

func TestFetchTaskRejectsBadPaths(t *testing.T) {
	src, err := Open(exampleRegistry)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tests := []struct {
		path, wantErr string
	}{
		{"../registry.json", "escapes the registry directory"},
		{"demo-bench/../../x", "escapes the registry directory"},
		{"/etc", "must be relative"},
		{"-x", "must not start with '-'"},
		{"demo-bench/no-such-task", "task t: directory unreachable"},
		{"registry.json", "is not a directory"},
	}
	for _, tt := range tests {
		_, err := src.FetchTask(context.Background(), harbor.TaskRef{Name: "t", Path: tt.path}, filepath.Join(t.TempDir(), "t"))
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("FetchTask(path %q) error = %v, want it to contain %q", tt.path, err, tt.wantErr)
		}
	}
}

func TestHTTPRegistry(t *testing.T) {
	reg := harbor.Registry{{Name: "remote", Version: "1.0", Description: "d", Tasks: []harbor.TaskRef{{Name: "a", Path: "tasks/a"}}}}
	body, _ := json.Marshal(reg)
	mux := http.NewServeMux()
	mux.HandleFunc("/registry.json", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(make([]byte, 2048)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	src, err := OpenWith(srv.URL+"/registry.json", Options{AllowPrivateNetworks: true}) // the test server is on loopback
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got, err := src.Registry(ctx)
	if err != nil {
		t.Fatalf("Registry: %v", err)
	}
	if diff := cmp.Diff(reg, got); diff != "" {
		t.Errorf("Registry mismatch (-want +got):\n%s", diff)
	}
	_, err = src.FetchTask(ctx, reg[0].Tasks[0], filepath.Join(t.TempDir(), "a"))
	if err == nil || !strings.Contains(err.Error(), "has no git_url, and registry "+srv.URL+"/registry.json is not a local file") {
		t.Errorf("FetchTask of a path-only task from an http registry: err = %v", err)
	}

	errTests := []struct {
		name, location, wantErr string
		opts                    Options
	}{
		{"not found", srv.URL + "/missing.json", "registry " + srv.URL + "/missing.json unreachable: HTTP status 404 Not Found", Options{AllowPrivateNetworks: true}},
		{"too large", srv.URL + "/big.json", "larger than the limit of 1024 bytes", Options{MaxRegistrySize: 1024, AllowPrivateNetworks: true}},
		{"refused", "http://" + closedAddr(t) + "/registry.json", "unreachable: dial tcp", Options{AllowPrivateNetworks: true}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenWith(tt.location, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Registry(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.location) {
				t.Errorf("Registry(%s) error = %v, want it to name the URL and contain %q", tt.location, err, tt.wantErr)
			}
		})
	}
}

func TestMissingLocalRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.json")
	src, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Registry(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "registry "+path+" unreachable") {
		t.Errorf("Registry of a missing file: err = %v", err)
	}
}

func TestCheckGitURL(t *testing.T) {
	tests := []struct {
		url     string
		wantErr bool
	}{
		{"https://github.com/laude-institute/harbor-datasets.git", false},
		{"file:///srv/repo.git", false},
		{"ssh://git@example.com/x.git", false},
		{"git@github.com:org/repo.git", false},
		{"ext::sh -c touch% /tmp/pwned", true},
		{"-uhttps://x", true},
		{"fd::17", true},
		{"ftp://example.com/x.git", true},
		{"/srv/repo.git", true},
	}
	for _, tt := range tests {
		if err := checkGitURL(tt.url); (err != nil) != tt.wantErr {
			t.Errorf("checkGitURL(%q) = %v, want error %v", tt.url, err, tt.wantErr)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func digest(t *testing.T, dir string) string {
	t.Helper()
	d, err := harbor.TaskDigest(dir)
	if err != nil {
		t.Fatalf("TaskDigest(%s): %v", dir, err)
	}
	return d
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitRun runs git in dir for a test fixture.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestOpenDir(t *testing.T) {
	c, err := OpenDir("../../examples/demo-bench", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := c.Registry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Resolve("demo-bench", DirVersion)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if len(d.Tasks) != 15 || d.Tasks[0] != (harbor.TaskRef{Name: "build-order", Path: "build-order"}) {
		t.Errorf("tasks = %d, first %+v", len(d.Tasks), d.Tasks[0])
	}
	got, err := c.FetchTask(context.Background(), d.Tasks[0], filepath.Join(t.TempDir(), "t"))
	if err != nil || got.LocalDir != mustAbs(t, "../../examples/demo-bench/build-order") {
		t.Errorf("FetchTask = %+v, %v", got, err)
	}
	if _, err := OpenDir(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no subdirectory holds a task.toml") {
		t.Errorf("OpenDir(empty) error = %v", err)
	}
}
