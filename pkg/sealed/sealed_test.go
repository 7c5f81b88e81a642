package sealed_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

func TestSealOpen(t *testing.T) {
	in := sealed.Secrets{Agent: map[string]string{"OPENAI_API_KEY": "sk-abc"}, Verifier: map[string]string{"JUDGE_KEY": "j-1"}}
	ct, key, err := sealed.Seal(in, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ct, []byte("sk-abc")) {
		t.Fatal("ciphertext holds the plain value")
	}
	got, err := sealed.Open(ct, key, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("Open (-want +got):\n%s", diff)
	}
	_, otherKey, _ := sealed.Seal(in, "launch-1")
	tampered := append([]byte{}, ct...)
	tampered[len(tampered)-1] ^= 1
	for name, try := range map[string]func() error{
		"other launch": func() error { _, err := sealed.Open(ct, key, "launch-2"); return err },
		"other key":    func() error { _, err := sealed.Open(ct, otherKey, "launch-1"); return err },
		"tampered":     func() error { _, err := sealed.Open(tampered, key, "launch-1"); return err },
		"bad key":      func() error { _, err := sealed.Open(ct, "short", "launch-1"); return err },
	} {
		err := try()
		if err == nil {
			t.Errorf("%s: Open succeeded, want an error", name)
		} else if bytes.Contains([]byte(err.Error()), []byte("sk-abc")) {
			t.Errorf("%s: error %q shows the value", name, err)
		}
	}
}
