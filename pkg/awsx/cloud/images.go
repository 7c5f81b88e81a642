package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscodebuild "github.com/aws/aws-sdk-go-v2/service/codebuild"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/codebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecrauth"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
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
	ecrKeys := ecrauth.New(ecrClient, hosts...)
	store, err := image.Open(imageStoreDir(), image.Options{
		Mirrors:  mirrors,
		Keychain: ecrKeys,
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
	// A benchmark's own logins go to the registry they name, never to a
	// pull-through mirror (which signs in with the operator's credential
	// for the public images it caches).
	direct, err := image.Open(filepath.Join(imageStoreDir(), "direct"), image.Options{Logger: p.Logger})
	if err != nil {
		return nil, err
	}
	res := resolver{s: store, direct: direct, copyTo: ic.RepositoryURI, ecr: ecrKeys, logger: p.Logger}
	return &benchsync.Environments{Resolver: res, Builder: b, DefaultImage: ic.DefaultImage, ResumeAfter: ic.ResumeAfter,
		Services: true, CheckServices: fargateServices}, nil
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
type resolver struct {
	s *image.Store
	// direct resolves with a benchmark's logins, without mirrors.
	direct *image.Store
	// copyTo is the task-images repository (its URI); ecr signs in to it.
	copyTo string
	ecr    authn.Keychain
	logger *slog.Logger
}

// Resolve pins ref with the platform's credentials (the ECR token), which
// are also what the sandboxes and CodeBuild pull with. An image that only
// the benchmark's registry credentials open is copied, by digest, into the
// platform's task-images repository, and the copy is what the task pins:
// Fargate and CodeBuild then pull it with the platform's ECR token, and the
// workspace's login never leaves the sync.
func (r resolver) Resolve(ctx context.Context, ref string, creds []benchsync.PullCredential) (string, error) {
	res, err := r.s.Resolve(ctx, ref)
	if err == nil {
		return res.Ref, nil
	}
	// A pull-through mirror in front of the image's registry may answer
	// "not found" rather than 401 for a private repository it cannot read.
	if len(creds) == 0 || !(errors.Is(err, image.ErrUnauthorized) || errors.Is(err, image.ErrNotFound)) || !credentialFor(ref, creds) {
		return "", cause(err)
	}
	ic := make([]image.Credential, len(creds))
	for i, c := range creds {
		ic[i] = image.Credential{Registry: c.Registry, Username: c.Username, Password: c.Password.Reveal()}
	}
	res, err = r.direct.Resolve(ctx, ref, ic...)
	if err != nil {
		return "", cause(err)
	}
	copied, err := r.copyToECR(ctx, res.Ref, creds)
	if err != nil {
		return "", fmt.Errorf("copy %s, which the benchmark's registry credential opens, into the platform's task-images repository: %w", res.Ref, err)
	}
	r.logger.InfoContext(ctx, "image copied into the task-images repository for cloud sandboxes", "image", res.Ref, "copy", copied)
	return copied, nil
}

// copyToECR copies the pinned image (an image or an index, every blob
// streamed registry to registry) into the task-images repository under a
// tag derived from its digest, and returns the copy's digest reference
// (the same digest). The repository's tags are immutable, so a copy
// already there is left as it is.
func (r resolver) copyToECR(ctx context.Context, pinned string, creds []benchsync.PullCredential) (string, error) {
	src, err := name.NewDigest(pinned)
	if err != nil {
		return "", err
	}
	hex := strings.TrimPrefix(src.DigestStr(), "sha256:")
	dst, err := name.NewTag(r.copyTo + ":copy-" + hex)
	if err != nil {
		return "", err
	}
	out := r.copyTo + "@" + src.DigestStr()
	dstOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(r.ecr)}
	if d, err := remote.Head(dst, dstOpts...); err == nil && d.Digest.String() == src.DigestStr() {
		return out, nil
	}
	desc, err := remote.Get(src, remote.WithContext(ctx), remote.WithAuthFromKeychain(loginKeychain(creds)))
	if err != nil {
		return "", err
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return "", err
		}
		err = remote.WriteIndex(dst, idx, dstOpts...)
		return out, err
	}
	img, err := desc.Image()
	if err != nil {
		return "", err
	}
	return out, remote.Write(dst, img, dstOpts...)
}

// credentialFor reports whether creds hold a login for ref's registry.
func credentialFor(ref string, creds []benchsync.PullCredential) bool {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	a, err := loginKeychain(creds).Resolve(r.Context())
	return err == nil && a != authn.Anonymous
}

// loginKeychain signs in with the benchmark's logins, each to its own host.
type loginKeychain []benchsync.PullCredential

func (k loginKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	host, err := benchmark.CanonicalRegistry(res.RegistryStr())
	if err != nil {
		return authn.Anonymous, nil
	}
	for _, c := range k {
		if c.Registry == host {
			return &authn.Basic{Username: c.Username, Password: c.Password.Reveal()}, nil
		}
	}
	return authn.Anonymous, nil
}

// cause drops the store's "image X:": the sync names the image itself.
func cause(err error) error {
	var ie *image.Error
	if errors.As(err, &ie) {
		return ie.Err
	}
	return err
}
