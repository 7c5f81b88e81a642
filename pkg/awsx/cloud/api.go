package cloud

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// BenchSync returns the registry-sync service on the platform's table and
// blob store.
func (p *Platform) BenchSync() (*benchsync.Service, error) {
	if p.Blobs == nil {
		return nil, notWired("blob store", EnvBucket)
	}
	return benchsync.New(benchsync.Config{
		Records: benchsync.StoreRecords(records.New(p.Ports.Table)), Blobs: p.Blobs, Registry: p.Config.Registry, Logger: p.Logger,
		Environments: p.Images, Secrets: p.Ports.Secrets,
		PackageRegistry: p.Config.PackageRegistry, PackagePublishableKey: p.Config.PackageRegistryKey,
	})
}

// API returns the HTTP API handler: runs go through the submit and stop
// stages, benchmarks through benchsync (sync messages on the sync queue),
// and every caller is authenticated by the JWT of the configured issuer.
func (p *Platform) API() (*api.Handler, error) {
	sub, err := p.Submitter()
	if err != nil {
		return nil, err
	}
	stop, err := p.Stopper()
	if err != nil {
		return nil, err
	}
	if err := wired("api", p.secretsWire()); err != nil {
		return nil, err
	}
	sync, err := p.BenchSync()
	if err != nil {
		return nil, err
	}
	if p.SyncQueue == nil {
		return nil, notWired("sync queue", EnvSyncQueueURL)
	}
	verifier, err := jwtauth.New(jwtauth.Config{Issuer: p.Config.JWTIssuer, Audience: p.Config.JWTAudience, JWKSURL: p.Config.JWKSURL,
		AdminClaim: p.Config.AdminClaim, AdminGroup: p.Config.AdminGroup})
	if err != nil {
		return nil, err
	}
	return api.NewWithAuthenticator(api.Config{
		Records: api.RecordsOf(sub.Records()), Runs: runs{sub, stop}, Checks: sub, Benchmarks: benchsync.Queued{Service: sync, Queue: p.SyncQueue},
		Blobs: p.Ports.Blobs, Secrets: p.Ports.Secrets, Logger: p.Logger,
	}, JWTAuthenticator{Verifier: verifier}), nil
}

// JWTAuthenticator is api.Authenticator on a JWT verifier.
type JWTAuthenticator struct{ Verifier *jwtauth.Verifier }

var _ api.Authenticator = JWTAuthenticator{}

// Authenticate implements api.Authenticator.
func (a JWTAuthenticator) Authenticate(ctx context.Context, token string) (api.Identity, error) {
	id, err := a.Verifier.Verify(ctx, token)
	switch {
	case errors.Is(err, jwtauth.ErrKeysUnavailable):
		return api.Identity{}, fmt.Errorf("%w: %w", api.ErrAuthUnavailable, err)
	case err != nil:
		return api.Identity{}, fmt.Errorf("%w: %w", api.ErrInvalidCredentials, err)
	}
	return api.Identity{Workspace: id.Workspace, User: id.User, Admin: id.Admin}, nil
}

// runs is the API's run port on the submit and stop stages.
type runs struct {
	*pipeline.Submitter
	*pipeline.Stopper
}

var (
	_ api.Runs   = runs{}
	_ api.Checks = (*pipeline.Submitter)(nil)
)
