// Package localsecret is the secret.Store of the embedded platform: secret
// values encrypted with AES-256-GCM and kept in one file in the data dir.
//
// By default (no setup) the 32-byte key is generated with crypto/rand on
// first start and kept next to the file as <path>.key (mode 0600): that
// protects a copy of the file alone, not a copy of the data dir. An
// operator who wants the secrets safe from whoever can read the data dir
// gives a key of their own (OpenWithKey: a key file outside the data dir,
// or the environment); a store sealed with the data dir's key is then
// re-encrypted with it once and the data dir's key removed. The file says
// which kind of key seals it and carries a sealed check value, so a wrong
// key is reported as such, never as damage. Each value has its own random nonce,
// and the record's reference (workspace, scope, owner, name) is the GCM
// additional data, so a ciphertext moved to another record fails to decrypt.
// The file (mode 0600) is rewritten atomically on every change. One process
// owns the file; within it the store is safe for concurrent use.
package localsecret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

const keyBytes = 32

// Store is the encrypted-file secret store.
type Store struct {
	path string
	aead cipher.AEAD
	// keyKind is what the file records of its key: dataDirKey or operatorKey.
	keyKind string
	check   sealed

	mu      sync.RWMutex
	records map[secret.Ref]sealed
}

var _ secret.Store = (*Store)(nil)

// sealed is one encrypted value.
type sealed struct {
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

// fileRecord is a record as stored in the file; names are not secret.
type fileRecord struct {
	Workspace string       `json:"workspace"`
	Scope     secret.Scope `json:"scope"`
	Owner     string       `json:"owner,omitempty"`
	Name      string       `json:"name"`
	sealed
}

type fileFormat struct {
	Version int `json:"version"`
	// Key says which key seals the file: dataDirKey or operatorKey. It is
	// absent from files written before operator keys.
	Key string `json:"key,omitempty"`
	// KeyCheck is an empty value sealed with the file's key, so that a wrong
	// key is told apart from a damaged record, even with no records.
	KeyCheck *sealed      `json:"key_check,omitempty"`
	Records  []fileRecord `json:"records"`
}

const formatVersion = 1

// The kinds of key a file records.
const (
	dataDirKey  = "data-dir"
	operatorKey = "operator"
)

// keyCheckAD is the additional data of the key check value.
var keyCheckAD = []byte("gauntlet-secret-key-check-v1")

// Open opens the store at path with the zero-setup key kept beside it as
// <path>.key, creating the key on first start. It fails when the file
// exists but the key does not, when the key does not decrypt it, and when
// the file is sealed with an operator's key (OpenWithKey).
func Open(path string) (*Store, error) {
	return OpenWithKey(path, Key{}, nil)
}

// OpenWithKey opens the store at path sealed with the operator's key; a
// zero key is Open's default. A store still sealed with the data dir's key
// is re-encrypted with the operator's key, atomically, and <path>.key is
// then removed (again on the next start if a crash came between the two),
// both logged on log (nil: slog.Default). A file that decrypts with
// neither key is an error naming the key's source, never the key.
func OpenWithKey(path string, key Key, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	f, exists, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if key.IsZero() {
		if f.Key == operatorKey {
			return nil, fmt.Errorf("secret file %s is sealed with an operator-provided key, and none was given: start with that key (a key file outside the data dir, or the environment; see docs/RELIABILITY.md)", path)
		}
		k, err := loadOrCreateKey(path)
		if err != nil {
			return nil, err
		}
		s, err := newStore(path, k, dataDirKey)
		if err != nil {
			return nil, err
		}
		if err := s.load(f, path+".key"); err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := newStore(path, key.key, operatorKey)
	if err != nil {
		return nil, err
	}
	err = s.load(f, key.Source())
	switch {
	case err == nil:
		if exists && (f.Key != operatorKey || f.KeyCheck == nil) {
			// An empty store of the data dir's key: mark it as the operator's.
			if err := s.persist(); err != nil {
				return nil, fmt.Errorf("secret file %s: %w", path, err)
			}
		}
	case errors.Is(err, errKeyMismatch) && f.Key != operatorKey && fileExists(path+".key"):
		if err := s.rekey(f, log, key); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	if err := removeDataDirKey(path, log); err != nil {
		return nil, err
	}
	return s, nil
}

func newStore(path string, key []byte, kind string) (*Store, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	s := &Store{path: path, aead: aead, keyKind: kind, records: map[secret.Ref]sealed{}}
	s.check = s.sealBytes(nil, keyCheckAD)
	return s, nil
}

// rekey moves a store sealed with the data dir's key to s's (operator)
// key: every record is opened with the old key and sealed again, and the
// file replaced in one rename, so a crash leaves either file whole.
func (s *Store) rekey(f fileFormat, log *slog.Logger, key Key) error {
	oldKey, err := readDataDirKey(s.path)
	if err != nil {
		return err
	}
	old, err := newStore(s.path, oldKey, dataDirKey)
	if err != nil {
		return err
	}
	if err := old.load(f, s.path+".key"); err != nil {
		return fmt.Errorf("secret file %s decrypts neither with the key from %s nor with %s.key: give the key it was written with", s.path, key.Source(), s.path)
	}
	for ref, sl := range old.records {
		v, err := old.open(ref, sl)
		if err != nil {
			return fmt.Errorf("secret file %s: %w", s.path, err)
		}
		s.records[ref] = s.seal(ref, v)
	}
	if err := s.persist(); err != nil {
		return fmt.Errorf("secret file %s: re-encrypt with the operator's key: %w", s.path, err)
	}
	log.Info("secrets re-encrypted with the operator's key", "file", s.path, "records", len(s.records), "key", key.Source())
	return nil
}

// removeDataDirKey removes <path>.key once the operator's key seals the
// file: left there it would only invite the belief that it still matters.
func removeDataDirKey(path string, log *slog.Logger) error {
	err := os.Remove(path + ".key")
	switch {
	case err == nil:
		log.Info("removed the data dir's secret key; the operator's key seals the secrets", "key_file", path+".key")
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return fmt.Errorf("remove the data dir's secret key: %w", err)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	keyPath := path + ".key"
	if _, err := os.Lstat(keyPath); errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(path); statErr == nil {
			return nil, fmt.Errorf("secret file %s exists but its key %s is missing: restore the key or move the file away", path, keyPath)
		}
		return createKey(keyPath)
	}
	return readDataDirKey(path)
}

// readDataDirKey reads the zero-setup key <path>.key.
func readDataDirKey(path string) ([]byte, error) {
	keyPath := path + ".key"
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read secret key: %w", err)
	}
	info, err := os.Stat(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read secret key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret key %s has mode %v: others can read it; run chmod 600 %s", keyPath, info.Mode().Perm(), keyPath)
	}
	if len(key) != keyBytes {
		return nil, fmt.Errorf("secret key %s is %d bytes, want %d", keyPath, len(key), keyBytes)
	}
	return key, nil
}

func createKey(keyPath string) ([]byte, error) {
	key := make([]byte, keyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate secret key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(keyPath), 0o700); err != nil {
		return nil, fmt.Errorf("create secret key: %w", err)
	}
	f, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create secret key: %w", err)
	}
	_, writeErr := f.Write(key)
	syncErr := f.Sync()
	if err := errors.Join(writeErr, syncErr, f.Close()); err != nil {
		_ = os.Remove(keyPath)
		return nil, fmt.Errorf("write secret key %s: %w", keyPath, err)
	}
	return key, nil
}

// readFile reads and decodes the file; a missing file is an empty one.
func readFile(path string) (f fileFormat, exists bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileFormat{}, false, nil
	}
	if err != nil {
		return fileFormat{}, false, fmt.Errorf("read secret file: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return fileFormat{}, false, fmt.Errorf("secret file %s is corrupt: %w", path, err)
	}
	if f.Version != formatVersion {
		return fileFormat{}, false, fmt.Errorf("secret file %s has format version %d, want %d", path, f.Version, formatVersion)
	}
	return f, true, nil
}

// load takes the file's records, checking that the key opens the file's
// key check and every record. keySource names the key in messages. A key
// that does not open the check (or, in a file without one, any record)
// is an error wrapping errKeyMismatch.
func (s *Store) load(f fileFormat, keySource string) error {
	if f.KeyCheck != nil {
		if !s.opens(*f.KeyCheck, keyCheckAD) {
			return fmt.Errorf("secret file %s does not decrypt with the key from %s: it was %w; give that key", s.path, keySource, errKeyMismatch)
		}
	}
	for _, r := range f.Records {
		ref := secret.Ref{Workspace: r.Workspace, Scope: r.Scope, Owner: r.Owner, Name: r.Name}
		if _, err := s.open(ref, r.sealed); err != nil {
			if f.KeyCheck == nil {
				return fmt.Errorf("secret file %s: %w (is the key from %s the one it was %w?)", s.path, err, keySource, errKeyMismatch)
			}
			return fmt.Errorf("secret file %s is damaged: %w, though its key check opens with the key from %s", s.path, err, keySource)
		}
		s.records[ref] = r.sealed
	}
	return nil
}

// additionalData binds a ciphertext to its record.
func additionalData(ref secret.Ref) []byte {
	b, _ := json.Marshal([]string{"gauntlet-secret-v1", ref.Workspace, string(ref.Scope), ref.Owner, ref.Name}) // strings always encode
	return b
}

func (s *Store) seal(ref secret.Ref, value secret.Value) sealed {
	return s.sealBytes([]byte(value.Reveal()), additionalData(ref))
}

func (s *Store) sealBytes(plain, ad []byte) sealed {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go ≥ 1.24)
	return sealed{Nonce: nonce, Ciphertext: s.aead.Seal(nil, nonce, plain, ad)}
}

// opens reports whether sl opens with the store's key and ad.
func (s *Store) opens(sl sealed, ad []byte) bool {
	if len(sl.Nonce) != s.aead.NonceSize() { // Open panics on another size
		return false
	}
	_, err := s.aead.Open(nil, sl.Nonce, sl.Ciphertext, ad)
	return err == nil
}

func (s *Store) open(ref secret.Ref, sl sealed) (secret.Value, error) {
	if len(sl.Nonce) != s.aead.NonceSize() {
		return "", fmt.Errorf("record %s/%s/%s/%s has a bad nonce", ref.Workspace, ref.Scope, ref.Owner, ref.Name)
	}
	plain, err := s.aead.Open(nil, sl.Nonce, sl.Ciphertext, additionalData(ref))
	if err != nil {
		return "", fmt.Errorf("record %s/%s/%s/%s does not decrypt", ref.Workspace, ref.Scope, ref.Owner, ref.Name)
	}
	return secret.Value(plain), nil
}

// normalize drops the owner of a workspace record, so it has one identity.
func normalize(ref secret.Ref) (secret.Ref, error) {
	if err := ref.Validate(); err != nil {
		return secret.Ref{}, err
	}
	if ref.Scope == secret.Workspace {
		ref.Owner = ""
	}
	return ref, nil
}

// Put encrypts and stores the value, replacing any previous one.
func (s *Store) Put(ctx context.Context, ref secret.Ref, value secret.Value) error {
	ref, err := normalize(ref)
	if err != nil {
		return fmt.Errorf("put secret: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had := s.records[ref]
	s.records[ref] = s.seal(ref, value)
	if err := s.persist(); err != nil {
		if had {
			s.records[ref] = prev
		} else {
			delete(s.records, ref)
		}
		return fmt.Errorf("put secret %s: %w", ref.Name, err)
	}
	return nil
}

// Get decrypts the value, or returns secret.ErrNotFound.
func (s *Store) Get(ctx context.Context, ref secret.Ref) (secret.Value, error) {
	ref, err := normalize(ref)
	if err != nil {
		return "", fmt.Errorf("get secret: %w", err)
	}
	s.mu.RLock()
	sl, ok := s.records[ref]
	s.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("get secret %s (%s): %w", ref.Name, ref.Scope, secret.ErrNotFound)
	}
	v, err := s.open(ref, sl)
	if err != nil {
		return "", fmt.Errorf("get secret: %w", err)
	}
	return v, nil
}

// Delete removes the record; a missing record is not an error.
func (s *Store) Delete(ctx context.Context, ref secret.Ref) error {
	ref, err := normalize(ref)
	if err != nil {
		return fmt.Errorf("delete secret: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had := s.records[ref]
	if !had {
		return nil
	}
	delete(s.records, ref)
	if err := s.persist(); err != nil {
		s.records[ref] = prev
		return fmt.Errorf("delete secret %s: %w", ref.Name, err)
	}
	return nil
}

// persist rewrites the file atomically: a synced temp file renamed over it.
// A write the full filesystem refused returns a *diskspace.Error naming the
// file's directory (the data dir), and the old file stays.
func (s *Store) persist() error {
	return diskspace.Wrap(filepath.Dir(s.path), s.rewrite())
}

func (s *Store) rewrite() error {
	check := s.check
	f := fileFormat{Version: formatVersion, Key: s.keyKind, KeyCheck: &check, Records: make([]fileRecord, 0, len(s.records))}
	for ref, sl := range s.records {
		f.Records = append(f.Records, fileRecord{Workspace: ref.Workspace, Scope: ref.Scope, Owner: ref.Owner, Name: ref.Name, sealed: sl})
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode secret file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write secret file: %w", err)
	}
	_, writeErr := tmp.Write(b)
	syncErr := tmp.Sync()
	if err := errors.Join(writeErr, syncErr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write secret file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write secret file: %w", err)
	}
	return nil
}
