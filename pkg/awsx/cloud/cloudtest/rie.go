package cloudtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// RIEModule is the pinned Lambda runtime interface emulator (the one SAM
// runs inside its build images).
const RIEModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

var installMu sync.Mutex

// RIE returns the path of bin/aws-lambda-rie under the module root,
// installing it with `go install` when it is missing.
func RIE(t testing.TB, root string) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	bin := filepath.Join(root, "bin", "aws-lambda-rie")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", RIEModule)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Join(root, "bin"), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", RIEModule, err, out)
	}
	return bin
}

// BuildFunctions compiles functions/<name> for the host with the
// lambda.norpc tag (as `make lambdas` does for arm64) and returns each
// binary's path by name.
func BuildFunctions(t testing.TB, root string, names ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-tags", "lambda.norpc", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./functions/"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	bins := map[string]string{}
	for _, n := range names {
		bins[n] = filepath.Join(dir, n)
	}
	return bins
}

// Function is one function binary running under the runtime interface
// emulator. Invocations are serialized: the emulator serves one at a time.
type Function struct {
	url  string
	logs *syncbuf.Buffer
	mu   sync.Mutex
}

// StartFunction runs bootstrap under rie with exactly env as its
// environment (plus PATH and HOME) and waits until the emulator listens.
func StartFunction(t testing.TB, rie, bootstrap string, env map[string]string) *Function {
	t.Helper()
	apiPort, runtimePort := freePort(t), freePort(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", apiPort, "--runtime-api-address", runtimePort, bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	f := &Function{url: "http://" + apiPort + "/2015-03-31/functions/function/invocations", logs: &syncbuf.Buffer{}}
	cmd.Stdout, cmd.Stderr = f.logs, f.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rie, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s logs:\n%s", filepath.Base(bootstrap), f.logs.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", apiPort)
		if err == nil {
			_ = c.Close()
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime interface emulator did not listen on %s: %v\n%s", apiPort, err, f.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// InvokeError is a function error the emulator reported.
type InvokeError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *InvokeError) Error() string { return fmt.Sprintf("function error %s: %s", e.Type, e.Message) }

// Invoke posts the event and returns the function's response, or an
// *InvokeError when the function returned an error (or failed to start).
func (f *Function) Invoke(event []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp, err := http.Post(f.url, "application/json", bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke: read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("invoke: status %d: %s", resp.StatusCode, body)
	}
	var fe InvokeError
	if json.Unmarshal(body, &fe) == nil && fe.Message != "" && fe.Type != "" {
		return body, &fe
	}
	return body, nil
}

// Logs returns what the function and the emulator wrote so far.
func (f *Function) Logs() string { return f.logs.String() }

// LogsContaining waits until the logs contain want or within passes, and
// returns the logs and whether they did. The emulator relays the
// function's stderr on its own schedule, so a line the function wrote
// before an invoke failed can reach the buffer after the invoke returns.
func (f *Function) LogsContaining(want string, within time.Duration) (string, bool) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if logs := f.logs.String(); strings.Contains(logs, want) {
			return logs, true
		}
		select {
		case <-deadline.C:
			return f.logs.String(), false
		case <-tick.C:
		}
	}
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
