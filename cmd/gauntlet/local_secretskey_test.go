package main

import (
	"bytes"
	"encoding/base64"
	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalSecretsKeyRefusals: a key kept in the data dir, two keys, and a
// key that is not one stop `gauntlet local` before it serves, saying why
// and never showing the key.
func TestLocalSecretsKeyRefusals(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, 32))
	inData, outside := filepath.Join(data, "secrets.key"), filepath.Join(dir, "secrets.key")
	for _, p := range []string{inData, outside} {
		if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		want     string
	}{
		{"key file in the data dir", nil, []string{"--secrets-key-file", inData}, exitFailure, "is inside the data dir"},
		{"key file and key variable", []string{"GAUNTLET_SECRETS_KEY=" + key}, []string{"--secrets-key-file", outside}, exitUsage, "give the secrets key once"},
		{"key file variable and key variable", []string{"GAUNTLET_SECRETS_KEY=" + key, "GAUNTLET_SECRETS_KEY_FILE=" + outside}, nil, exitUsage, "give the secrets key once"},
		{"not a key", []string{"GAUNTLET_SECRETS_KEY=open sesame"}, nil, exitFailure, "secrets key from $GAUNTLET_SECRETS_KEY is not 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"local", "--data", data, "--addr", "127.0.0.1:0", "--sandbox", "process", "--catalog", "", "--registry", ""}, tt.args...)
			cmd := exec.Command(binary, args...)
			cmd.Env = append(os.Environ(), append([]string{"GAUNTLET_CREDENTIALS=-"}, tt.env...)...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			err := cmd.Run()
			code := 0
			if exitErr, ok := err.(*exec.ExitError); ok {
				code = exitErr.ExitCode()
			}
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("gauntlet %v exit %d, stderr %q; want %d and %q", args, code, stderr.String(), tt.wantCode, tt.want)
			}
			if strings.Contains(stderr.String(), key) || strings.Contains(stderr.String(), "open sesame") {
				t.Errorf("stderr shows the key: %q", stderr.String())
			}
		})
	}
}

// TestLocalSecretsKeyFromTheEnvironment: with $GAUNTLET_SECRETS_KEY the
// data dir holds no key, a secret set through the CLI is sealed with it,
// and a restart without the key refuses to start instead of making a new
// one.
func TestLocalSecretsKeyFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	data, creds := filepath.Join(dir, "data"), filepath.Join(dir, "credentials")
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x17}, 32))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := []string{"GAUNTLET_URL=", "GAUNTLET_TOKEN=", "GAUNTLET_CREDENTIALS=" + creds, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	runner := filepath.Join(dir, "sandbox-runner")
	if out, err := exec.Command("go", "build", "-o", runner, "github.com/gauntlet-bench/gauntlet/cmd/sandbox-runner").CombinedOutput(); err != nil {
		t.Fatalf("build sandbox-runner: %v\n%s", err, out)
	}
	args := []string{"local", "--data", data, "--addr", addr, "--sandbox", "process", "--catalog", "", "--registry", "", "--runner", runner}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), append(env, "GAUNTLET_SECRETS_KEY="+key)...)
	var stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}
	t.Cleanup(stop)
	cli := cliRun{t: t, env: env}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for served := false; !served; {
		if _, err := os.Stat(creds); err == nil {
			_, _, code := cli.run("", "secret", "list")
			served = code == exitOK
		}
		if served {
			break
		}
		select {
		case <-exited:
			t.Fatalf("gauntlet local exited (%v) before serving:\n%s", waitErr, stderr.String())
		case <-deadline:
			t.Fatalf("gauntlet local did not serve within 2 min:\n%s", stderr.String())
		case <-tick.C:
		}
	}
	const value = "sk-operator-sealed-value-1234"
	cli.ok(value, "secret", "set", "SEALED_TOKEN")
	stop()

	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".key") {
			t.Errorf("data dir holds %s although the operator gave the key", e.Name())
		}
	}
	sealed, err := os.ReadFile(filepath.Join(data, "secrets.json"))
	if err != nil || !bytes.Contains(sealed, []byte("SEALED_TOKEN")) || bytes.Contains(sealed, []byte(value)) {
		t.Errorf("secrets.json = %q, %v; want the record sealed", sealed, err)
	}

	again := exec.Command(binary, args...)
	again.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	again.Stdout, again.Stderr = io.Discard, &out
	if err := again.Run(); err == nil || !strings.Contains(out.String(), "sealed with an operator-provided key") {
		t.Errorf("restart without the key = %v, stderr %q; want a refusal naming the operator key", err, out.String())
	}
}
