package localsecret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/secret/secrettest"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secrets.json")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	return s, path
}

func TestContract(t *testing.T) {
	secrettest.Run(t, func(t *testing.T) secret.Store { s, _ := openTemp(t); return s })
}

func TestContractShared(t *testing.T) {
	s, _ := openTemp(t)
	secrettest.Run(t, func(*testing.T) secret.Store { return s })
}

const plain = "sk-PLAINTEXT-must-never-hit-disk-7f3a"

// TestNoPlaintextOnDisk: neither the value nor its common encodings appear in
// any file the store writes, and both files are private.
func TestNoPlaintextOnDisk(t *testing.T) {
	s, path := openTemp(t)
	ref := secret.Ref{Workspace: "ws", Scope: secret.Personal, Owner: "u1", Name: "OPENAI_API_KEY"}
	if err := s.Put(t.Context(), ref, plain); err != nil {
		t.Fatal(err)
	}
	needles := [][]byte{[]byte(plain), []byte(base64.StdEncoding.EncodeToString([]byte(plain))), []byte(hex.EncodeToString([]byte(plain)))}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("data dir holds %d files, want the secret file and its key", len(entries))
	}
	for _, e := range entries {
		full := filepath.Join(filepath.Dir(path), e.Name())
		b, err := os.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s contains the secret value (or an encoding of it)", e.Name())
			}
		}
		info, err := os.Stat(full)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), perm)
		}
	}
}

func TestReopen(t *testing.T) {
	s, path := openTemp(t)
	ref := secret.Ref{Workspace: "ws", Scope: secret.Workspace, Name: "TOKEN"}
	if err := s.Put(t.Context(), ref, plain); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	if v, err := again.Get(t.Context(), ref); err != nil || v.Reveal() != plain {
		t.Errorf("Get after reopen = %d bytes, %v; want the stored value", len(v.Reveal()), err)
	}
}

// TestSwappedCiphertext: a ciphertext moved to another record does not
// decrypt, because the record's reference is the additional data.
func TestSwappedCiphertext(t *testing.T) {
	s, path := openTemp(t)
	alice := secret.Ref{Workspace: "ws", Scope: secret.Personal, Owner: "alice", Name: "KEY"}
	bob := secret.Ref{Workspace: "ws", Scope: secret.Personal, Owner: "bob", Name: "KEY"}
	if err := s.Put(t.Context(), alice, "alice-value"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), bob, "bob-value"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f.Records[0].sealed, f.Records[1].sealed = f.Records[1].sealed, f.Records[0].sealed
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "does not decrypt") {
		t.Errorf("Open with swapped ciphertexts = %v, want a decryption error", err)
	}
}

func TestKeyProblems(t *testing.T) {
	t.Run("missing key for an existing file", func(t *testing.T) {
		s, path := openTemp(t)
		if err := s.Put(t.Context(), secret.Ref{Workspace: "w", Scope: secret.Workspace, Name: "A"}, "v"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path + ".key"); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "key") {
			t.Errorf("Open without the key = %v, want an error naming the key", err)
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		_, path := openTemp(t)
		if err := os.Chmod(path+".key", 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("Open with a 0644 key = %v, want an error saying chmod 600", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		s, path := openTemp(t)
		if err := s.Put(t.Context(), secret.Ref{Workspace: "w", Scope: secret.Workspace, Name: "A"}, "v"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".key", bytes.Repeat([]byte{7}, keyBytes), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "does not decrypt") {
			t.Errorf("Open with a wrong key = %v, want a decryption error", err)
		}
	})
}

func TestConcurrentPuts(t *testing.T) {
	s, path := openTemp(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ref := secret.Ref{Workspace: "w", Scope: secret.Personal, Owner: strings.Repeat("u", i+1), Name: "K"}
			if err := s.Put(t.Context(), ref, secret.Value(ref.Owner)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ref := secret.Ref{Workspace: "w", Scope: secret.Personal, Owner: strings.Repeat("u", i+1), Name: "K"}
		if v, err := again.Get(t.Context(), ref); err != nil || v.Reveal() != ref.Owner {
			t.Errorf("Get(owner %d) after concurrent puts = %v", i, err)
		}
	}
}
