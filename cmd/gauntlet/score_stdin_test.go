package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// gauntletWithStdin runs the binary with stdin as its standard input.
func gauntletWithStdin(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.String(), errOut.String(), exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// TestScoreStdin: `gauntlet score -` ranks the attempts piped in, as it
// does the same file (the figures are TestScore's, worked out by hand).
func TestScoreStdin(t *testing.T) {
	small, err := os.ReadFile("testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := gauntletWithStdin(t, small, "score", "-", "--metric=pass@1")
	if code != exitOK {
		t.Fatalf("gauntlet score - exit %d, stderr %q", code, stderr)
	}
	got := table(t, stdout)
	want := map[string]map[string]string{
		"prov/alpha (h1)": {"RANK": "1", "PASS@1": "87.5% (52.9–97.8)", "PASS@2": "100.0%", "COST": "$0.1500"},
		"prov/beta (h2)":  {"RANK": "1*", "PASS@1": "75.0% (40.9–92.9)", "TOKENS": "2.5k"},
		"nop":             {"RANK": "3", "PASS@1": "0.0% (0.0–49.0)"},
	}
	for agent, cells := range want {
		for col, w := range cells {
			if got[agent][col] != w {
				t.Errorf("gauntlet score -: %s %s = %q, want %q\n%s", agent, col, got[agent][col], w, stdout)
			}
		}
	}

	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"a bad line names stdin", "{\"harness\":\"h\",\"task\":\"a\"}\n", []string{"score", "-"}, "gauntlet score: stdin:1: attempt: required"},
		{"stdin twice", string(small), []string{"score", "-", "-"}, `"-" (stdin) is given twice`},
		{"nothing piped in", "", []string{"score", "-"}, "no attempts found in stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := gauntletWithStdin(t, []byte(tt.stdin), tt.args...)
			if code != exitFailure || !strings.Contains(stderr, tt.want) {
				t.Errorf("gauntlet %v exit %d, stderr %q; want %d and %q", tt.args, code, stderr, exitFailure, tt.want)
			}
		})
	}
}
