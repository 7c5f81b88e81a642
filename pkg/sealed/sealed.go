// Package sealed seals a sandbox's secret values for transport through
// storage the sandbox reads with a presigned URL, by envelope encryption:
// the values are encrypted with AES-256-GCM (standard library) under a fresh
// 32-byte data key per launch, and the data key itself travels only wrapped
// (a key service's ciphertext, in the cloud a KMS CiphertextBlob bound to
// the launch by an encryption context). The sealed object sits in the blob
// store; the launch request carries its URL and the wrapped data key, never
// a plaintext key or value, so neither the ECS API (task overrides) nor its
// EventBridge events give anyone who can read them the secrets.
package sealed

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
)

// Secrets are the values one sandbox receives, by environment variable name.
type Secrets struct {
	Agent    map[string]string `json:"agent,omitempty"`
	Verifier map[string]string `json:"verifier,omitempty"`
	// Judge is the judge model's key, which only the verifier phase's
	// model gateway receives.
	Judge string `json:"judge,omitempty"`
}

// Env variables that carry the sealed secrets' location and wrapped data
// key (standard base64) to the runner.
const (
	URLEnv     = "GAUNTLET_SECRETS_URL"
	DataKeyEnv = "GAUNTLET_SECRETS_DATA_KEY"
)

// ContextKey is the encryption-context key that binds a wrapped data key to
// its launch: the key service unwraps it only for the same launch id, and
// IAM can require that the context is present.
const ContextKey = "gauntlet:launch"

// KeySize is the size of a data key in bytes (AES-256).
const KeySize = 32

// EncryptionContext is the encryption context of a launch's data key.
func EncryptionContext(launchID string) map[string]string {
	return map[string]string{ContextKey: launchID}
}

// DataKeySource issues a new data key for a launch: its plaintext (to seal
// with, then forget) and its wrapped form (to pass to the sandbox).
type DataKeySource interface {
	NewDataKey(ctx context.Context, launchID string) (plaintext, wrapped []byte, err error)
}

// DataKeyOpener unwraps a launch's wrapped data key (inside the sandbox).
type DataKeyOpener interface {
	OpenDataKey(ctx context.Context, wrapped []byte, launchID string) (plaintext []byte, err error)
}

// Seal encrypts s under the data key. The launch id is bound as additional
// data, so a sealed object cannot be replayed into another launch.
func Seal(s Secrets, key []byte, launchID string) ([]byte, error) {
	plain, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("seal secrets: %w", err)
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal secrets: %w", err)
	}
	return gcm.Seal(nonce, nonce, plain, []byte(launchID)), nil
}

// Open decrypts a sealed object with its data key. Errors never include values.
func Open(ciphertext, key []byte, launchID string) (Secrets, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return Secrets{}, err
	}
	if len(ciphertext) < gcm.NonceSize() {
		return Secrets{}, errors.New("open secrets: sealed object too short")
	}
	nonce, body := ciphertext[:gcm.NonceSize()], ciphertext[gcm.NonceSize():]
	plain, err := gcm.Open(nil, nonce, body, []byte(launchID))
	if err != nil {
		return Secrets{}, errors.New("open secrets: wrong key, wrong launch or a tampered object")
	}
	var s Secrets
	if err := json.Unmarshal(plain, &s); err != nil {
		return Secrets{}, errors.New("open secrets: the sealed object is not a secrets document")
	}
	return s, nil
}

// Wipe overwrites a plaintext key in memory once it is no longer needed.
func Wipe(key []byte) {
	clear(key)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets cipher: the data key has %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets cipher: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets cipher: %w", err)
	}
	return gcm, nil
}
