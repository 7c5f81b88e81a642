package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

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
}

type identityKey struct{}

func identity(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// tokenAuthenticator authenticates gauntlet's own API tokens by their
// stored hash.
type tokenAuthenticator struct{ recs *records.Store }

func (a tokenAuthenticator) Authenticate(ctx context.Context, token string) (Identity, error) {
	rec, err := a.recs.TokenByHash(ctx, HashToken(token))
	if errors.Is(err, records.ErrNotFound) {
		return Identity{}, fmt.Errorf("unknown API token: %w", ErrInvalidCredentials)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("look up token: %w", err)
	}
	return Identity{Workspace: rec.Workspace, User: rec.User}, nil
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
