package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
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

// authenticated requires a valid bearer token and puts the caller's
// identity into the request context.
func (h *Handler) authenticated(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gauntlet"`)
			return errorf(http.StatusUnauthorized, CodeUnauthorized, "send an API token as `Authorization: Bearer <token>`")
		}
		rec, err := h.cfg.Records.TokenByHash(r.Context(), HashToken(token))
		if errors.Is(err, records.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gauntlet", error="invalid_token"`)
			return errorf(http.StatusUnauthorized, CodeUnauthorized, "the API token is not valid")
		}
		if err != nil {
			return fmt.Errorf("look up token: %w", err)
		}
		ctx := context.WithValue(r.Context(), identityKey{}, Identity{Workspace: rec.Workspace, User: rec.User})
		return next(w, r.WithContext(ctx))
	}
}

func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= 512
}
