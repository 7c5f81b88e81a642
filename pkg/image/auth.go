package image

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Credential is a pull credential for one registry host (the host actually
// contacted: a mirror's host when a mirror serves the image), supplied by the
// caller, e.g. from a workspace secret record. Set Username and Password, or
// a bearer Token (an identity token some registries hand out). It prints as
// [redacted].
type Credential struct {
	Registry string // host[:port]; "docker.io" for Docker Hub
	Username string
	Password string
	Token    string
}

// String keeps the secret out of logs and error messages.
func (c Credential) String() string { return "Credential{" + c.Registry + ", [redacted]}" }

// GoString keeps the secret out of %#v.
func (c Credential) GoString() string { return c.String() }

// LogValue keeps the secret out of slog output.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("registry", c.Registry), slog.String("secret", "[redacted]"))
}

var _ slog.LogValuer = Credential{}

func (c Credential) validate() error {
	if c.Registry == "" {
		return fmt.Errorf("%w: credential registry is empty: want a host[:port]", ErrInvalidReference)
	}
	if c.Token == "" && c.Username == "" {
		return fmt.Errorf("%w: credential for %s has neither username nor token", ErrInvalidReference, c.Registry)
	}
	return nil
}

// keychain resolves a registry host to credentials: the caller's first, then
// the platform's keychain, then the Docker config file, else anonymous.
type keychain struct {
	creds      []Credential
	platform   authn.Keychain // Options.Keychain; nil for none
	configPath string         // a Docker config.json; "" for none
}

var _ authn.ContextKeychain = keychain{}

func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

func (k keychain) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	host := r.RegistryStr()
	for _, c := range k.creds {
		if sameRegistry(c.Registry, host) {
			if c.Token != "" {
				return &authn.Bearer{Token: c.Token}, nil
			}
			return &authn.Basic{Username: c.Username, Password: c.Password}, nil
		}
	}
	if k.platform != nil {
		a, err := authn.Resolve(ctx, k.platform, r)
		if err != nil {
			return nil, fmt.Errorf("registry credentials for %s: %w", host, err)
		}
		if a != authn.Anonymous {
			return a, nil
		}
	}
	if k.configPath == "" {
		return authn.Anonymous, nil
	}
	f, err := os.Open(k.configPath)
	if os.IsNotExist(err) {
		return authn.Anonymous, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker config: %w", err)
	}
	defer f.Close()
	cf, err := config.LoadFromReader(f)
	if err != nil {
		return nil, fmt.Errorf("docker config %s: %w", k.configPath, err)
	}
	keys := []string{host}
	if host == name.DefaultRegistry || host == "docker.io" {
		keys = []string{authn.DefaultAuthKey, "docker.io", name.DefaultRegistry}
	}
	for _, key := range keys {
		ac, err := cf.GetAuthConfig(key)
		if err != nil {
			return nil, fmt.Errorf("docker config %s: %w", k.configPath, err)
		}
		if ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
			continue
		}
		return authn.FromConfig(authn.AuthConfig{
			Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
			IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
		}), nil
	}
	return authn.Anonymous, nil
}

func sameRegistry(a, b string) bool {
	hub := func(s string) bool {
		return s == "docker.io" || s == name.DefaultRegistry || s == "registry-1.docker.io"
	}
	return a == b || (hub(a) && hub(b))
}
