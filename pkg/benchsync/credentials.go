package benchsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// PullCredential is a registry login a sync pulls and builds one
// benchmark's task images with: the value of the workspace secret record a
// benchmark.RegistryCredential names, split into username and password.
// It is handed to the image resolver, the builder and the warmer, which
// send it to Registry only. It never prints its password.
type PullCredential struct {
	// Registry is the canonical host[:port] (benchmark.CanonicalRegistry).
	Registry string
	// Secret names the record it came from, for messages.
	Secret   string
	Username string
	Password secret.Value
}

// String keeps the password out of messages.
func (c PullCredential) String() string {
	return "PullCredential{" + c.Registry + " from " + c.Secret + ", [redacted]}"
}

// GoString keeps the password out of %#v.
func (c PullCredential) GoString() string { return c.String() }

// LogValue keeps the password out of slog output.
func (c PullCredential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("registry", c.Registry), slog.String("secret", c.Secret))
}

var _ slog.LogValuer = PullCredential{}

// checkCredentials checks a benchmark's registry credentials at add time:
// their shape, and that each secret record exists in the workspace (the
// sync reads workspace records only: it runs for the workspace, not for a
// user). It returns them canonical; errors are *benchmark.FieldError.
func (s *adder) checkCredentials(ctx context.Context, ws string, cs []benchmark.RegistryCredential) ([]benchmark.RegistryCredential, error) {
	cs, err := benchmark.CheckRegistryCredentials(cs)
	if err != nil {
		return nil, err
	}
	if len(cs) > 0 && s.secrets == nil {
		return nil, &benchmark.FieldError{Field: "registry_credentials", Message: "this platform has no secret store configured for benchmark syncs; add the benchmark without registry credentials"}
	}
	for i, c := range cs {
		_, err := s.secretRecords.SecretRecord(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: c.Secret})
		if errors.Is(err, records.ErrNotFound) {
			return nil, &benchmark.FieldError{Field: fmt.Sprintf("registry_credentials[%d].secret", i),
				Message: fmt.Sprintf("the workspace has no secret record %s (personal records are not used for syncs); set it first: gauntlet secret set %s (value username:password)", c.Secret, c.Secret)}
		}
		if err != nil {
			return nil, fmt.Errorf("look up secret record %s: %w", c.Secret, err)
		}
	}
	return cs, nil
}

// pullCredentials reads the values of the benchmark's registry credentials.
// A record deleted since the add, or a value that is not
// username:password, is a failure naming the registry and the record
// (never the value): the user fixes it and syncs again.
func (s *fetcher) pullCredentials(ctx context.Context, b records.Benchmark) ([]PullCredential, error) {
	if len(b.RegistryCredentials) == 0 {
		return nil, nil
	}
	if s.secrets == nil {
		return nil, failf("benchmark %s names registry credentials, and this platform's sync has no secret store configured", b.Key)
	}
	out := make([]PullCredential, 0, len(b.RegistryCredentials))
	for _, c := range b.RegistryCredentials {
		v, err := s.secrets.Get(ctx, secret.Ref{Workspace: b.Workspace, Scope: secret.Workspace, Name: c.Secret})
		if errors.Is(err, secret.ErrNotFound) {
			return nil, failf("registry credential for %s: the workspace has no secret record %s (deleted since the benchmark was added?); set it again (gauntlet secret set %s, value username:password) and sync again", c.Registry, c.Secret, c.Secret)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read secret record %s for registry %s: %w", c.Secret, c.Registry, err)
		}
		user, pass, err := benchmark.ParseRegistryLogin(v.Reveal())
		if err != nil {
			return nil, failf("registry credential for %s: secret record %s: %v; set it again: gauntlet secret set %s", c.Registry, c.Secret, err, c.Secret)
		}
		out = append(out, PullCredential{Registry: c.Registry, Secret: c.Secret, Username: user, Password: secret.Value(pass)})
	}
	return out, nil
}

// sameCredentials reports whether two benchmarks name the same registry
// credentials (in any order).
func sameCredentials(a, b []benchmark.RegistryCredential) bool {
	key := func(c benchmark.RegistryCredential) string { return c.Registry + "\x00" + c.Secret }
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i, c := range a {
		ka[i] = key(c)
	}
	for i, c := range b {
		kb[i] = key(c)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// describeCredentials lists registry credentials for messages: "none" or
// "ghcr.io=GHCR_PULL, …".
func describeCredentials(cs []benchmark.RegistryCredential) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Registry + "=" + c.Secret
	}
	return strings.Join(parts, ", ")
}
