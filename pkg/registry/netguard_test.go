package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

func TestRefusedAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.1.2.3": "private", "192.168.0.1": "private", "172.16.5.5": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "100.64.0.1": "shared (carrier-grade NAT)",
		"1.1.1.1": "", "140.82.112.3": "", "2606:4700::1111": "",
	} {
		if got := refusedAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("refusedAddr(%s) = %q, want %q", addr, got, want)
		}
	}
}

// TestRegistryFetchRefusesLoopback: a registry URL on loopback, by address
// or by a name that resolves there (checked at connect time, so DNS
// rebinding gains nothing), is refused unless the operator allows it.
func TestRegistryFetchRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"name":"x","version":"1","description":"","tasks":[]}]`))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	for _, location := range []string{srv.URL + "/registry.json", "http://localhost:" + port + "/registry.json"} {
		c, err := OpenWith(location, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Registry(context.Background())
		if !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), "is a loopback address") {
			t.Errorf("Registry(%s) error = %v, want the loopback address refused", location, err)
		}
		c, err = OpenWith(location, Options{AllowPrivateNetworks: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Registry(context.Background()); err != nil {
			t.Errorf("Registry(%s) with private networks allowed: %v", location, err)
		}
	}
}

// gitHTTPServer serves the bare repositories under root over git's smart
// HTTP protocol (git http-backend as CGI).
func gitHTTPServer(t *testing.T, root string) *httptest.Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestGitFetchGoesThroughTheGuard(t *testing.T) {
	url, first, _ := bareRepo(t)
	bare := strings.TrimPrefix(url, "file://")
	srv := gitHTTPServer(t, filepath.Dir(bare))
	httpURL := srv.URL + "/" + filepath.Base(bare)
	ref := harbor.TaskRef{Name: "alpha", GitURL: httpURL, GitCommitID: first, Path: "tasks/alpha"}
	ctx := context.Background()

	t.Run("refused by default", func(t *testing.T) {
		c, err := OpenWith(exampleRegistry, Options{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.FetchTask(ctx, ref, filepath.Join(t.TempDir(), "task"))
		if !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") {
			t.Errorf("FetchTask(%s) error = %v, want the loopback address refused", httpURL, err)
		}
		for _, other := range []string{url, "ssh://git@127.0.0.1/x.git", "git://127.0.0.1/x.git"} {
			r := ref
			r.GitURL = other
			if _, err := c.FetchTask(ctx, r, filepath.Join(t.TempDir(), "task")); !errors.Is(err, ErrAddressRefused) {
				t.Errorf("FetchTask(%s) error = %v, want the transport refused", other, err)
			}
		}
	})
	t.Run("fetched through the proxy when the address is allowed", func(t *testing.T) {
		// Only loopback is reachable here: a policy that refuses nothing
		// shows git's HTTP really goes through the proxy's dialer.
		var dialled atomic.Int32
		c, err := OpenWith(exampleRegistry, Options{TempDir: t.TempDir(), refuse: func(netip.Addr) string {
			dialled.Add(1)
			return ""
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dst := filepath.Join(t.TempDir(), "task")
		if _, err := c.FetchTask(ctx, ref, dst); err != nil {
			t.Fatalf("FetchTask(%s) through the proxy: %v", httpURL, err)
		}
		if _, err := os.Stat(filepath.Join(dst, "task.toml")); err != nil {
			t.Errorf("fetched task lacks task.toml: %v", err)
		}
		if dialled.Load() == 0 {
			t.Error("git's connections did not go through the guarded dialer")
		}
	})
}
