package sealed_test

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, sealed.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	in := sealed.Secrets{Agent: map[string]string{"OPENAI_API_KEY": "sk-abc"}, Verifier: map[string]string{"JUDGE_KEY": "j-1"}}
	key := newKey(t)
	ct, err := sealed.Seal(in, key, "launch-1")
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
	tampered := append([]byte{}, ct...)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name   string
		ct     []byte
		key    []byte
		launch string
	}{
		{name: "other launch", ct: ct, key: key, launch: "launch-2"},
		{name: "other key", ct: ct, key: newKey(t), launch: "launch-1"},
		{name: "tampered", ct: tampered, key: key, launch: "launch-1"},
		{name: "short key", ct: ct, key: key[:16], launch: "launch-1"},
		{name: "short object", ct: ct[:4], key: key, launch: "launch-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sealed.Open(tt.ct, tt.key, tt.launch)
			if err == nil {
				t.Fatal("Open succeeded, want an error")
			}
			if bytes.Contains([]byte(err.Error()), []byte("sk-abc")) {
				t.Errorf("error %q shows the value", err)
			}
		})
	}
}

func TestSealRejectsAWrongSizeKey(t *testing.T) {
	if _, err := sealed.Seal(sealed.Secrets{}, make([]byte, 16), "l"); err == nil {
		t.Error("Seal with a 16-byte key succeeded, want an error")
	}
}

func TestWipe(t *testing.T) {
	k := newKey(t)
	sealed.Wipe(k)
	if diff := cmp.Diff(make([]byte, sealed.KeySize), k); diff != "" {
		t.Errorf("Wipe left key bytes (-want +got):\n%s", diff)
	}
}

func TestEncryptionContext(t *testing.T) {
	if diff := cmp.Diff(map[string]string{"gauntlet:launch": "L1"}, sealed.EncryptionContext("L1")); diff != "" {
		t.Errorf("EncryptionContext (-want +got):\n%s", diff)
	}
}
