// Package sealed seals a sandbox's secret values for transport through
// storage the sandbox reads with a presigned URL: AES-256-GCM (standard
// library) under a fresh random key per launch. The ciphertext sits in the
// blob store; only the key travels with the launch request, so neither the
// ECS API (task overrides) nor its EventBridge events ever carry a value.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Secrets are the values one sandbox receives, by environment variable name.
type Secrets struct {
	Agent    map[string]string `json:"agent,omitempty"`
	Verifier map[string]string `json:"verifier,omitempty"`
}

// Env variables that carry the sealed secrets' location and key to the runner.
const (
	URLEnv = "GAUNTLET_SECRETS_URL"
	KeyEnv = "GAUNTLET_SECRETS_KEY"
)

// Seal encrypts s under a new key and returns the ciphertext and the key
// (URL-safe base64). The launch id is bound as additional data, so a sealed
// object cannot be replayed into another launch.
func Seal(s Secrets, launchID string) (ciphertext []byte, key string, err error) {
	plain, err := json.Marshal(s)
	if err != nil {
		return nil, "", fmt.Errorf("seal secrets: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("seal secrets: %w", err)
	}
	gcm, err := newGCM(raw)
	if err != nil {
		return nil, "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("seal secrets: %w", err)
	}
	return gcm.Seal(nonce, nonce, plain, []byte(launchID)), base64.RawURLEncoding.EncodeToString(raw), nil
}

// Open decrypts a sealed object with its key. Errors never include values.
func Open(ciphertext []byte, key, launchID string) (Secrets, error) {
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return Secrets{}, errors.New("open secrets: the key is not a 32-byte base64url key")
	}
	gcm, err := newGCM(raw)
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

func newGCM(key []byte) (cipher.AEAD, error) {
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
