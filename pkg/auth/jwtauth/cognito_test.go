package jwtauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
)

// cognitoIDToken has the claims of a Cognito ID token: aud is the app
// client id, custom attributes and groups are present.
func cognitoIDToken(is *issuer) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": is.srv.URL, "aud": audience, "sub": "3f1c2a9e-0d4b-4c1e-9a57-2b7f0c1d9e88", "token_use": "id",
		"cognito:username": "3f1c2a9e-0d4b-4c1e-9a57-2b7f0c1d9e88", "email": "ops@example.com", "email_verified": true,
		"custom:workspace": "w-0123456789abcdef", "auth_time": now.Add(-time.Minute).Unix(),
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// cognitoAccessToken has the claims of a Cognito access token: no aud,
// client_id instead, groups but never custom attributes.
func cognitoAccessToken(is *issuer) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": is.srv.URL, "client_id": audience, "sub": "3f1c2a9e-0d4b-4c1e-9a57-2b7f0c1d9e88", "token_use": "access",
		"scope": "aws.cognito.signin.user.admin", "username": "3f1c2a9e-0d4b-4c1e-9a57-2b7f0c1d9e88",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func TestCognitoTokens(t *testing.T) {
	is := newIssuer(t, true, "k1")
	clock := now
	const sub = "3f1c2a9e-0d4b-4c1e-9a57-2b7f0c1d9e88"
	with := func(c jwt.MapClaims, f func(jwt.MapClaims)) string {
		f(c)
		return is.sign(t, "k1", c)
	}
	tests := []struct {
		name    string
		cfg     func(*jwtauth.Config)
		token   string
		want    jwtauth.Identity
		wantErr string
	}{
		{name: "id token", token: is.sign(t, "k1", cognitoIDToken(is)),
			want: jwtauth.Identity{Workspace: "w-0123456789abcdef", User: sub}},
		{name: "id token of an admin", token: with(cognitoIDToken(is), func(c jwt.MapClaims) {
			c["cognito:groups"] = []string{"readers", "gauntlet-admins"}
		}), want: jwtauth.Identity{Workspace: "w-0123456789abcdef", User: sub, Admin: true}},
		{name: "other groups are no admin", token: with(cognitoIDToken(is), func(c jwt.MapClaims) {
			c["cognito:groups"] = []string{"gauntlet-admins-not", "readers"}
		}), want: jwtauth.Identity{Workspace: "w-0123456789abcdef", User: sub}},
		{name: "id token for another app client", token: with(cognitoIDToken(is), func(c jwt.MapClaims) { c["aud"] = "other-client" }),
			wantErr: "audience"},
		{name: "access token has no workspace", token: is.sign(t, "k1", cognitoAccessToken(is)),
			wantErr: "send the ID token"},
		{name: "access token with a workspace added by a pre-token trigger", token: with(cognitoAccessToken(is), func(c jwt.MapClaims) {
			c["custom:workspace"] = "w-1"
			c["cognito:groups"] = []string{"gauntlet-admins"}
		}), want: jwtauth.Identity{Workspace: "w-1", User: sub, Admin: true}},
		{name: "configured claim and group: string of roles", cfg: func(c *jwtauth.Config) {
			c.AdminClaim, c.AdminGroup = "roles", "platform-operator"
		}, token: with(cognitoIDToken(is), func(c jwt.MapClaims) {
			c["roles"] = "viewer platform-operator"
			c["cognito:groups"] = []string{"gauntlet-admins"} // not the configured claim
		}), want: jwtauth.Identity{Workspace: "w-0123456789abcdef", User: sub, Admin: true}},
		{name: "configured claim of the wrong type", cfg: func(c *jwtauth.Config) { c.AdminClaim = "roles" },
			token: with(cognitoIDToken(is), func(c jwt.MapClaims) { c["roles"] = map[string]any{"gauntlet-admins": true} }),
			want:  jwtauth.Identity{Workspace: "w-0123456789abcdef", User: sub}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := jwtauth.Config{Issuer: is.srv.URL, Audience: audience, Now: func() time.Time { return clock }}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			v, err := jwtauth.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr != "" {
				if !errors.Is(err, jwtauth.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Verify() error = %v, want ErrInvalidToken mentioning %q", err, tt.wantErr)
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
