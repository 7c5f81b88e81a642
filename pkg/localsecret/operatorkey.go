package localsecret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Key is a 32-byte key the operator provides instead of the one the store
// keeps beside its file, so that reading the data dir is not enough to read
// the secrets. It remembers where it came from, for messages; nothing
// prints the key itself.
type Key struct {
	key    []byte
	source string
}

// Source names where the key came from ("$GAUNTLET_SECRETS_KEY", "key file
// /etc/gauntlet/secrets.key").
func (k Key) Source() string { return k.source }

// String is the key's source: a Key formatted by mistake never shows the key.
func (k Key) String() string { return k.source }

// IsZero reports whether k holds no key (the zero-setup default).
func (k Key) IsZero() bool { return len(k.key) == 0 }

// ParseKey reads an operator key from text: 64 hexadecimal digits or the
// standard base64 of 32 bytes (`head -c 32 /dev/urandom | base64`),
// surrounding whitespace ignored. source names where the text came from.
// Errors never contain the text.
func ParseKey(source string, text []byte) (Key, error) {
	t := bytes.TrimSpace(text)
	if len(t) == 0 {
		return Key{}, fmt.Errorf("secrets key from %s is empty; want 32 random bytes as 64 hex digits or base64 (head -c 32 /dev/urandom | base64)", source)
	}
	if len(t) == 2*keyBytes {
		if key, err := hex.DecodeString(string(t)); err == nil {
			return Key{key: key, source: source}, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(string(t)); err == nil && len(key) == keyBytes {
			return Key{key: key, source: source}, nil
		}
	}
	return Key{}, fmt.Errorf("secrets key from %s is not 32 bytes as 64 hex digits or base64 (it is %d characters); make one with head -c 32 /dev/urandom | base64", source, len(t))
}

// ReadKeyFile reads the operator's key file, which holds the key as
// ParseKey takes it. It refuses a file inside dataDir (a key beside the
// data it protects adds nothing against whoever can read that data), one
// that is not a regular file, and one its owner's group or others can read.
func ReadKeyFile(path, dataDir string) (Key, error) {
	source := "key file " + path
	abs, err := filepath.Abs(path)
	if err != nil {
		return Key{}, fmt.Errorf("secrets %s: %w", source, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Key{}, fmt.Errorf("secrets %s: %w", source, err)
	}
	if inside(real, dataDir) || inside(abs, dataDir) {
		return Key{}, fmt.Errorf("secrets %s is inside the data dir %s: a key beside the data it protects adds nothing; keep it outside (e.g. /etc/gauntlet/secrets.key, mode 0600)", source, dataDir)
	}
	info, err := os.Stat(real)
	switch {
	case err != nil:
		return Key{}, fmt.Errorf("secrets %s: %w", source, err)
	case !info.Mode().IsRegular():
		return Key{}, fmt.Errorf("secrets %s is not a regular file", source)
	case info.Mode().Perm()&0o077 != 0:
		return Key{}, fmt.Errorf("secrets %s has mode %v: others can read it; run chmod 600 %s", source, info.Mode().Perm(), path)
	case info.Size() > 4<<10:
		return Key{}, fmt.Errorf("secrets %s is %d bytes; a key file holds 32 bytes, or them as hex or base64", source, info.Size())
	}
	b, err := os.ReadFile(real)
	if err != nil {
		return Key{}, fmt.Errorf("secrets %s: %w", source, err)
	}
	return ParseKey(source, b)
}

// inside reports whether path lies in dir or below it, comparing the
// resolved forms as far as they exist.
func inside(path, dir string) bool {
	if dir == "" {
		return false
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	candidates := []string{d}
	if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
		candidates = append(candidates, real)
	}
	for _, c := range candidates {
		if rel, err := filepath.Rel(c, path); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// errKeyMismatch is wrapped by the errors of a file that does not decrypt
// with the key given.
var errKeyMismatch = errors.New("written with another key")
