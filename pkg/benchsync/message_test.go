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

func TestRefreshMessageRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC)
	body, err := NewRefreshMessage("ws-1", "demo-bench", at).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema_version":2,"workspace":"ws-1","key":"demo-bench","refresh":true,"last_synced":"2026-03-01T12:00:00.000000005Z"}`; string(body) != want {
		t.Errorf("Encode = %s, want %s", body, want)
	}
	got, err := DecodeSyncMessage(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NewRefreshMessage("ws-1", "demo-bench", at), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestDecodeSyncMessageVersions: version 1 bodies written before refresh
// existed still decode as plain syncs; version 2 carries a refresh.
func TestDecodeSyncMessageVersions(t *testing.T) {
	tests := []struct {
		name, body string
		want       SyncMessage
	}{
		{"version 1", `{"schema_version":1,"workspace":"w","key":"k"}`, NewSyncMessage("w", "k")},
		{"version 2 refresh", `{"schema_version":2,"workspace":"w","key":"k","refresh":true,"last_synced":"2026-03-01T12:00:00Z"}`,
			NewRefreshMessage("w", "k", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))},
		{"version 2 unconditional refresh", `{"schema_version":2,"workspace":"w","key":"k","refresh":true}`, NewRefreshMessage("w", "k", time.Time{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSyncMessage([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeSyncMessage(%s): %v", tt.body, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeSyncMessage(%s) (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}

func TestDecodeSyncMessagePoison(t *testing.T) {
	tests := []struct{ name, body string }{
		{"unknown version", `{"schema_version":4,"workspace":"w","key":"k"}`},
		{"version 3 without resume", `{"schema_version":3,"workspace":"w","key":"k"}`},
		{"version 1 with resume", `{"schema_version":1,"workspace":"w","key":"k","resume":{"parked_at":"2026-03-01T12:00:00Z","builds":{"abababababababababababababababababababababababababababababababab":"b"}}}`},
		{"resume without parked_at", `{"schema_version":3,"workspace":"w","key":"k","resume":{"builds":{"abababababababababababababababababababababababababababababababab":"b"}}}`},
		{"resume without builds", `{"schema_version":3,"workspace":"w","key":"k","resume":{"parked_at":"2026-03-01T12:00:00Z","builds":{}}}`},
		{"resume with a bad build key", `{"schema_version":3,"workspace":"w","key":"k","resume":{"parked_at":"2026-03-01T12:00:00Z","builds":{"../x":"b"}}}`},
		{"resume with an empty handle", `{"schema_version":3,"workspace":"w","key":"k","resume":{"parked_at":"2026-03-01T12:00:00Z","builds":{"abababababababababababababababababababababababababababababababab":""}}}`},
		{"resume of a sync with last_synced", `{"schema_version":3,"workspace":"w","key":"k","last_synced":"2026-03-01T12:00:00Z","resume":{"parked_at":"2026-03-01T12:00:00Z","builds":{"abababababababababababababababababababababababababababababababab":"b"}}}`},
		{"version 1 with refresh", `{"schema_version":1,"workspace":"w","key":"k","refresh":true}`},
		{"version 1 with last_synced", `{"schema_version":1,"workspace":"w","key":"k","last_synced":"2026-03-01T12:00:00Z"}`},
		{"version 2 without refresh", `{"schema_version":2,"workspace":"w","key":"k"}`},
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

func TestResumeMessageRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	builds := map[string]string{"abababababababababababababababababababababababababababababababab": "gauntlet-dev-images:0f1e"}
	for _, m := range []SyncMessage{
		NewResumeMessage(NewSyncMessage("ws-1", "tb2"), at, builds),
		NewResumeMessage(NewRefreshMessage("ws-1", "tb2", at.Add(-time.Hour)), at, builds),
	} {
		body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeSyncMessage(body)
		if err != nil {
			t.Fatalf("DecodeSyncMessage(%s): %v", body, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", body, diff)
		}
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
