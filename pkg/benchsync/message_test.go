package benchsync

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSyncMessageRoundTrip(t *testing.T) {
	body, err := NewSyncMessage("ws-1", "demo-bench").Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema_version":1,"workspace":"ws-1","key":"demo-bench"}`; string(body) != want {
		t.Errorf("Encode = %s, want %s", body, want)
	}
	got, err := DecodeSyncMessage(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NewSyncMessage("ws-1", "demo-bench"), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeSyncMessagePoison(t *testing.T) {
	tests := []struct{ name, body string }{
		{"unknown version", `{"schema_version":2,"workspace":"w","key":"k"}`},
		{"no version", `{"workspace":"w","key":"k"}`},
		{"unknown field", `{"schema_version":1,"workspace":"w","key":"k","extra":1}`},
		{"no key", `{"schema_version":1,"workspace":"w"}`},
		{"no workspace", `{"schema_version":1,"key":"k"}`},
		{"trailing data", `{"schema_version":1,"workspace":"w","key":"k"} {}`},
		{"not JSON", `sync please`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeSyncMessage([]byte(tt.body)); !errors.Is(err, ErrPoison) {
				t.Errorf("DecodeSyncMessage(%s) = %v, want ErrPoison", tt.body, err)
			}
		})
	}
}

// TestWriteBundleReproducible: the same files give the same bytes whatever
// their times and non-executable permission bits.
func TestWriteBundleReproducible(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	copyExample(t, "file-permissions", a)
	copyExample(t, "file-permissions", b)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	err := filepath.Walk(b, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() && info.Mode().Perm()&0o111 == 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return err
			}
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	var x, y bytes.Buffer
	if err := WriteBundle(&x, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteBundle(&y, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Errorf("bundles differ: %d and %d bytes", x.Len(), y.Len())
	}
	if _, err := os.Stat(filepath.Join(a, "solution", "solve.sh")); err != nil {
		t.Fatalf("example changed shape: %v", err)
	}
}
