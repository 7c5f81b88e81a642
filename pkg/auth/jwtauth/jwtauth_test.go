package jwtauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
)

const audience = "console-client"

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// issuer is an httptest identity provider: an OpenID Connect discovery
// document (optional) and a JWKS holding the public halves of its keys.
type issuer struct {
	srv       *httptest.Server
	discovery bool

	mu        sync.Mutex
	keys      map[string]*rsa.PrivateKey
	jwksCalls int
	fail      bool
}

func newIssuer(t *testing.T, discovery bool, kids ...string) *issuer {
	t.Helper()
	is := &issuer{keys: map[string]*rsa.PrivateKey{}, discovery: discovery}
	for _, kid := range kids {
		is.addKey(t, kid)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if !is.discovery {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys"})
	})
	serveKeys := func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		is.jwksCalls++
		if is.fail {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		// An EC key and an encryption key are listed too and must be skipped.
		set.Keys = append(set.Keys, map[string]string{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"})
		for kid, k := range is.keys {
			set.Keys = append(set.Keys, map[string]string{
				"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
				"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
			})
		}
		_ = json.NewEncoder(w).Encode(set)
	}
	mux.HandleFunc("GET /keys", serveKeys)
	mux.HandleFunc("GET /.well-known/jwks.json", serveKeys)
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) addKey(t *testing.T, kid string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
}

func (is *issuer) setFail(fail bool) {
	is.mu.Lock()
	is.fail = fail
	is.mu.Unlock()
}

func (is *issuer) calls() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.jwksCalls
}

// claims returns a valid claim set; tests edit it.
func (is *issuer) claims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": is.srv.URL, "aud": audience, "sub": "user-1", "custom:workspace": "ws-1",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func (is *issuer) sign(t *testing.T, kid string, c jwt.MapClaims) string {
	t.Helper()
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	if k == nil {
		var err error
		if k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t *testing.T, is *issuer, clock *time.Time) *jwtauth.Verifier {
	t.Helper()
	v, err := jwtauth.New(jwtauth.Config{
		Issuer: is.srv.URL, Audience: audience, MinRefresh: time.Minute, KeyTTL: time.Hour,
		Now: func() time.Time { return *clock },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	is := newIssuer(t, true, "k1")
	clock := now
	v := newVerifier(t, is, &clock)
	edit := func(f func(c jwt.MapClaims)) string {
		c := is.claims()
		f(c)
		return is.sign(t, "k1", c)
	}
	hs256 := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, is.claims())
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString([]byte("guessable"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, is.claims())
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	forged := func() string {
		// Signed by a key the issuer never published, under a published kid.
		other := &issuer{keys: map[string]*rsa.PrivateKey{}}
		other.addKey(t, "k1")
		return other.sign(t, "k1", is.claims())
	}
	tests := []struct {
		name    string
		token   string
		want    jwtauth.Identity
		wantErr string
	}{
		{name: "cognito custom attribute", token: is.sign(t, "k1", is.claims()), want: jwtauth.Identity{Workspace: "ws-1", User: "user-1"}},
		{name: "gauntlet claim", token: edit(func(c jwt.MapClaims) {
			delete(c, "custom:workspace")
			c["gauntlet:workspace"] = "ws-2"
		}), want: jwtauth.Identity{Workspace: "ws-2", User: "user-1"}},
		{name: "audience list", token: edit(func(c jwt.MapClaims) { c["aud"] = []string{"other", audience} }),
			want: jwtauth.Identity{Workspace: "ws-1", User: "user-1"}},
		{name: "cognito access token: client_id, no aud", token: edit(func(c jwt.MapClaims) {
			delete(c, "aud")
			c["client_id"] = audience
		}), want: jwtauth.Identity{Workspace: "ws-1", User: "user-1"}},
		{name: "expiry within leeway", token: edit(func(c jwt.MapClaims) { c["exp"] = now.Add(-30 * time.Second).Unix() }),
			want: jwtauth.Identity{Workspace: "ws-1", User: "user-1"}},
		{name: "wrong audience", token: edit(func(c jwt.MapClaims) { c["aud"] = "someone-else" }), wantErr: "audience"},
		{name: "client_id does not stand in beside another aud", token: edit(func(c jwt.MapClaims) {
			c["aud"], c["client_id"] = "someone-else", audience
		}), wantErr: "audience"},
		{name: "expired", token: edit(func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), wantErr: "token expired"},
		{name: "no expiry", token: edit(func(c jwt.MapClaims) { delete(c, "exp") }), wantErr: "required claim"},
		{name: "not valid yet", token: edit(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), wantErr: "not valid yet"},
		{name: "issued in the future", token: edit(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }), wantErr: "issued in the future"},
		{name: "wrong issuer", token: edit(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }), wantErr: "wrong issuer"},
		{name: "forged signature", token: forged(), wantErr: "bad signature"},
		{name: "hs256 with a guessable secret", token: hs256(), wantErr: "RS256 only"},
		{name: "alg none", token: none(), wantErr: "RS256 only"},
		{name: "no kid", token: is.sign(t, "", is.claims()), wantErr: "no key id"},
		{name: "unknown kid", token: is.sign(t, "k9", is.claims()), wantErr: `unknown key id "k9"`},
		{name: "malformed", token: "not.a.jwt", wantErr: "malformed"},
		{name: "no workspace", token: edit(func(c jwt.MapClaims) { delete(c, "custom:workspace") }), wantErr: "no workspace claim"},
		{name: "workspace claims disagree", token: edit(func(c jwt.MapClaims) { c["gauntlet:workspace"] = "ws-other" }), wantErr: "disagree"},
		{name: "workspace with a key separator", token: edit(func(c jwt.MapClaims) { c["custom:workspace"] = "ws#1" }), wantErr: "not a workspace id"},
		{name: "no sub", token: edit(func(c jwt.MapClaims) { delete(c, "sub") }), wantErr: "sub claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr != "" {
				if !errors.Is(err, jwtauth.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Verify() error = %v, want ErrInvalidToken mentioning %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), tt.token) {
					t.Fatalf("Verify() error contains the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Verify() identity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyFetching(t *testing.T) {
	ctx := context.Background()
	t.Run("fallback to jwks.json without discovery", func(t *testing.T) {
		is := newIssuer(t, false, "k1")
		clock := now
		if _, err := newVerifier(t, is, &clock).Verify(ctx, is.sign(t, "k1", is.claims())); err != nil {
			t.Fatalf("Verify() error = %v", err)
		}
	})
	t.Run("keys are cached, unknown kids refetch at most once per MinRefresh", func(t *testing.T) {
		is := newIssuer(t, true, "k1")
		clock := now
		v := newVerifier(t, is, &clock)
		good := is.sign(t, "k1", is.claims())
		for range 3 {
			if _, err := v.Verify(ctx, good); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			_, _ = v.Verify(ctx, is.sign(t, "made-up", is.claims()))
		}
		if got := is.calls(); got != 1 {
			t.Fatalf("key set fetched %d times, want 1", got)
		}
		// Rotation: a new key is found once MinRefresh has passed.
		is.addKey(t, "k2")
		rotated := is.sign(t, "k2", is.claims())
		if _, err := v.Verify(ctx, rotated); !errors.Is(err, jwtauth.ErrInvalidToken) {
			t.Fatalf("Verify(new kid within MinRefresh) error = %v, want ErrInvalidToken", err)
		}
		clock = clock.Add(2 * time.Minute)
		if _, err := v.Verify(ctx, rotated); err != nil {
			t.Fatalf("Verify(new kid after MinRefresh) error = %v", err)
		}
		if got := is.calls(); got != 2 {
			t.Fatalf("key set fetched %d times, want 2", got)
		}
	})
	t.Run("issuer down", func(t *testing.T) {
		is := newIssuer(t, true, "k1")
		clock := now
		v := newVerifier(t, is, &clock)
		good := is.sign(t, "k1", is.claims())
		is.setFail(true)
		if _, err := v.Verify(ctx, good); !errors.Is(err, jwtauth.ErrKeysUnavailable) {
			t.Fatalf("Verify() error = %v, want ErrKeysUnavailable", err)
		}
		is.setFail(false)
		clock = clock.Add(2 * time.Minute)
		if _, err := v.Verify(ctx, good); err != nil {
			t.Fatalf("Verify() after recovery error = %v", err)
		}
		// Expired cache and a failing issuer: the cached key still serves.
		is.setFail(true)
		clock = clock.Add(2 * time.Hour)
		c := is.claims()
		c["iat"], c["exp"] = clock.Unix(), clock.Add(time.Hour).Unix()
		if _, err := v.Verify(ctx, is.sign(t, "k1", c)); err != nil {
			t.Fatalf("Verify() with stale keys error = %v", err)
		}
	})
}

func TestNewChecksConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  jwtauth.Config
		want string
	}{
		{name: "no issuer", cfg: jwtauth.Config{Audience: "a"}, want: "GAUNTLET_JWT_ISSUER"},
		{name: "no audience", cfg: jwtauth.Config{Issuer: "https://idp.example"}, want: "GAUNTLET_JWT_AUDIENCE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := jwtauth.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want one naming %s", err, tt.want)
			}
		})
	}
}
