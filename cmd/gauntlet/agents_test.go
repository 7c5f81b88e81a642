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
	for _, want := range []string{"claude-code  2.1.328", "codex        0.169.0", "gemini-cli   0.61.0", "opencode     1.18.33", "copilot-cli  1.0.102", "cline        3.0.65", "not installed", cache + "/codex-0.169.0-"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("agents list lacks %q:\n%s", want, out.String())
		}
	}
	errOut.Reset()
	if code := dispatch(context.Background(), []string{"agents", "install", "--cache", cache, "openhands"}, &out, &errOut); code != exitUsage ||
		!strings.Contains(errOut.String(), `harness "openhands" has no agent bundle; bundled: claude-code, cline, codex, copilot-cli, gemini-cli, opencode, qwen-code`) {
		t.Errorf("agents install openhands = %d, %q", code, errOut.String())
	}
	if code := dispatch(context.Background(), []string{"agents"}, &out, &errOut); code != exitUsage {
		t.Errorf("agents without a subcommand = %d, want usage", code)
	}
}

// TestBarProgressShowsNoRate: a bundle stage adds its files' sizes as fast
// as link(2) goes; the bar must not turn that into a transfer rate (it
// once read "(111 TB/s)"). The stage's size is in its description.
func TestBarProgressShowsNoRate(t *testing.T) {
	var out bytes.Buffer
	p := &barProgress{w: &out}
	p.Stage("bundle codex 0.169.0", 250e6)
	for range 100 {
		p.Add(2.5e6)
	}
	p.Stage("runtime bash-static (Debian)", -1)
	p.finish()
	got := out.String()
	if strings.Contains(got, "B/s") {
		t.Errorf("the bundle bar shows a byte rate:\n%q", got)
	}
	if !strings.Contains(got, "bundle codex 0.169.0 (250 MB)") || !strings.Contains(got, "100%") {
		t.Errorf("the bundle bar lacks its size or its end:\n%q", got)
	}
}
