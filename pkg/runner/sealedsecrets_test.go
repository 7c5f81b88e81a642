package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// fakeKeys unwraps a "wrapped" key that is the key itself prefixed with its
// launch id, as a key service bound to the launch would.
type fakeKeys struct{}

func (fakeKeys) OpenDataKey(_ context.Context, wrapped []byte, launchID string) ([]byte, error) {
	key, ok := bytes.CutPrefix(wrapped, []byte(launchID+":"))
	if !ok {
		return nil, errors.New("InvalidCiphertextException")
	}
	return bytes.Clone(key), nil
}

func TestOpenSealedSecrets(t *testing.T) {
	key := bytes.Repeat([]byte{7}, sealed.KeySize)
	ct, err := sealed.Seal(sealed.Secrets{Agent: map[string]string{"OPENAI_API_KEY": "sk-1"}, Verifier: map[string]string{"JUDGE": "j"}, Judge: "sk-judge-9"}, key, "L1")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := base64.StdEncoding.EncodeToString(append([]byte("L1:"), key...))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sealed" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(ct)
	}))
	defer srv.Close()

	spec := sandbox.Spec{LaunchID: "L1", Secrets: map[string]secret.Value{"EXISTING": "x"}}
	if err := openSealedSecrets(context.Background(), &spec, srv.URL+"/sealed", wrapped, fakeKeys{}, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]secret.Value{"EXISTING": "x", "OPENAI_API_KEY": "sk-1"}, spec.Secrets); diff != "" {
		t.Errorf("agent secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]secret.Value{"JUDGE": "j"}, spec.VerifierSecrets); diff != "" {
		t.Errorf("verifier secrets (-want +got):\n%s", diff)
	}
	if spec.JudgeKey != "sk-judge-9" {
		t.Errorf("judge key = %q, want the sealed one, apart from the verifier's secrets", spec.JudgeKey.Reveal())
	}

	tests := []struct {
		name, url, key, launch string
		keys                   sealed.DataKeyOpener
	}{
		{name: "missing key", url: srv.URL + "/sealed", launch: "L1", keys: fakeKeys{}},
		{name: "not base64", url: srv.URL + "/sealed", key: "%%%", launch: "L1", keys: fakeKeys{}},
		{name: "404", url: srv.URL + "/gone", key: wrapped, launch: "L1", keys: fakeKeys{}},
		{name: "other launch", url: srv.URL + "/sealed", key: wrapped, launch: "L2", keys: fakeKeys{}},
		{name: "no key service", url: srv.URL + "/sealed", key: wrapped, launch: "L1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sandbox.Spec{LaunchID: tc.launch}
			err := openSealedSecrets(context.Background(), &s, tc.url, tc.key, tc.keys, nil)
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), "sk-1") || strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q shows a value or the URL", err)
			}
		})
	}
	var none sandbox.Spec
	if err := openSealedSecrets(context.Background(), &none, "", "", nil, nil); err != nil || none.Secrets != nil {
		t.Errorf("no sealed secrets: err %v, secrets %v", err, none.Secrets)
	}
}

func TestInstallCopiesTheRunningBinary(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "sandbox-runner")
	if err := Install(dst, ""); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dst)
	if len(got) != len(want) || fi.Mode().Perm() != 0o755 {
		t.Errorf("installed %d bytes mode %v, want %d bytes mode 0755", len(got), fi.Mode().Perm(), len(want))
	}
}

// TestInstallPlacesTheStaticBinaries: with --static-bin the init container
// also puts the image's helper binaries (terminus-2) in bin/ beside the
// runner, executable by every uid, where the task's runner mounts them from;
// an image without them fails the install instead of a later attempt.
func TestInstallPlacesTheStaticBinaries(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "terminus-2"), []byte("#!/bin/true\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "sandbox-runner")
	if err := Install(dst, src); err != nil {
		t.Fatal(err)
	}
	bin := StaticBinDir(dst)
	if bin != filepath.Join(filepath.Dir(dst), "bin") {
		t.Errorf("StaticBinDir(%s) = %s, want bin/ beside it", dst, bin)
	}
	fi, err := os.Stat(filepath.Join(bin, "terminus-2"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed terminus-2: %v, %v; want mode 0755", fi, err)
	}
	entries, _ := os.ReadDir(bin)
	if len(entries) != 1 {
		t.Errorf("bin holds %d entries, want only terminus-2 (no temporary files, no directories)", len(entries))
	}
	if _, err := os.Stat(dst); err != nil {
		t.Errorf("runner not installed: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "sandbox-runner")
	if err := Install(empty, t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds none") {
		t.Errorf("Install from an empty static dir: err = %v, want one saying it holds none", err)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("the runner was installed although its static binaries were missing")
	}
}
