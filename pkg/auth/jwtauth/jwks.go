package jwtauth

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxDocument bounds a discovery document or key set read from the issuer.
const maxDocument = 1 << 20

// keySet fetches an issuer's JSON Web Key Set and caches its RSA signing
// keys by key id. Keys are fetched again when the cache is older than ttl,
// or when a token names an unknown key id — at most once per minRefresh, so
// tokens with made-up key ids cannot make the verifier hammer the issuer.
type keySet struct {
	client     *http.Client
	issuer     string
	jwksURL    string // "" until discovered
	ttl        time.Duration
	minRefresh time.Duration
	now        func() time.Time

	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time // last successful fetch
	triedAt   time.Time // last attempt, successful or not
}

// key returns the public key with the key id kid.
func (s *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k, known := s.keys[kid]
	stale := s.fetchedAt.IsZero() || now.Sub(s.fetchedAt) >= s.ttl
	mayTry := s.triedAt.IsZero() || now.Sub(s.triedAt) >= s.minRefresh
	if (stale || !known) && mayTry {
		s.triedAt = now
		keys, err := s.fetch(ctx)
		switch {
		case err == nil:
			s.keys, s.fetchedAt = keys, now
			k, known = keys[kid]
		case !known:
			return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
		}
		// A failed refresh keeps serving the cached key; it is tried
		// again after minRefresh.
	}
	if !known {
		if s.fetchedAt.IsZero() {
			return nil, fmt.Errorf("%w: no key set fetched from %s yet", ErrKeysUnavailable, s.issuer)
		}
		return nil, fmt.Errorf("%w: unknown key id %q", ErrInvalidToken, kid)
	}
	return k, nil
}

func (s *keySet) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	if s.jwksURL == "" {
		u, err := s.discover(ctx)
		if err != nil {
			return nil, err
		}
		s.jwksURL = u
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := s.getJSON(ctx, s.jwksURL, &set); err != nil {
		return nil, err
	}
	keys := map[string]*rsa.PublicKey{}
	for i, k := range set.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") || (k.Alg != "" && k.Alg != "RS256") {
			continue // not an RS256 signing key: never usable here
		}
		pub, err := k.rsa()
		if err != nil {
			return nil, fmt.Errorf("key set %s: key %d (kid %q): %w", s.jwksURL, i, k.Kid, err)
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("key set %s holds no RS256 signing key", s.jwksURL)
	}
	return keys, nil
}

// discover reads the issuer's OpenID Connect discovery document for its
// jwks_uri, falling back to <issuer>/.well-known/jwks.json when the issuer
// publishes no discovery document.
func (s *keySet) discover(ctx context.Context) (string, error) {
	base := strings.TrimSuffix(s.issuer, "/")
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	err := s.getJSON(ctx, base+"/.well-known/openid-configuration", &doc)
	var status *statusError
	switch {
	case errors.As(err, &status) && status.code == http.StatusNotFound:
		return base + "/.well-known/jwks.json", nil
	case err != nil:
		return "", err
	case doc.Issuer != s.issuer:
		return "", fmt.Errorf("discovery document names issuer %q, want %q", doc.Issuer, s.issuer)
	case !strings.HasPrefix(doc.JWKSURI, "https://") && !strings.HasPrefix(doc.JWKSURI, "http://"):
		return "", fmt.Errorf("discovery document of %s has no http(s) jwks_uri", s.issuer)
	}
	return doc.JWKSURI, nil
}

type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: status %d", e.url, e.code) }

func (s *keySet) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{url: url, code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("GET %s: document over %d bytes", url, maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// jwk is one JSON Web Key (RFC 7517); only RSA public keys are decoded.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// minRSABits rejects keys too short to trust.
const minRSABits = 2048

func (k jwk) rsa() (*rsa.PublicKey, error) {
	n, err := base64.RawURLEncoding.DecodeString(k.N)
	if err != nil || len(n) == 0 {
		return nil, errors.New("modulus n is not base64url")
	}
	e, err := base64.RawURLEncoding.DecodeString(k.E)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("exponent e is not a base64url integer of at most 4 bytes")
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	if pub.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("modulus has %d bits, under %d", pub.N.BitLen(), minRSABits)
	}
	if pub.E < 3 || pub.E%2 == 0 {
		return nil, fmt.Errorf("exponent %d is not an odd integer ≥ 3", pub.E)
	}
	return pub, nil
}
