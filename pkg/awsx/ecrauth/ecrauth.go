// Package ecrauth gives go-containerregistry clients pull credentials for
// the platform's ECR registry: ecr:GetAuthorizationToken returns a basic
// credential ("AWS" and a 12-hour password) for the account's registry
// host, which covers its own repositories and its pull-through caches.
package ecrauth

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/google/go-containerregistry/pkg/authn"
)

// API is the part of the ECR client the keychain uses.
type API interface {
	GetAuthorizationToken(ctx context.Context, in *ecr.GetAuthorizationTokenInput, opts ...func(*ecr.Options)) (*ecr.GetAuthorizationTokenOutput, error)
}

// Keychain answers the ECR registry hosts it was given with the token's
// basic credential and every other host anonymously. A token is reused
// until shortly before it expires.
type Keychain struct {
	api   API
	hosts []string
	now   func() time.Time

	mu      sync.Mutex
	user    string
	pass    string
	expires time.Time
}

var _ authn.ContextKeychain = (*Keychain)(nil)

// refreshBefore is how long before its expiry a token is replaced, so that
// a sync never starts a pull with a token about to lapse.
const refreshBefore = 15 * time.Minute

// New returns a keychain for hosts (host[:port], as in an image reference).
func New(api API, hosts ...string) *Keychain {
	return &Keychain{api: api, hosts: hosts, now: time.Now}
}

// Resolve implements authn.Keychain.
func (k *Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

// ResolveContext implements authn.ContextKeychain.
func (k *Keychain) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	if !slices.Contains(k.hosts, r.RegistryStr()) {
		return authn.Anonymous, nil
	}
	user, pass, err := k.token(ctx)
	if err != nil {
		return nil, err
	}
	return &authn.Basic{Username: user, Password: pass}, nil
}

func (k *Keychain) token(ctx context.Context) (string, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.user != "" && k.now().Before(k.expires.Add(-refreshBefore)) {
		return k.user, k.pass, nil
	}
	out, err := k.api.GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return "", "", fmt.Errorf("ecr GetAuthorizationToken: %w", err)
	}
	if len(out.AuthorizationData) == 0 || out.AuthorizationData[0].AuthorizationToken == nil {
		return "", "", fmt.Errorf("ecr GetAuthorizationToken: the answer has no authorization token")
	}
	d := out.AuthorizationData[0]
	raw, err := base64.StdEncoding.DecodeString(*d.AuthorizationToken)
	if err != nil {
		return "", "", fmt.Errorf("ecr GetAuthorizationToken: token is not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user == "" || pass == "" {
		return "", "", fmt.Errorf("ecr GetAuthorizationToken: token is not user:password")
	}
	k.user, k.pass = user, pass
	k.expires = k.now().Add(time.Hour) // when ECR names no expiry, ask again within the hour
	if d.ExpiresAt != nil {
		k.expires = *d.ExpiresAt
	}
	return user, pass, nil
}
