// Package jwtauth verifies the JSON Web Tokens that callers of the cloud API
// present: RS256 signatures checked against the issuer's published key set
// (found by OpenID Connect discovery, or at <issuer>/.well-known/jwks.json),
// the issuer, the audience and the expiry. API Gateway's JWT authorizer has
// checked the token already; the API handler checks it again so that no
// route depends on the gateway's configuration for its security.
//
// A verified token maps to a workspace (claim "custom:workspace", as a
// Cognito custom attribute, or "gauntlet:workspace") and a user ("sub").
// With Cognito that is the ID token: its "aud" is the app client id, and
// unlike the access token it carries the user's custom attributes. A
// platform operator is a caller whose admin claim (default
// "cognito:groups") lists the admin group (default "gauntlet-admins").
package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Errors of Verify. ErrInvalidToken means the caller must send another
// token (401); ErrKeysUnavailable means the issuer's keys could not be read
// and the token could not be checked at all (503).
var (
	ErrInvalidToken    = errors.New("invalid token")
	ErrKeysUnavailable = errors.New("issuer keys unavailable")
)

// Workspace claims, in the order they are read.
const (
	ClaimWorkspace         = "custom:workspace"
	ClaimGauntletWorkspace = "gauntlet:workspace"
)

// Admin defaults: Cognito lists a user's groups in "cognito:groups" (in
// both its ID and access tokens); the stack's user pool has this group.
const (
	DefaultAdminClaim = "cognito:groups"
	DefaultAdminGroup = "gauntlet-admins"
)

// Config configures a Verifier.
type Config struct {
	// Issuer is the exact "iss" every token must carry (e.g.
	// https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf).
	Issuer string
	// Audience must be one of the token's "aud" values (a Cognito ID
	// token's "aud" is the app client id); a token without "aud" (a Cognito
	// access token) passes when its "client_id" equals it, as API Gateway's
	// JWT authorizer does.
	Audience string
	// JWKSURL is the key set's URL; empty = discovered from the issuer.
	JWKSURL string
	// HTTPClient fetches the keys (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	// Leeway tolerates clock skew on exp, nbf and iat (default 1 min).
	Leeway time.Duration
	// KeyTTL is how long fetched keys are used before they are fetched
	// again (default 1 h).
	KeyTTL time.Duration
	// MinRefresh is the least time between two fetches (default 1 min).
	MinRefresh time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AdminClaim names the claim that lists the caller's groups or roles
	// (default DefaultAdminClaim); AdminGroup is the value in it that makes
	// the caller a platform operator (default DefaultAdminGroup). The claim
	// may be a list of strings or one string of space-separated values.
	AdminClaim string
	AdminGroup string
}

// Identity is the caller a token names.
type Identity struct {
	Workspace string
	User      string
	// Admin reports a platform operator: the admin claim lists the admin group.
	Admin bool
}

// Verifier checks tokens of one issuer and audience.
type Verifier struct {
	cfg    Config
	keys   *keySet
	parser *jwt.Parser
}

// New returns a Verifier. It fetches nothing until the first token.
func New(cfg Config) (*Verifier, error) {
	switch {
	case !strings.HasPrefix(cfg.Issuer, "https://") && !strings.HasPrefix(cfg.Issuer, "http://"):
		return nil, fmt.Errorf("jwt issuer %q: must be an http(s) URL (GAUNTLET_JWT_ISSUER)", cfg.Issuer)
	case cfg.Audience == "":
		return nil, errors.New("jwt audience is empty (GAUNTLET_JWT_AUDIENCE)")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Leeway, time.Minute)
	def(&cfg.KeyTTL, time.Hour)
	def(&cfg.MinRefresh, time.Minute)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AdminClaim == "" {
		cfg.AdminClaim = DefaultAdminClaim
	}
	if cfg.AdminGroup == "" {
		cfg.AdminGroup = DefaultAdminGroup
	}
	v := &Verifier{
		cfg: cfg,
		keys: &keySet{client: cfg.HTTPClient, issuer: cfg.Issuer, jwksURL: cfg.JWKSURL,
			ttl: cfg.KeyTTL, minRefresh: cfg.MinRefresh, now: cfg.Now},
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{"RS256"}),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithTimeFunc(cfg.Now),
		),
	}
	return v, nil
}

type claims struct {
	jwt.RegisteredClaims
	ClientID          string `json:"client_id"`
	TokenUse          string `json:"token_use"` // Cognito: "id" or "access"
	Workspace         string `json:"custom:workspace"`
	GauntletWorkspace string `json:"gauntlet:workspace"`

	all map[string]json.RawMessage // every claim, for the configurable admin claim
}

// UnmarshalJSON decodes the named claims and keeps every claim raw.
func (c *claims) UnmarshalJSON(b []byte) error {
	type named claims // without this method
	if err := json.Unmarshal(b, (*named)(c)); err != nil {
		return err
	}
	return json.Unmarshal(b, &c.all)
}

// hasGroup reports whether the claim name lists group: a JSON list of
// strings holding it, or a string equal to it or holding it among
// space-separated values.
func (c *claims) hasGroup(name, group string) bool {
	raw, ok := c.all[name]
	if !ok {
		return false
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return slices.Contains(list, group)
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return slices.Contains(strings.Fields(one), group)
	}
	return false
}

var (
	workspacePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)
	userPattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@|+-]{0,255}$`)
)

// Verify checks the token and returns the identity it carries. Errors wrap
// ErrInvalidToken or ErrKeysUnavailable; they never contain the token.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	var c claims
	var keyErr error // what the key lookup found wrong, if anything
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			keyErr = fmt.Errorf("%w: no key id (kid) in the header", ErrInvalidToken)
			return nil, keyErr
		}
		k, err := v.keys.key(ctx, kid)
		keyErr = err
		return k, err
	})
	switch {
	case keyErr != nil:
		return Identity{}, keyErr
	case err != nil:
		return Identity{}, fmt.Errorf("%w: %s", ErrInvalidToken, reason(err))
	}
	if !slices.Contains(c.Audience, v.cfg.Audience) && !(len(c.Audience) == 0 && c.ClientID == v.cfg.Audience) {
		return Identity{}, fmt.Errorf("%w: audience is not %q", ErrInvalidToken, v.cfg.Audience)
	}
	ws := c.Workspace
	if ws == "" {
		ws = c.GauntletWorkspace
	} else if c.GauntletWorkspace != "" && c.GauntletWorkspace != ws {
		return Identity{}, fmt.Errorf("%w: claims %s and %s disagree", ErrInvalidToken, ClaimWorkspace, ClaimGauntletWorkspace)
	}
	switch {
	case ws == "" && c.TokenUse == "access":
		return Identity{}, fmt.Errorf("%w: no workspace claim (%s or %s): a Cognito access token carries no custom attributes; send the ID token", ErrInvalidToken, ClaimWorkspace, ClaimGauntletWorkspace)
	case ws == "":
		return Identity{}, fmt.Errorf("%w: no workspace claim (%s or %s)", ErrInvalidToken, ClaimWorkspace, ClaimGauntletWorkspace)
	case !workspacePattern.MatchString(ws):
		return Identity{}, fmt.Errorf("%w: workspace claim is not a workspace id", ErrInvalidToken)
	case !userPattern.MatchString(c.Subject):
		return Identity{}, fmt.Errorf("%w: sub claim is missing or not a user id", ErrInvalidToken)
	}
	return Identity{Workspace: ws, User: c.Subject, Admin: c.hasGroup(v.cfg.AdminClaim, v.cfg.AdminGroup)}, nil
}

// reason names what was wrong with a token in words safe to log and to
// return to its sender.
func reason(err error) string {
	for _, r := range []struct {
		err  error
		text string
	}{
		{jwt.ErrTokenMalformed, "malformed token"},
		{jwt.ErrTokenSignatureInvalid, "bad signature or signing method (RS256 only)"},
		{jwt.ErrTokenExpired, "token expired"},
		{jwt.ErrTokenNotValidYet, "token not valid yet"},
		{jwt.ErrTokenUsedBeforeIssued, "token issued in the future"},
		{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
		{jwt.ErrTokenRequiredClaimMissing, "required claim (exp) missing"},
		{jwt.ErrTokenUnverifiable, "unverifiable token"},
	} {
		if errors.Is(err, r.err) {
			return r.text
		}
	}
	return "invalid claims"
}
