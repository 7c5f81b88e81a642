package fsblob

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/blob/blobtest"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
)

func TestContract(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestContractShared(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Run(t, func(*testing.T) blob.Store { return s })
}

// TestLayout: objects are plain files at their key's path, no temp file is
// left behind and the reserved temp dir is neither listed nor addressable.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "runs/r1/result.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs", "r1", "result.json"))
	if err != nil || string(b) != "{}" {
		t.Errorf("file at key path = %q, %v", b, err)
	}
	tmp, err := os.ReadDir(filepath.Join(dir, tmpDir))
	if err != nil || len(tmp) != 0 {
		t.Errorf("temp dir holds %v (%v), want nothing", tmp, err)
	}
	if err := s.Put(t.Context(), ".tmp/x", strings.NewReader("x")); err == nil {
		t.Error("Put(.tmp/x) = nil, want an error for the reserved dir")
	}
	got, err := s.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]blob.Info{{Key: "runs/r1/result.json", Size: 2}}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestValidKey(t *testing.T) {
	tests := []struct {
		key     string
		wantErr bool
	}{
		{"a", false}, {"a/b.c/d-e_f", false}, {"..a/b..", false},
		{"", true}, {"/a", true}, {"a/", true}, {"a//b", true}, {"a/../b", true}, {"..", true},
		{".", true}, {`a\b`, true}, {"a\x00b", true}, {".tmp/a", true}, {strings.Repeat("k", 1025), true},
	}
	for _, tc := range tests {
		if err := ValidKey(tc.key); (err != nil) != tc.wantErr {
			t.Errorf("ValidKey(%q) = %v, want error %v", tc.key, err, tc.wantErr)
		}
	}
}

// TestPutOnAFullFilesystem: a Put the full filesystem refuses is an
// out-of-space error naming the store's directory, leaves neither the
// object nor a temp file, and the same Put succeeds once space returns.
func TestPutOnAFullFilesystem(t *testing.T) {
	dir := diskspacetest.Mount(t, 4)
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	free := diskspacetest.Fill(t, dir)
	err = s.Put(ctx, "runs/r1/result.json", strings.NewReader(strings.Repeat("x", 64<<10)))
	if e, ok := diskspace.As(err); !ok || e.Dir != dir {
		t.Fatalf("Put on a full filesystem = %v, want a *diskspace.Error naming %s", err, dir)
	}
	if _, err := s.Get(ctx, "runs/r1/result.json"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get after the refused Put = %v, want not found", err)
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, tmpDir)); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
	free()
	if err := s.Put(ctx, "runs/r1/result.json", strings.NewReader("{}")); err != nil {
		t.Fatalf("Put after space returned = %v", err)
	}
}
