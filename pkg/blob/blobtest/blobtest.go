// Package blobtest is the contract suite for the blob port, in the manner of
// testing/fstest.TestFS: the file store and the S3 adapter both call Run.
// Each test writes under its own random key prefix, so a shared bucket works.
package blobtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
)

// Run runs the blob contract. newStore is called once per test and may
// return the same shared store every time.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s blob.Store, p string)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"GetMissing", testGetMissing},
		{"List", testList},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t), prefix())
		})
	}
}

func prefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "blobtest-" + hex.EncodeToString(b) + "/"
}

func put(t *testing.T, s blob.Store, key string, body []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(body)); err != nil {
		t.Fatalf("Put(%q) = %v", key, err)
	}
}

func get(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return b
}

func wantMissing(t *testing.T, s blob.Store, key string) {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
	}
}

func testPutGet(t *testing.T, s blob.Store, p string) {
	big := make([]byte, 6<<20+123) // over S3's 5 MiB multipart part size
	_, _ = rand.Read(big)
	tests := []struct {
		name string
		key  string
		body []byte
	}{
		{"small", p + "runs/r1/result.json", []byte(`{"reward":1}`)},
		{"empty", p + "runs/r1/empty.txt", nil},
		{"large", p + "bundles/task.tar.gz", big},
		{"odd characters", p + "logs/agent name (1)+é.txt", []byte("x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			put(t, s, tc.key, tc.body)
			if got := get(t, s, tc.key); !bytes.Equal(got, tc.body) {
				t.Errorf("Get(%q) returned %d bytes, want the %d put", tc.key, len(got), len(tc.body))
			}
		})
	}
}

func testOverwrite(t *testing.T, s blob.Store, p string) {
	put(t, s, p+"k", []byte("first, longer value"))
	put(t, s, p+"k", []byte("second"))
	if got := string(get(t, s, p+"k")); got != "second" {
		t.Errorf("Get after overwrite = %q, want %q", got, "second")
	}
}

func testGetMissing(t *testing.T, s blob.Store, p string) {
	wantMissing(t, s, p+"missing")
	put(t, s, p+"dir/file", []byte("x"))
	wantMissing(t, s, p+"dir")
	wantMissing(t, s, p+"dir/file/below")
}

func testList(t *testing.T, s blob.Store, p string) {
	objects := map[string]string{
		"runs/r1/a.json": "aa", "runs/r1/logs/agent.txt": "agent", "runs/r10/a.json": "a",
		"runs/r2/b.json": "bbb", "runs-x": "x", "top": "t",
	}
	for key, body := range objects {
		put(t, s, p+key, []byte(body))
	}
	info := func(keys ...string) []blob.Info {
		var out []blob.Info
		for _, k := range keys {
			out = append(out, blob.Info{Key: p + k, Size: int64(len(objects[k]))})
		}
		return out
	}
	tests := []struct {
		prefix string
		want   []blob.Info
	}{
		{"", info("runs-x", "runs/r1/a.json", "runs/r1/logs/agent.txt", "runs/r10/a.json", "runs/r2/b.json", "top")},
		{"runs/", info("runs/r1/a.json", "runs/r1/logs/agent.txt", "runs/r10/a.json", "runs/r2/b.json")},
		{"runs/r1", info("runs/r1/a.json", "runs/r1/logs/agent.txt", "runs/r10/a.json")},
		{"runs/r1/", info("runs/r1/a.json", "runs/r1/logs/agent.txt")},
		{"runs/r1/a", info("runs/r1/a.json")},
		{"runs", info("runs-x", "runs/r1/a.json", "runs/r1/logs/agent.txt", "runs/r10/a.json", "runs/r2/b.json")},
		{"nothing/", nil},
	}
	for _, tc := range tests {
		got, err := s.List(t.Context(), p+tc.prefix)
		if err != nil {
			t.Fatalf("List(%q) = %v", p+tc.prefix, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("List(%q) (-want +got):\n%s", p+tc.prefix, diff)
		}
	}
}

func testDelete(t *testing.T, s blob.Store, p string) {
	put(t, s, p+"a/b/c", []byte("c"))
	put(t, s, p+"a/d", []byte("d"))
	for _, key := range []string{p + "a/b/c", p + "a/b/c", p + "never", p + "a"} {
		if err := s.Delete(t.Context(), key); err != nil {
			t.Errorf("Delete(%q) = %v, want nil", key, err)
		}
	}
	wantMissing(t, s, p+"a/b/c")
	if got := string(get(t, s, p+"a/d")); got != "d" {
		t.Errorf("Get(a/d) after deleting a/b/c = %q, want %q", got, "d")
	}
	got, err := s.List(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]blob.Info{{Key: p + "a/d", Size: 1}}, got); diff != "" {
		t.Errorf("List after Delete (-want +got):\n%s", diff)
	}
}

func testInvalidKeys(t *testing.T, s blob.Store, p string) {
	for _, key := range []string{"", "/abs", p + "a//b", p + "a/../b", "../escape", p + "trailing/", p + `back\slash`, p + "./x"} {
		if err := s.Put(t.Context(), key, strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q) = nil, want an error", key)
		}
		if rc, err := s.Get(t.Context(), key); err == nil {
			rc.Close()
			t.Errorf("Get(%q) = nil error, want an error", key)
		}
		if err := s.Delete(t.Context(), key); err == nil {
			t.Errorf("Delete(%q) = nil, want an error", key)
		}
	}
}
