package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// env is the one server every test of this package talks to over HTTP;
// tenantB is a second workspace on it.
var (
	env     *servertest.Env
	tenantB server.Tenant
	// seen keeps every response body, for the secret-leak scan.
	seen bodyLog
)

func TestMain(m *testing.M) {
	var err error
	env, err = servertest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tenantB, err = env.Server.CreateWorkspace(context.Background(), "tenant-b", "bob")
	code := 1
	if err == nil {
		code = m.Run()
		if code == 0 && !leakFree() {
			code = 1
		}
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := env.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// leakFree checks that the secret value the tests store appears in no
// response body (nor any file of a downloaded zip) and no log line.
func leakFree() bool {
	ok := true
	if strings.Contains(seen.all(), secretValue) {
		fmt.Fprintln(os.Stderr, "FAIL: a secret value appeared in an API response")
		ok = false
	}
	if logs := env.Logs(); strings.Contains(logs, secretValue) {
		fmt.Fprintln(os.Stderr, "FAIL: a secret value appeared in the server log")
		ok = false
	} else if !strings.Contains(logs, "run submitted") {
		fmt.Fprintln(os.Stderr, "FAIL: the server log was not captured (no \"run submitted\" line), so the leak scan saw nothing")
		ok = false
	}
	return ok
}

type bodyLog struct {
	mu     sync.Mutex
	bodies []string
}

func (b *bodyLog) add(s string) {
	b.mu.Lock()
	b.bodies = append(b.bodies, s)
	b.mu.Unlock()
}

func (b *bodyLog) all() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.bodies, "\n")
}

// caller makes API requests as one tenant ("" token = anonymous).
type caller struct{ token string }

// alice is the server's first workspace, bob the second; anon has no token.
func alice() caller { return caller{token: env.Tenant.Token} }

func bob() caller { return caller{token: tenantB.Token} }

var anon = caller{}

// request is one API call.
type request struct {
	method, path string
	body         []byte
	contentType  string
	header       map[string]string
}

// do sends a request and returns the status, headers and body.
func (c caller) do(t *testing.T, rq request) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rq.method, env.URL+rq.path, bytes.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", rq.method, rq.path, err)
	}
	seen.add(string(body))
	return resp.StatusCode, resp.Header, body
}

// get fetches path and decodes the JSON answer into out after checking
// the status.
func (c caller) get(t *testing.T, path string, want int, out any) {
	t.Helper()
	c.call(t, request{method: "GET", path: path}, want, out)
}

// call sends rq, checks the status and decodes a JSON answer into out.
func (c caller) call(t *testing.T, rq request, want int, out any) {
	t.Helper()
	status, _, body := c.do(t, rq)
	if status != want {
		t.Fatalf("%s %s = %d %s, want %d", rq.method, rq.path, status, body, want)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", rq.method, rq.path, body, err)
		}
	}
}

// jsonBody encodes v.
func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apiError decodes an error answer and checks its code.
func wantError(t *testing.T, c caller, rq request, status int, code string) v1.Error {
	t.Helper()
	var e v1.Error
	c.call(t, rq, status, &e)
	if e.Code != code || e.Message == "" {
		t.Fatalf("%s %s: error %+v, want code %s with a message", rq.method, rq.path, e, code)
	}
	return e
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// readyBenchmark waits until the caller's benchmark key is synced.
func readyBenchmark(t *testing.T, c caller, key string) v1.BenchmarkDetail {
	t.Helper()
	var b v1.BenchmarkDetail
	waitFor(t, "benchmark "+key+" ready", 2*time.Minute, func() bool {
		c.get(t, "/v1/benchmarks/"+key, http.StatusOK, &b)
		if b.Status == "failed" {
			t.Fatalf("benchmark %s sync failed: %s", key, b.SyncError)
		}
		return b.Status == "ready"
	})
	return b
}

// finishedRun waits until a run ends and its metrics are current.
func finishedRun(t *testing.T, c caller, id string) v1.RunDetail {
	t.Helper()
	var d v1.RunDetail
	waitFor(t, "run "+id+" to end", 4*time.Minute, func() bool {
		c.get(t, "/v1/runs/"+id, http.StatusOK, &d)
		return (d.Status == "finished" || d.Status == "failed" || d.Status == "stopped") && d.MetricsCurrent
	})
	return d
}
