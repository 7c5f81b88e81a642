package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

const clientID = "app-client-1"

// idp is an httptest identity provider publishing one RS256 key.
type idp struct {
	url string
	key *rsa.PrivateKey
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// idToken signs a Cognito-shaped ID token for sub in ws with groups.
func (p *idp) idToken(t *testing.T, sub, ws string, groups ...string) string {
	t.Helper()
	c := jwt.MapClaims{"iss": p.url, "aud": clientID, "sub": sub, "token_use": "id", "custom:workspace": ws,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	if len(groups) > 0 {
		c["cognito:groups"] = groups
	}
	return p.sign(t, c)
}

func (p *idp) sign(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(p.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cloudAPI serves the API as the cloud wires it: JWTs of the identity
// provider, checked by cloud.JWTAuthenticator, on an SQLite table.
func cloudAPI(t *testing.T, p *idp) (*httptest.Server, *records.Store) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	recs := records.New(db.Table())
	v, err := jwtauth.New(jwtauth.Config{Issuer: p.url, Audience: clientID})
	if err != nil {
		t.Fatal(err)
	}
	h := api.NewWithAuthenticator(api.Config{Records: api.RecordsOf(recs), Logger: slog.New(slog.DiscardHandler)}, cloud.JWTAuthenticator{Verifier: v})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, recs
}

func send(t *testing.T, srv *httptest.Server, token, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

// TestCloudFirstWorkspace: with the cloud's authenticator, an operator's ID
// token (cognito:groups ∋ gauntlet-admins) provisions a workspace; its
// first user, whose ID token carries custom:workspace, sees it with active
// billing. No API token is minted in the cloud.
func TestCloudFirstWorkspace(t *testing.T) {
	p := newIDP(t)
	srv, _ := cloudAPI(t, p)
	// The operator's own custom:workspace need not exist yet.
	operator := p.idToken(t, "op-sub", "w-operators", jwtauth.DefaultAdminGroup)

	var ws v1.AdminWorkspaceView
	if got := send(t, srv, operator, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "acme", ID: "acme"}, &ws); got != http.StatusCreated || ws.ID != "acme" {
		t.Fatalf("create workspace = %d %+v, want 201 with id acme", got, ws)
	}
	var b v1.AdminBillingView
	if got := send(t, srv, operator, "PUT", "/v1/admin/workspaces/"+ws.ID+"/billing", v1.SetBillingRequest{Status: "active", Plan: "team"}, &b); got != http.StatusOK || !b.CanSubmit {
		t.Fatalf("set billing = %d %+v, want 200 and can submit", got, b)
	}
	var u v1.AdminUserView
	if got := send(t, srv, operator, "POST", "/v1/admin/workspaces/"+ws.ID+"/users", v1.AddUserRequest{User: "user-sub", Email: "u@acme.example"}, &u); got != http.StatusCreated || u.Token != "" {
		t.Fatalf("add user = %d %+v, want 201 without a token", got, u)
	}

	user := p.idToken(t, "user-sub", ws.ID)
	var view v1.WorkspaceView
	if got := send(t, srv, user, "GET", "/v1/workspace", nil, &view); got != http.StatusOK {
		t.Fatalf("GET /v1/workspace with the user's ID token = %d, want 200", got)
	}
	if view.ID != ws.ID || view.Name != "acme" || view.User.Name != "u@acme.example" || !view.Billing.CanSubmit {
		t.Errorf("user's workspace = %+v, want acme, the email as name, billing that accepts runs", view)
	}

	tests := []struct {
		name  string
		token string
		want  int
		code  string
	}{
		{"member without the admin group", user, http.StatusForbidden, v1.CodeForbidden},
		{"another group", p.idToken(t, "x-sub", ws.ID, "readers"), http.StatusForbidden, v1.CodeForbidden},
		{"access token (no custom attributes)", p.sign(t, jwt.MapClaims{"iss": p.url, "client_id": clientID, "sub": "op-sub",
			"token_use": "access", "cognito:groups": []string{jwtauth.DefaultAdminGroup},
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}), http.StatusUnauthorized, v1.CodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e v1.Error
			if got := send(t, srv, tt.token, "GET", "/v1/admin/workspaces", nil, &e); got != tt.want || e.Code != tt.code {
				t.Fatalf("GET /v1/admin/workspaces = %d %+v, want %d %s", got, e, tt.want, tt.code)
			}
			if tt.want == http.StatusUnauthorized && !strings.Contains(e.Message, "ID token") {
				t.Errorf("401 message %q does not say to send the ID token", e.Message)
			}
		})
	}
}
