package runner

import (
	"context"
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

func TestOpenSealedSecrets(t *testing.T) {
	ct, key, err := sealed.Seal(sealed.Secrets{Agent: map[string]string{"OPENAI_API_KEY": "sk-1"}, Verifier: map[string]string{"JUDGE": "j"}}, "L1")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sealed" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(ct)
	}))
	defer srv.Close()

	spec := sandbox.Spec{LaunchID: "L1", Secrets: map[string]secret.Value{"EXISTING": "x"}}
	if err := openSealedSecrets(context.Background(), &spec, srv.URL+"/sealed", key, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]secret.Value{"EXISTING": "x", "OPENAI_API_KEY": "sk-1"}, spec.Secrets); diff != "" {
		t.Errorf("agent secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]secret.Value{"JUDGE": "j"}, spec.VerifierSecrets); diff != "" {
		t.Errorf("verifier secrets (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct{ url, key, launch string }{
		"missing key":  {srv.URL + "/sealed", "", "L1"},
		"404":          {srv.URL + "/gone", key, "L1"},
		"other launch": {srv.URL + "/sealed", key, "L2"},
	} {
		s := sandbox.Spec{LaunchID: tc.launch}
		err := openSealedSecrets(context.Background(), &s, tc.url, tc.key, nil)
		if err == nil {
			t.Errorf("%s: want an error", name)
		} else if strings.Contains(err.Error(), "sk-1") || strings.Contains(err.Error(), srv.URL) {
			t.Errorf("%s: error %q shows a value or the URL", name, err)
		}
	}
	var none sandbox.Spec
	if err := openSealedSecrets(context.Background(), &none, "", "", nil); err != nil || none.Secrets != nil {
		t.Errorf("no sealed secrets: err %v, secrets %v", err, none.Secrets)
	}
}

func TestInstallCopiesTheRunningBinary(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "sandbox-runner")
	if err := Install(dst); err != nil {
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
