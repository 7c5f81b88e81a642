package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// TokenPrefix starts every API token gauntlet issues.
const TokenPrefix = "gt_"

// NewToken draws a new bearer token.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw token: %w", err)
	}
	return TokenPrefix + hex.EncodeToString(b[:]), nil
}

// HashToken returns the hex SHA-256 a token is stored under
// (records.Token.Hash); the token itself is never stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Identity is the authenticated caller.
type Identity struct {
	Workspace string
	User      string
	// Admin marks a platform operator, who may use the /v1/admin routes.
	Admin bool
}

type identityKey struct{}

func identity(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// tokenTTL is how long a looked-up API token is trusted without asking
// the store again.
const tokenTTL = 10 * time.Second

// tokenStore is what token authentication reads: a token by its hash and
// whether its user administers the workspace.
type tokenStore interface {
	TokenByHash(ctx context.Context, hash string) (records.Token, error)
	IsAdmin(ctx context.Context, ws, user string) (bool, error)
}

// tokenAuthenticator authenticates gauntlet's own API tokens by their
// stored hash, remembering each for tokenTTL.
type tokenAuthenticator struct {
	recs tokenStore
	now  func() time.Time

	mu    sync.Mutex
	known map[string]knownToken // by hash
}

type knownToken struct {
	id      Identity
	expires time.Time
}

func (a *tokenAuthenticator) Authenticate(ctx context.Context, token string) (Identity, error) {
	hash, now := HashToken(token), a.now()
	a.mu.Lock()
	k, ok := a.known[hash]
	a.mu.Unlock()
	if ok && now.Before(k.expires) {
		return k.id, nil
	}
	rec, err := a.recs.TokenByHash(ctx, hash)
	if errors.Is(err, records.ErrNotFound) {
		return Identity{}, fmt.Errorf("unknown API token: %w", ErrInvalidCredentials)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("look up token: %w", err)
	}
	admin, err := a.recs.IsAdmin(ctx, rec.Workspace, rec.User)
	if err != nil {
		return Identity{}, fmt.Errorf("look up token: %w", err)
	}
	id := Identity{Workspace: rec.Workspace, User: rec.User, Admin: admin}
	a.mu.Lock()
	if a.known == nil || len(a.known) >= maxCachedAnswers {
		a.known = map[string]knownToken{}
	}
	a.known[hash] = knownToken{id: id, expires: now.Add(tokenTTL)}
	a.mu.Unlock()
	return id, nil
}

func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= maxToken
}

// maxToken bounds a bearer token: API tokens are 67 bytes, but the JWTs of
// identity providers (NewWithAuthenticator) run to a few kilobytes.
const maxToken = 8 << 10
