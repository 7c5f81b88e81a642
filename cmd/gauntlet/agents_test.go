package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestAgentsListAndInstallUsage(t *testing.T) {
	cache := t.TempDir()
	var out, errOut bytes.Buffer
	if code := dispatch(context.Background(), []string{"agents", "list", "--cache", cache}, &out, &errOut); code != exitOK {
		t.Fatalf("agents list = %d: %s", code, errOut.String())
	}
	for _, want := range []string{"claude-code  2.1.328", "codex        0.169.0", "gemini-cli   0.61.0", "opencode     1.18.33", "not installed", cache + "/codex-0.169.0-"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("agents list lacks %q:\n%s", want, out.String())
		}
	}
	errOut.Reset()
	if code := dispatch(context.Background(), []string{"agents", "install", "--cache", cache, "openhands"}, &out, &errOut); code != exitUsage ||
		!strings.Contains(errOut.String(), `harness "openhands" has no agent bundle; bundled: claude-code, codex, gemini-cli, opencode, qwen-code`) {
		t.Errorf("agents install openhands = %d, %q", code, errOut.String())
	}
	if code := dispatch(context.Background(), []string{"agents"}, &out, &errOut); code != exitUsage {
		t.Errorf("agents without a subcommand = %d, want usage", code)
	}
}
