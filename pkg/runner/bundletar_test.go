package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

type tarEntry struct {
	name, link, body string
	typ              byte
}

func tarGzEntries(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractTarGzRefusesBreakouts(t *testing.T) {
	file := func(name string) tarEntry { return tarEntry{name: name, typ: tar.TypeReg, body: "x"} }
	link := func(name, to string) tarEntry { return tarEntry{name: name, link: to, typ: tar.TypeSymlink} }
	tests := []struct {
		name    string
		entries []tarEntry
		wantErr string // "" = unpacks
	}{
		{"plain", []tarEntry{file("task.toml"), file("tests/test.sh")}, ""},
		{"link inside, to a later entry", []tarEntry{link("a.md", "tests/b.md"), file("tests/b.md")}, ""},
		{"dot dot name", []tarEntry{file("../escape")}, "leaves the bundle"},
		{"absolute name", []tarEntry{file("/etc/x")}, "leaves the bundle"},
		{"absolute link", []tarEntry{link("instruction.md", "/etc/shadow")}, `"instruction.md" is a symbolic link to "/etc/shadow"`},
		{"link up and out", []tarEntry{link("tests/x", "../../etc/passwd")}, `"tests/x" is a symbolic link`},
		{"file below an outside link", []tarEntry{link("d", "/tmp"), file("d/planted")}, "planted"},
		{"dangling link", []tarEntry{link("x", "nowhere")}, "does not resolve inside the bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := extractTarGz(bytes.NewReader(tarGzEntries(t, tt.entries)), t.TempDir())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("extractTarGz = %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("extractTarGz = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExtractTarGzBoundsEntries(t *testing.T) {
	entries := make([]tarEntry, maxBundleEntries+1)
	for i := range entries {
		entries[i] = tarEntry{name: "d/", typ: tar.TypeDir}
	}
	err := extractTarGz(bytes.NewReader(tarGzEntries(t, entries)), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "more than 100000 entries") {
		t.Fatalf("extractTarGz(%d entries) = %v, want the entry limit", len(entries), err)
	}
}
