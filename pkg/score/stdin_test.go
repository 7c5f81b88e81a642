package score

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// TestReadStdin: "-" reads JSONL from stdin, merged with the files like one
// more file, named "stdin" in messages.
func TestReadStdin(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/a.jsonl", `{"harness":"h","model":"m","task":"a","attempt":1,"reward":1}`)
	stdin := strings.NewReader("\n" + `{"harness":"h","model":"m","task":"a","attempt":2,"reward":0}` + "\n")
	got, err := Read([]string{dir + "/a.jsonl", StdinPath}, stdin, 1)
	if err != nil {
		t.Fatalf("Read(file, -) error = %v", err)
	}
	want := []leaderboard.EntrantInput{{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", ""),
		Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Passed}, {Task: "a", Outcome: leaderboard.Failed}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read(file, -) mismatch (-want +got):\n%s", diff)
	}

	dup := strings.NewReader(`{"harness":"h","model":"m","task":"a","attempt":1,"reward":0}`)
	_, err = Read([]string{dir + "/a.jsonl", StdinPath}, dup, 1)
	if want := "stdin:1: attempt: duplicate of " + dir + "/a.jsonl:1"; err == nil || err.Error() != want {
		t.Errorf("Read(duplicate on stdin) error = %v, want %q", err, want)
	}
}

func TestReadStdinErrors(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		stdin string
		want  string
	}{
		{"given twice", []string{StdinPath, StdinPath}, `{"harness":"h","task":"a","attempt":1,"reward":1}`, `"-" (stdin) is given twice; it can be read only once`},
		{"empty", []string{StdinPath}, "\n", "no attempts found in stdin"},
		{"bad line", []string{StdinPath}, "{\"harness\":\"h\",\"task\":\"a\",\"attempt\":0,\"reward\":1}\n", "stdin:1: attempt: must be from 1 to 1000000, got 0"},
		{"line over the limit", []string{StdinPath}, strings.Repeat(" ", MaxLineBytes+1), "stdin:1: line longer than the 65536-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Read(tt.paths, strings.NewReader(tt.stdin), 1); err == nil || err.Error() != tt.want {
				t.Errorf("Read(%v) error = %v, want %q", tt.paths, err, tt.want)
			}
		})
	}
	if _, err := Read([]string{StdinPath}, nil, 1); err == nil || !strings.Contains(err.Error(), "names stdin, but there is none") {
		t.Errorf("Read(-) without stdin error = %v", err)
	}
}

// TestReadStdinEndless: an endless stdin stops at the line limit, like
// /dev/zero as a file.
func TestReadStdinEndless(t *testing.T) {
	z := &zeros{}
	_, err := Read([]string{StdinPath}, z, 1)
	var lineErr *LineError
	if !errors.As(err, &lineErr) || lineErr.File != "stdin" {
		t.Fatalf("Read(-) of an endless stream error = %v, want the line limit on stdin", err)
	}
	if z.read > 2*MaxLineBytes {
		t.Errorf("read %d bytes before stopping, want at most about %d", z.read, MaxLineBytes)
	}
}
