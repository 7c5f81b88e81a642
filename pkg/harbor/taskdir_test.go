package harbor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The expected digests were computed independently with a short Python script
// (os.walk, hashlib) implementing the documented format.
func TestTaskDigestKnownAnswers(t *testing.T) {
	tests := []struct {
		dir  string
		want string
	}{
		{"testdata/tasks/legacy", "sha256:62dddc0d2dad3496583f4e778930cac06329610843f09d779f78932c629bd92e"},
		{"testdata/tasks/schema14", "sha256:16c3b4d2d55c6d3f2d24f2a3e45c8fa7fc02de4b09741a412ef0011dbf818dbd"},
	}
	for _, tt := range tests {
		got, err := TaskDigest(tt.dir)
		if err != nil {
			t.Fatalf("TaskDigest(%q) error: %v", tt.dir, err)
		}
		if got != tt.want {
			t.Errorf("TaskDigest(%q) = %s, want %s", tt.dir, got, tt.want)
		}
	}
}

func TestTaskDigestSensitivity(t *testing.T) {
	base := map[string]string{
		"task.toml":      "version = \"1.0\"\n",
		"instruction.md": "do it\n",
		"tests/test.sh":  "#!/bin/sh\necho 1\n",
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		same   bool
	}{
		{"untouched", func(*testing.T, string) {}, true},
		{"mtime and read bits", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "instruction.md")
			must(t, os.Chtimes(p, time.Unix(1, 0), time.Unix(1, 0)))
			must(t, os.Chmod(p, 0o600))
		}, true},
		{"empty directory", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755)) }, true},
		{".git ignored", func(t *testing.T, dir string) { writeFiles(t, dir, map[string]string{".git/HEAD": "ref"}) }, true},
		{"content", func(t *testing.T, dir string) { writeFiles(t, dir, map[string]string{"instruction.md": "do it!\n"}) }, false},
		{"executable bit", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, "tests/test.sh"), 0o755)) }, false},
		{"rename", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "instruction.md"), filepath.Join(dir, "instructions.md")))
		}, false},
		{"new file", func(t *testing.T, dir string) { writeFiles(t, dir, map[string]string{"solution/solve.sh": ""}) }, false},
		{"symlink", func(t *testing.T, dir string) { must(t, os.Symlink("task.toml", filepath.Join(dir, "link"))) }, false},
		{"move content between files", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"instruction.md": "", "task.toml": "version = \"1.0\"\ndo it\n"})
		}, false},
	}
	reference := digestOf(t, base, func(*testing.T, string) {})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := digestOf(t, base, tt.mutate)
			if (got == reference) != tt.same {
				t.Errorf("digest after %s = %s, reference %s, want same=%v", tt.name, got, reference, tt.same)
			}
		})
	}
}

func digestOf(t *testing.T, files map[string]string, mutate func(*testing.T, string)) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	mutate(t, dir)
	d, err := TaskDigest(dir)
	if err != nil {
		t.Fatalf("TaskDigest: %v", err)
	}
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
