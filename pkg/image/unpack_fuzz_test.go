package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layerFromScript builds a layer tar from a line script, one entry per
// line: "<type> <name> [<link or content>]", type f (file), d (dir), l
// (symlink), h (hard link), w (whiteout of name's base). The fuzzer mutates
// the script, not tar bytes: a mutated tar header almost always fails its
// checksum, so raw bytes would test little but the tar reader.
func layerFromScript(script string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, line := range strings.Split(script, "\n") {
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 {
			continue
		}
		arg := ""
		if len(fields) == 3 {
			arg = fields[2]
		}
		h := &tar.Header{Name: fields[1], Mode: 0o755}
		switch fields[0] {
		case "f":
			h.Typeflag, h.Size = tar.TypeReg, int64(len(arg))
		case "d":
			h.Typeflag = tar.TypeDir
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, arg
		case "h":
			h.Typeflag, h.Linkname = tar.TypeLink, arg
		case "w":
			dir, base := filepath.Split(fields[1])
			h.Typeflag, h.Name = tar.TypeReg, dir+whiteoutPrefix+base
		default:
			continue
		}
		if tw.WriteHeader(h) != nil {
			continue
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			_, _ = tw.Write([]byte(arg))
		}
	}
	_ = tw.Close()
	return buf.Bytes()
}

// FuzzApplyLayer applies fuzzed layers (each from a line script, see
// layerFromScript) over a fresh root whose sibling holds a sentinel: no
// layer may panic, write outside the root (through `..`, absolute names,
// symlinks or hard links), or touch the sentinel.
func FuzzApplyLayer(f *testing.F) {
	for _, seed := range []string{
		"d etc\nf etc/passwd root:x:0:0\nl bin usr/bin\nd usr/bin\nf bin/sh #!",
		"l escape ../outside\nf escape/owned x",
		"l abs /\nf abs/tmp/x y",
		"f ../../outside/sentinel overwritten",
		"l a b\nl b a\nf a/x y",
		"f target t\nh hard ../outside/sentinel\nh hard2 target",
		"d d\nf d/x 1\nw d/x\nf d/.wh..wh..opq\nf d/y 2",
		"l link ../outside\nw link/sentinel",
		"d a\nl a/b ../../outside\nf a/b/c z",
	} {
		f.Add(seed, "f after 1\nl after2 ../outside/sentinel")
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		base := t.TempDir()
		root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
		for _, d := range []string{root, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		sentinel := filepath.Join(outside, "sentinel")
		if err := os.WriteFile(sentinel, []byte("untouched"), 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := newApplier(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, script := range []string{first, second} {
			if err := a.apply(bytes.NewReader(layerFromScript(script))); err != nil {
				break // refused layers are fine; what was written before is checked below
			}
		}
		a.Close()
		if data, err := os.ReadFile(sentinel); err != nil || string(data) != "untouched" {
			t.Fatalf("the sentinel outside the root changed: %q, %v", data, err)
		}
		entries, err := os.ReadDir(outside)
		if err != nil || len(entries) != 1 {
			t.Fatalf("something was written beside the sentinel outside the root: %v, %v", entries, err)
		}
		top, err := os.ReadDir(base)
		if err != nil || len(top) != 2 {
			t.Fatalf("something was written beside the root: %v, %v", top, err)
		}
	})
}
