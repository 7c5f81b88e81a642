package runner

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExtractTarGz unpacks mutated task bundles (seeds: the example tasks
// bundled as sync bundles them, and breakout cases): no panic, and nothing
// ever lands outside the destination.
func FuzzExtractTarGz(f *testing.F) {
	f.Add(tarGzEntries(f, []tarEntry{{name: "task.toml", typ: tar.TypeReg, body: "version = \"1.0\"\n"}, {name: "tests/", typ: tar.TypeDir}}))
	f.Add(tarGzEntries(f, []tarEntry{{name: "a", link: "/etc/shadow", typ: tar.TypeSymlink}}))
	f.Add(tarGzEntries(f, []tarEntry{{name: "d", link: "..", typ: tar.TypeSymlink}, {name: "d/x", typ: tar.TypeReg, body: "x"}}))
	f.Add(tarGzEntries(f, []tarEntry{{name: "../../x", typ: tar.TypeReg, body: "x"}}))
	for _, task := range []string{"fix-median", "word-frequency"} {
		f.Add(bundleOf(f, filepath.Join("../../examples/demo-bench", task)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = extractTarGz(bytes.NewReader(data), dest)
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("extractTarGz wrote beside its destination: %v", entries)
		}
	})
}

// bundleOf packs a task directory as a .tar.gz of its regular files.
func bundleOf(f *testing.F, dir string) []byte {
	f.Helper()
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		entries = append(entries, tarEntry{name: filepath.ToSlash(rel), typ: tar.TypeReg, body: string(data)})
		return nil
	})
	if err != nil || len(entries) == 0 || !strings.Contains(dir, "demo-bench") {
		f.Fatalf("bundle %s: %v", dir, err)
	}
	return tarGzEntries(f, entries)
}
