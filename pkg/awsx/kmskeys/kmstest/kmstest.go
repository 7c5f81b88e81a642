// Package kmstest is an in-process stand-in for AWS KMS.
//
// It is an in-process stand-in for AWS KMS that speaks KMS's
// JSON 1.1 protocol (X-Amz-Target TrentService.GenerateDataKey and
// TrentService.Decrypt) to the real SDK client. It wraps data keys with
// AES-GCM under a key of its own and binds them to their encryption context
// as KMS does, so a Decrypt with another context fails; it records every
// request and can refuse operations per access key, like IAM.
//
// The adapter's happy paths run on moto's KMS (pkg/awsx/kmskeys' tests);
// this fake stays where a test needs what moto 5.2.1 does not do: record
// each request, or refuse an operation to one access key (moto enforces no
// IAM), and in the ECS driver's and the runner's tests, which run beside
// an in-process ECS (docs/DEPLOY.md, "Where moto 5.2.1 falls short").
package kmstest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// KeyARN is the ARN of the one key the server holds.
const KeyARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"

// Request is one recorded call.
type Request struct {
	Operation string
	// AccessKey is the access key id the request was signed with.
	AccessKey string
	// Body is the decoded JSON request.
	Body map[string]any
}

// Server is the fake KMS.
type Server struct {
	*httptest.Server
	// Allowed, when set, decides whether an access key may call an operation.
	Allowed func(accessKey, operation string) bool

	gcm      cipher.AEAD
	mu       sync.Mutex
	requests []Request
}

// New starts a server; it stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	master := make([]byte, 32)
	if _, err := rand.Read(master); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{gcm: gcm}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the calls so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

var credentialPattern = regexp.MustCompile(`Credential=([^/]+)/`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")
	if !ok {
		fail(w, "UnknownOperationException", "want X-Amz-Target TrentService.<operation>")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		fail(w, "SerializationException", err.Error())
		return
	}
	accessKey := ""
	if m := credentialPattern.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		accessKey = m[1]
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Operation: op, AccessKey: accessKey, Body: body})
	s.mu.Unlock()
	if s.Allowed != nil && !s.Allowed(accessKey, op) {
		fail(w, "AccessDeniedException", fmt.Sprintf("%s is not authorized to perform kms:%s", accessKey, op))
		return
	}
	switch op {
	case "GenerateDataKey":
		s.generate(w, body)
	case "Decrypt":
		s.decrypt(w, body)
	default:
		fail(w, "UnknownOperationException", op)
	}
}

func (s *Server) generate(w http.ResponseWriter, body map[string]any) {
	if body["KeyId"] != KeyARN {
		fail(w, "NotFoundException", fmt.Sprintf("key %v does not exist", body["KeyId"]))
		return
	}
	if body["KeySpec"] != "AES_256" {
		fail(w, "ValidationException", "want KeySpec AES_256")
		return
	}
	plain := make([]byte, 32)
	nonce := make([]byte, s.gcm.NonceSize())
	if _, err := rand.Read(plain); err != nil {
		fail(w, "KMSInternalException", err.Error())
		return
	}
	if _, err := rand.Read(nonce); err != nil {
		fail(w, "KMSInternalException", err.Error())
		return
	}
	blob := s.gcm.Seal(nonce, nonce, plain, contextAAD(body["EncryptionContext"]))
	reply(w, map[string]any{"KeyId": KeyARN, "Plaintext": plain, "CiphertextBlob": blob})
}

func (s *Server) decrypt(w http.ResponseWriter, body map[string]any) {
	var blob []byte
	if raw, ok := body["CiphertextBlob"].(string); ok {
		_ = json.Unmarshal([]byte(`"`+raw+`"`), &blob) // JSON 1.1 blobs are base64
	}
	if len(blob) < s.gcm.NonceSize() {
		fail(w, "InvalidCiphertextException", "ciphertext too short")
		return
	}
	if id, ok := body["KeyId"]; ok && id != KeyARN {
		fail(w, "IncorrectKeyException", "the ciphertext was not encrypted under this key")
		return
	}
	plain, err := s.gcm.Open(nil, blob[:s.gcm.NonceSize()], blob[s.gcm.NonceSize():], contextAAD(body["EncryptionContext"]))
	if err != nil {
		fail(w, "InvalidCiphertextException", "")
		return
	}
	reply(w, map[string]any{"KeyId": KeyARN, "Plaintext": plain, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
}

// contextAAD is the canonical form of an encryption context.
func contextAAD(v any) []byte {
	m, _ := v.(map[string]any)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%v\x00", k, m[k])
	}
	return []byte(b.String())
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
