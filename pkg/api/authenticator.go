package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Authenticator maps a bearer token to the caller. The default (New) looks
// API tokens up by hash in the records; the cloud API wires a JWT verifier
// (pkg/auth/jwtauth) with NewWithAuthenticator.
type Authenticator interface {
	// Authenticate returns the caller the token names. A token it rejects
	// gives an error wrapping ErrInvalidCredentials (401); when the token
	// cannot be checked at all (the identity provider's keys are
	// unreachable) the error wraps ErrAuthUnavailable (503).
	Authenticate(ctx context.Context, token string) (Identity, error)
}

// Errors an Authenticator returns.
var (
	ErrInvalidCredentials = errors.New("invalid credentials")
	ErrAuthUnavailable    = errors.New("authentication unavailable")
)

// NewWithAuthenticator returns the API handler authenticating every
// non-public route with a instead of API-token lookup.
func NewWithAuthenticator(cfg Config, a Authenticator) *Handler { return newHandler(cfg, a, false) }

// authenticated requires a bearer token the handler's Authenticator
// accepts and puts the caller's identity into the request context.
func (h *Handler) authenticated(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gauntlet"`)
			return errorf(http.StatusUnauthorized, v1.CodeUnauthorized, "send a token as `Authorization: Bearer <token>`")
		}
		id, err := h.auth.Authenticate(r.Context(), token)
		switch {
		case errors.Is(err, ErrInvalidCredentials):
			w.Header().Set("WWW-Authenticate", `Bearer realm="gauntlet", error="invalid_token"`)
			return errorf(http.StatusUnauthorized, v1.CodeUnauthorized, "the token is not valid: %s", clientMessage(err))
		case errors.Is(err, ErrAuthUnavailable):
			h.log.ErrorContext(r.Context(), "authentication unavailable", "request_id", requestID(r.Context()), "err", err)
			return errorf(http.StatusServiceUnavailable, v1.CodeUnavailable, "tokens cannot be checked right now; try again shortly")
		case err != nil:
			return fmt.Errorf("authenticate: %w", err)
		case id.Workspace == "" || id.User == "":
			return fmt.Errorf("authenticate: authenticator returned no workspace or user")
		}
		return next(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	}
}
