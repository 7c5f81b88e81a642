package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscodebuild "github.com/aws/aws-sdk-go-v2/service/codebuild"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/codebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecrauth"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
)

// imageStoreDir holds the manifests and configs resolving fetches; Lambda's
// /tmp survives between invocations of a warm instance, so a warm sync
// asks a registry one HEAD per tag.
func imageStoreDir() string { return filepath.Join(os.TempDir(), "gauntlet-images") }

// environments builds the sync's image preparation: references resolve
// through the ECR pull-through mirrors (the same ones the sandboxes pull
// through, so the digest recorded is the one Fargate gets) with ECR tokens,
// and Dockerfile tasks build in CodeBuild into the task-images repository.
// Warm stays nil: Fargate pulls by digest itself.
func environments(awsCfg aws.Config, cfg Config, p *Platform) (*benchsync.Environments, error) {
	ic := cfg.Images
	if p.Blobs == nil {
		return nil, notWired("blob store for build contexts", EnvBucket)
	}
	mirrors, hosts, err := imageMirrors(ic)
	if err != nil {
		return nil, err
	}
	ecrClient := ecr.NewFromConfig(awsCfg)
	store, err := image.Open(imageStoreDir(), image.Options{
		Mirrors:  mirrors,
		Keychain: ecrauth.New(ecrClient, hosts...),
		Logger:   p.Logger,
	})
	if err != nil {
		return nil, err
	}
	b, err := codebuild.New(awscodebuild.NewFromConfig(awsCfg), ecrClient, codebuild.Config{
		Project: ic.BuildProject, Repository: ic.Repository, RepositoryURI: ic.RepositoryURI,
		Bucket: cfg.Bucket, Contexts: p.Blobs,
		// The build's FROM pulls through the same pull-through prefixes
		// the sync resolved against and the sandboxes pull from.
		BaseRef: func(pinned string) string { return ecssandbox.PullRef(pinned, ic.Mirrors) },
	})
	if err != nil {
		return nil, err
	}
	// No Wait: the builder starts each build and the sync parks on it, so
	// every build of a sync runs at once and none is waited on against the
	// function's timeout; the resume message picks them up.
	return &benchsync.Environments{Resolver: resolver{store}, Builder: b, DefaultImage: ic.DefaultImage, ResumeAfter: ic.ResumeAfter}, nil
}

// imageMirrors turns "host → ECR prefix" into the image store's mirror
// setting (the pull-through cache is the only source: resolving upstream
// could pin a digest the cache does not serve) and lists the ECR hosts the
// token is for.
func imageMirrors(ic ImagesConfig) ([]image.Mirror, []string, error) {
	hosts := []string{registryHost(ic.RepositoryURI)}
	var ms []image.Mirror
	for host, prefix := range ic.Mirrors {
		ms = append(ms, image.Mirror{Prefix: host, Endpoints: []string{endpointURL(prefix)}, SkipUpstream: true})
		if h := registryHost(prefix); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if err := image.ValidateMirrors(ms); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", EnvSandboxMirrors, err)
	}
	return ms, hosts, nil
}

func registryHost(ref string) string {
	host, _, _ := strings.Cut(ref, "/")
	return host
}

// endpointURL is https, except for a loopback registry (an emulator),
// which serves plain http.
func endpointURL(prefix string) string {
	host := registryHost(prefix)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return "http://" + prefix
	}
	return "https://" + prefix
}

// resolver pins references with the image store.
type resolver struct{ s *image.Store }

// Resolve pins ref with the platform's credentials (the ECR token), which
// are also what the sandboxes and CodeBuild pull with. A benchmark's
// registry credentials are used only to say why an image they would open
// cannot be used: Fargate's task definitions carry no
// repositoryCredentials and CodeBuild gets no login, so an image that
// needs the workspace's login is unavailable at sync with that reason
// rather than failing every launch.
func (r resolver) Resolve(ctx context.Context, ref string, creds []benchsync.PullCredential) (string, error) {
	res, err := r.s.Resolve(ctx, ref)
	if err == nil {
		return res.Ref, nil
	}
	if len(creds) == 0 || !errors.Is(err, image.ErrUnauthorized) {
		return "", cause(err)
	}
	ic := make([]image.Credential, len(creds))
	for i, c := range creds {
		ic[i] = image.Credential{Registry: c.Registry, Username: c.Username, Password: c.Password.Reveal()}
	}
	if _, cerr := r.s.Resolve(ctx, ref, ic...); cerr != nil {
		return "", cause(cerr)
	}
	return "", fmt.Errorf("%w: the benchmark's registry credential opens it, but cloud sandboxes and image builds pull with the platform's ECR token only "+
		"(workspace registry credentials do not reach Fargate or CodeBuild yet); push the image to ECR or ask the operator for an ECR pull-through rule", image.ErrUnauthorized)
}

// cause drops the store's "image X:": the sync names the image itself.
func cause(err error) error {
	var ie *image.Error
	if errors.As(err, &ie) {
		return ie.Err
	}
	return err
}
