package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMockModel serves the built-in fix-median script in-process, answers one
// Chat Completions request through it and stops on cancel.
func TestMockModel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	done := make(chan int, 1)
	go func() {
		done <- runMockModel(ctx, []string{"-script", "fix-median", "-record", record}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read listen line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "mock model listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	body := `{"model":"m","stream":false,"messages":[{"role":"user","content":"fix it"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-demo-key-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `cat /app/stats.py`) {
		t.Errorf("answer %d %s, want the script's first shell call", resp.StatusCode, b)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit code %d, want %d", code, exitOK)
	}
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"path":"/v1/chat/completions"`) || !strings.Contains(string(rec), `"turn":0`) || strings.Contains(string(rec), "sk-demo-key") {
		t.Errorf("record: %s", rec)
	}
}

func TestMockModelUsage(t *testing.T) {
	if code := runMockModel(context.Background(), []string{"-script", "nope"}, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("unknown script: exit %d, want %d", code, exitUsage)
	}
	if code := runMockModel(context.Background(), []string{"-fail", "200"}, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("-fail 200: exit %d, want %d", code, exitUsage)
	}
}
