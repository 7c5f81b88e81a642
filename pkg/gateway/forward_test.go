package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// envSandboxed makes the test binary, run inside a sandbox, act as the
// in-sandbox side: forwarder plus one harness call through it.
const envSandboxed = "GAUNTLET_GATEWAY_TEST_IN_SANDBOX"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envSandboxed); spec != "" {
		os.Exit(inSandbox(spec))
	}
	os.Exit(m.Run())
}

// inSandbox runs the forwarder on a loopback port of the sandbox's own
// network namespace and makes one Chat Completions call through it,
// printing the status and the body.
func inSandbox(spec string) int {
	socket, token, _ := strings.Cut(spec, " ")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gateway.Forward(ctx, ln, socket)
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{}}}}}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println("call:", err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("status %d\n%s", resp.StatusCode, b)
	return 0
}

func TestForward(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", "")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gateway.Forward(ctx, ln, g.SocketPath()) }()
	for i := 0; i < 3; i++ { // keep-alive and fresh connections alike
		resp, body := call(t, http.DefaultClient, "http://"+ln.Addr().String(), g.Token(), loadFixture(t, "codex/0004-ok-POST.json"))
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("Done: wrote hello")) {
			t.Fatalf("through the forwarder: %d %s", resp.StatusCode, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Forward: %v", err)
	}
	if n := g.Totals().Calls; n != 3 {
		t.Errorf("%d calls", n)
	}
}

// TestForwardNoNetwork runs the in-sandbox side in bubblewrap with a network
// namespace of its own (only lo, as under network_mode no-network) and only
// the gateway's socket bound in: the call reaches the model through it.
func TestForwardNoNetwork(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal("bubblewrap is needed for this test: apt-get install -y bubblewrap (make deps)")
	}
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	sockDir := t.TempDir()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), SocketPath: filepath.Join(sockDir, "gateway.sock")})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sandbox := func(cmd ...string) []string {
		// The host's root read-only (the test binary lives in it), a network
		// namespace with only lo, and the socket's directory bound in.
		return append([]string{"--unshare-all", "--die-with-parent", "--clearenv",
			"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
			"--bind", sockDir, sockDir,
			"--setenv", envSandboxed, g.SocketPath() + " " + g.Token()}, cmd...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bwrap, sandbox(self)...).CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap: %v\n%s", err, out)
	}
	if !bytes.HasPrefix(out, []byte("status 200\n")) || !bytes.Contains(out, []byte("echo hello > /app/out.txt")) || !bytes.Contains(out, []byte("data: [DONE]")) {
		t.Fatalf("in-sandbox call: %s", out)
	}
	if tot := g.Totals(); tot.Calls != 1 || tot.Usage.Input != 1234 {
		t.Errorf("totals %+v", tot)
	}
	// The sandbox had no other way out: its namespace has no route to the
	// mock's loopback port.
	probe := "exec 3<>/dev/tcp/" + strings.Replace(strings.TrimPrefix(mock.URL, "http://"), ":", "/", 1) + " 2>/dev/null && echo reached || echo unreachable"
	out, _ = exec.CommandContext(ctx, bwrap, sandbox("/bin/bash", "-c", probe)...).CombinedOutput()
	if !bytes.Contains(out, []byte("unreachable")) {
		t.Errorf("the sandbox reached the mock directly: %s", out)
	}
	// The same probe outside the sandbox does reach it (the probe works).
	out, _ = exec.CommandContext(ctx, "/bin/bash", "-c", probe).CombinedOutput()
	if !bytes.Contains(out, []byte("reached")) || bytes.Contains(out, []byte("unreachable")) {
		t.Errorf("the probe does not reach the mock from outside: %s", out)
	}
}
