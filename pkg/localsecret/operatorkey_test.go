package localsecret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

var wsRef = secret.Ref{Workspace: "w", Scope: secret.Workspace, Name: "TOKEN"}

// operatorKeyFile writes a fresh random key as base64 to a 0600 file
// outside any data dir and returns the key's bytes and the file.
func operatorKeyFile(t *testing.T) ([]byte, string) {
	t.Helper()
	key := make([]byte, keyBytes)
	for i := range key {
		key[i] = byte(i*37 + 11)
	}
	path := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, path
}

func readKey(t *testing.T, file, dataDir string) Key {
	t.Helper()
	k, err := ReadKeyFile(file, dataDir)
	if err != nil {
		t.Fatalf("ReadKeyFile(%s) = %v", file, err)
	}
	return k
}

func fileKind(t *testing.T, path string) string {
	t.Helper()
	f, _, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f.Key
}

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, keyBytes)
	for _, text := range []string{hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw) + "\n", " " + base64.RawURLEncoding.EncodeToString(raw)} {
		k, err := ParseKey("$GAUNTLET_SECRETS_KEY", []byte(text))
		if err != nil || !bytes.Equal(k.key, raw) {
			t.Errorf("ParseKey(%q) = %x, %v; want the 32 bytes", text, k.key, err)
		}
	}
	const notAKey = "correct horse battery staple"
	for _, text := range []string{"", notAKey, base64.StdEncoding.EncodeToString(raw[:16]), hex.EncodeToString(raw) + "00"} {
		_, err := ParseKey("$GAUNTLET_SECRETS_KEY", []byte(text))
		if err == nil || !strings.Contains(err.Error(), "$GAUNTLET_SECRETS_KEY") {
			t.Errorf("ParseKey(%q) = %v, want an error naming the source", text, err)
		}
		if err != nil && text != "" && strings.Contains(err.Error(), text) {
			t.Errorf("ParseKey error %q echoes the text", err)
		}
	}
	if k, _ := ParseKey("env", []byte(hex.EncodeToString(raw))); strings.Contains(k.String()+k.Source(), "abab") {
		t.Errorf("Key formats as %q: it shows the key", k.String())
	}
}

func TestReadKeyFileRefusals(t *testing.T) {
	dataDir := t.TempDir()
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, keyBytes))
	writeText := func(path, text string, mode os.FileMode) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write := func(path string, mode os.FileMode) string { return writeText(path, key, mode) }
	outside := t.TempDir()
	link := filepath.Join(outside, "link.key")
	if err := os.Symlink(write(filepath.Join(dataDir, "in.key"), 0o600), link); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"inside the data dir", filepath.Join(dataDir, "in.key"), "is inside the data dir " + dataDir},
		{"deep inside the data dir", write(filepath.Join(dataDir, "sub", "k"), 0o600), "is inside the data dir"},
		{"a link into the data dir", link, "is inside the data dir"},
		{"readable by others", write(filepath.Join(outside, "open.key"), 0o644), "has mode -rw-r--r--: others can read it; run chmod 600"},
		{"readable by the group", write(filepath.Join(outside, "group.key"), 0o640), "run chmod 600"},
		{"a directory", outside, "is not a regular file"},
		{"missing", filepath.Join(outside, "nope.key"), "no such file"},
		{"not a key", writeText(filepath.Join(outside, "bad.key"), "hunter2", 0o600), "is not 32 bytes as 64 hex digits or base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadKeyFile(tt.path, dataDir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadKeyFile(%s) = %v, want an error containing %q", tt.path, err, tt.want)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the key file's content", err)
			}
		})
	}
	if _, err := ReadKeyFile(write(filepath.Join(outside, "good.key"), 0o400), dataDir); err != nil {
		t.Errorf("ReadKeyFile(0400 file outside the data dir) = %v", err)
	}
}

// TestOperatorKeySealsWithoutADataDirKey: with an operator key the data dir
// holds the secret file only, which the data dir's contents alone cannot
// open, and the same key opens it again.
func TestOperatorKeySealsWithoutADataDirKey(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "secrets.json")
	_, keyFile := operatorKeyFile(t)
	s, err := OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), wsRef, plain); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dataDir)
	if len(entries) != 1 || entries[0].Name() != "secrets.json" {
		t.Errorf("data dir holds %v, want secrets.json only", entries)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(plain)) {
		t.Error("the secret file holds the value in plain text")
	}
	if kind := fileKind(t, path); kind != operatorKey {
		t.Errorf("file records key %q, want %q", kind, operatorKey)
	}
	again, err := OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := again.Get(t.Context(), wsRef); err != nil || v.Reveal() != plain {
		t.Errorf("Get after reopening with the key = %v", err)
	}
	// Without the key the zero-setup default says which key it needs
	// rather than making a new one.
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "sealed with an operator-provided key") {
		t.Errorf("Open without the operator key = %v, want an error saying the file needs it", err)
	}
	if _, err := os.Stat(path + ".key"); err == nil {
		t.Error("Open without the operator key created a data dir key")
	}
}

// TestOperatorKeyMismatch: another key is refused with an error naming
// where the key came from and never the key, the file untouched — even when
// the store holds no records.
func TestOperatorKeyMismatch(t *testing.T) {
	for _, records := range []int{0, 2} {
		dataDir := t.TempDir()
		path := filepath.Join(dataDir, "secrets.json")
		_, keyFile := operatorKeyFile(t)
		s, err := OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range records {
			ref := wsRef
			ref.Name = "TOKEN_" + string(rune('A'+i))
			if err := s.Put(t.Context(), ref, plain); err != nil {
				t.Fatal(err)
			}
		}
		if records == 0 { // a store whose records were all deleted
			if err := s.Put(t.Context(), wsRef, plain); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(t.Context(), wsRef); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := os.ReadFile(path)
		wrong := bytes.Repeat([]byte{0x5a}, keyBytes)
		wrongText := hex.EncodeToString(wrong)
		k, err := ParseKey("$GAUNTLET_SECRETS_KEY", []byte(wrongText))
		if err != nil {
			t.Fatal(err)
		}
		_, err = OpenWithKey(path, k, nil)
		if err == nil || !strings.Contains(err.Error(), "does not decrypt with the key from $GAUNTLET_SECRETS_KEY") {
			t.Fatalf("%d records: OpenWithKey(wrong key) = %v, want a mismatch naming the source", records, err)
		}
		for _, form := range []string{wrongText, base64.StdEncoding.EncodeToString(wrong), string(wrong)} {
			if strings.Contains(err.Error(), form) {
				t.Errorf("mismatch error %q shows the key", err)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%d records: a refused key changed the secret file", records)
		}
	}
}

// TestOperatorKeyTakesOverADataDirStore: a store sealed with the data dir's
// key (today's default) is re-encrypted with the operator's key on the
// first start with it, and the data dir's key removed; a crash between the
// two (the stale key back) is finished on the next start.
func TestOperatorKeyTakesOverADataDirStore(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "secrets.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	personal := secret.Ref{Workspace: "w", Scope: secret.Personal, Owner: "u1", Name: "MINE"}
	for _, ref := range []secret.Ref{wsRef, personal} {
		if err := s.Put(t.Context(), ref, secret.Value(plain+ref.Name)); err != nil {
			t.Fatal(err)
		}
	}
	oldKey, err := os.ReadFile(path + ".key")
	if err != nil {
		t.Fatal(err)
	}
	_, keyFile := operatorKeyFile(t)
	moved, err := OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
	if err != nil {
		t.Fatalf("OpenWithKey over a data-dir store = %v", err)
	}
	for _, ref := range []secret.Ref{wsRef, personal} {
		if v, err := moved.Get(t.Context(), ref); err != nil || v.Reveal() != plain+ref.Name {
			t.Errorf("Get(%s) after the move = %v", ref.Name, err)
		}
	}
	if _, err := os.Stat(path + ".key"); err == nil {
		t.Error("the data dir's key is still there after the move")
	}
	if kind := fileKind(t, path); kind != operatorKey {
		t.Errorf("file records key %q, want %q", kind, operatorKey)
	}
	// The old key no longer opens the file.
	if err := os.WriteFile(path+".key", oldKey, 0o600); err != nil {
		t.Fatal(err)
	}
	var f fileFormat
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	old, _ := newStore(path, oldKey, dataDirKey)
	if err := old.load(f, "old key"); err == nil {
		t.Error("the data dir's old key still opens the moved file")
	}
	// A crash after the rename left the old key: the next start removes it.
	again, err := OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Get(t.Context(), personal); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(path + ".key"); err == nil {
		t.Error("a stale data dir key survived a start with the operator's key")
	}
}

func TestOperatorKeyMatchesNeitherKey(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "secrets.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), wsRef, plain); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".key", bytes.Repeat([]byte{9}, keyBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	_, keyFile := operatorKeyFile(t)
	_, err = OpenWithKey(path, readKey(t, keyFile, dataDir), nil)
	if err == nil || !strings.Contains(err.Error(), "decrypts neither with the key from key file "+keyFile) {
		t.Errorf("OpenWithKey when neither key fits = %v, want an error naming both", err)
	}
	if _, err := os.Stat(path + ".key"); err != nil {
		t.Error("the data dir's key was removed though nothing was moved")
	}
}
