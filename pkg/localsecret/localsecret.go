// Package localsecret is the secret.Store of the embedded platform: secret
// values encrypted with AES-256-GCM and kept in one file in the data dir.
//
// The 32-byte key is generated with crypto/rand on first start and kept next
// to the file as <path>.key (mode 0600). Each value has its own random nonce,
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
	Version int          `json:"version"`
	Records []fileRecord `json:"records"`
}

const formatVersion = 1

// Open opens the store at path, creating its key on first start. It fails when
// the file exists but the key does not, or when the key does not decrypt it.
func Open(path string) (*Store, error) {
	key, err := loadOrCreateKey(path)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key %s.key: %w", path, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key %s.key: %w", path, err)
	}
	s := &Store{path: path, aead: aead, records: map[secret.Ref]sealed{}}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	keyPath := path + ".key"
	key, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(path); statErr == nil {
			return nil, fmt.Errorf("secret file %s exists but its key %s is missing: restore the key or move the file away", path, keyPath)
		}
		return createKey(keyPath)
	}
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

// load reads the file (if any) and checks that every record decrypts.
func (s *Store) load() error {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read secret file: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("secret file %s is corrupt: %w", s.path, err)
	}
	if f.Version != formatVersion {
		return fmt.Errorf("secret file %s has format version %d, want %d", s.path, f.Version, formatVersion)
	}
	for _, r := range f.Records {
		ref := secret.Ref{Workspace: r.Workspace, Scope: r.Scope, Owner: r.Owner, Name: r.Name}
		if _, err := s.open(ref, r.sealed); err != nil {
			return fmt.Errorf("secret file %s: %w (is %s.key the key it was written with?)", s.path, err, s.path)
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
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go ≥ 1.24)
	return sealed{Nonce: nonce, Ciphertext: s.aead.Seal(nil, nonce, []byte(value.Reveal()), additionalData(ref))}
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
	f := fileFormat{Version: formatVersion, Records: make([]fileRecord, 0, len(s.records))}
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
