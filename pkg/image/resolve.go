package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// Resolved is an image reference pinned to the digest of its linux/amd64
// image manifest.
type Resolved struct {
	// Ref is the pinned reference, repository@sha256:…, with Docker Hub
	// written docker.io (docker.io/library/python@sha256:…). It is the same
	// whichever mirror served the image.
	Ref string
	// Name is the repository, e.g. docker.io/library/python.
	Name string
	// Tag is the tag that was resolved, if the reference had one.
	Tag string
	// Digest is the image manifest's digest (of the linux/amd64 manifest when
	// the reference named an index).
	Digest string
	// Index is the digest of the index the manifest was chosen from, if any.
	Index string
	// Config is the image config's digest: the key of its unpacked rootfs.
	Config string
	// Size is the compressed size of config and layers.
	Size int64
	// Source says where it came from: a mirror or registry endpoint, or "local"
	// when a digest reference was already in the store.
	Source string
}

// platform is the only one the store takes.
var platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Resolve pins ref (a tag or digest reference: python:3.13-slim-bookworm,
// ghcr.io/org/img@sha256:…) to the digest of its linux/amd64 image manifest,
// fetching manifest and config into the store. A digest reference already in
// the store is answered without the network; a tag always asks a registry
// (tags move), one manifest request when the manifest is already stored.
// Endpoints are tried in mirror order; creds win over the Docker config.
func (s *Store) Resolve(ctx context.Context, ref string, creds ...Credential) (Resolved, error) {
	res, err := s.resolve(ctx, ref, creds)
	return res, imageErr(ref, err)
}

func (s *Store) resolve(ctx context.Context, ref string, creds []Credential) (Resolved, error) {
	r, err := parseRef(ref)
	if err != nil {
		return Resolved{}, err
	}
	if d, ok := r.(name.Digest); ok {
		h, _ := v1.NewHash(d.DigestStr())
		if rec, found, err := s.blobs.loadRecord(h); err != nil {
			return Resolved{}, err
		} else if found && s.blobs.hasBlob(mustHash(rec.Config), rec.ConfigSize) {
			return resolvedFrom(rec, r.Context(), "", "local"), nil
		}
	}
	p, err := s.pullers.get(creds)
	if err != nil {
		return Resolved{}, err
	}
	eps, err := s.mirrors.endpoints(r.Context())
	if err != nil {
		return Resolved{}, err
	}
	var errs []error
	for _, ep := range eps {
		res, err := s.resolveAt(ctx, p, ep, r)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return Resolved{}, ctx.Err()
		}
		err = classify(err)
		if errors.Is(err, ErrPlatform) || errors.Is(err, ErrCorrupt) {
			return Resolved{}, err // the image is there and wrong: another endpoint would not help
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep.label, err))
	}
	return Resolved{}, joinEndpointErrors(errs)
}

// joinEndpointErrors keeps every endpoint's answer in the message and the
// most telling class for errors.Is.
func joinEndpointErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	primary := worst(errs)
	var rest []string
	for _, e := range errs {
		if e != primary {
			rest = append(rest, e.Error())
		}
	}
	return fmt.Errorf("%w (also tried: %s)", primary, strings.Join(rest, "; "))
}

func parseRef(ref string) (name.Reference, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("%w: empty reference", ErrInvalidReference)
	}
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidReference, err)
	}
	return r, nil
}

func mustHash(s string) v1.Hash {
	h, err := v1.NewHash(s)
	if err != nil {
		return v1.Hash{Algorithm: "sha256", Hex: "invalid"}
	}
	return h
}

// resolveAt resolves r at one endpoint.
func (s *Store) resolveAt(ctx context.Context, p *remote.Puller, ep endpoint, r name.Reference) (Resolved, error) {
	at := retarget(ep.repo, r)
	tag := ""
	if t, ok := r.(name.Tag); ok {
		tag = t.TagStr()
	}
	// A HEAD answers a warm tag resolve without moving the manifest.
	desc, err := p.Head(ctx, at)
	if err != nil {
		return Resolved{}, err
	}
	// The blobs fetched here are named by no record until saveRecord: hold
	// them against a prune (which forgets blobs under gc.lock exclusively).
	unlockGC, err := flockPath(filepath.Join(s.dir, "gc.lock"), unix.LOCK_SH)
	if err != nil {
		return Resolved{}, err
	}
	defer unlockGC()
	rec, ok, err := s.localImage(desc.Digest)
	if err != nil {
		return Resolved{}, err
	}
	if !ok {
		rec, err = s.fetchImage(ctx, p, ep, at, desc.MediaType)
		if err != nil {
			return Resolved{}, err
		}
	}
	n := canonicalRepo(r.Context()) + tagSuffix(tag)
	// A warm resolve writes nothing when the record already says it all.
	if !ok || rec.Source != ep.label || !slices.Contains(rec.Names, n) {
		rec.Names = []string{n}
		rec.Source = ep.label
		if err := s.blobs.saveRecord(rec); err != nil {
			return Resolved{}, err
		}
	}
	return resolvedFrom(rec, r.Context(), tag, ep.label), nil
}

func tagSuffix(tag string) string {
	if tag == "" {
		return ""
	}
	return ":" + tag
}

func retarget(repo name.Repository, r name.Reference) name.Reference {
	switch v := r.(type) {
	case name.Digest:
		return repo.Digest(v.DigestStr())
	case name.Tag:
		return repo.Tag(v.TagStr())
	}
	return r
}

func resolvedFrom(rec record, repo name.Repository, tag, source string) Resolved {
	size := rec.ConfigSize
	for _, l := range rec.Layers {
		size += l.Size
	}
	n := canonicalRepo(repo)
	return Resolved{Ref: n + "@" + rec.Digest, Name: n, Tag: tag, Digest: rec.Digest, Index: rec.Index,
		Config: rec.Config, Size: size, Source: source}
}

// localImage finds the image record for a manifest or index digest already
// in the store (for an index, the record of its linux/amd64 child).
func (s *Store) localImage(d v1.Hash) (record, bool, error) {
	rec, ok, err := s.blobs.loadRecord(d)
	if err != nil || ok {
		return rec, ok && s.blobs.hasBlob(mustHash(rec.Config), rec.ConfigSize), err
	}
	if !s.blobs.hasBlob(d, -1) {
		return record{}, false, nil
	}
	b, err := s.blobs.readBlob(d)
	if err != nil {
		return record{}, false, nil // refetch
	}
	child, err := chooseChild(b)
	if err != nil {
		return record{}, false, nil
	}
	rec, ok, err = s.blobs.loadRecord(child.Digest)
	if err != nil || !ok || !s.blobs.hasBlob(mustHash(rec.Config), rec.ConfigSize) {
		return record{}, false, err
	}
	rec.Index = d.String()
	return rec, true, nil
}

// fetchImage fetches the manifest (choosing linux/amd64 from an index) and
// config at one endpoint, stores them and returns the image record.
func (s *Store) fetchImage(ctx context.Context, p *remote.Puller, ep endpoint, at name.Reference, mt types.MediaType) (record, error) {
	desc, err := p.Get(ctx, at)
	if err != nil {
		return record{}, err
	}
	indexDigest := ""
	if desc.MediaType.IsIndex() {
		if err := s.blobs.writeBlob(desc.Digest, int64(len(desc.Manifest)), strings.NewReader(string(desc.Manifest)), nil); err != nil {
			return record{}, err
		}
		child, err := chooseChild(desc.Manifest)
		if err != nil {
			return record{}, err
		}
		indexDigest = desc.Digest.String()
		if rec, ok, err := s.blobs.loadRecord(child.Digest); err == nil && ok && s.blobs.hasBlob(mustHash(rec.Config), rec.ConfigSize) {
			rec.Index = indexDigest
			return rec, nil
		}
		desc, err = p.Get(ctx, ep.repo.Digest(child.Digest.String()))
		if err != nil {
			return record{}, err
		}
	}
	if desc.MediaType == types.DockerManifestSchema1 || desc.MediaType == types.DockerManifestSchema1Signed {
		return record{}, fmt.Errorf("%w: Docker schema 1 manifests are not supported (push the image again with a current client)", ErrNotFound)
	}
	if !desc.MediaType.IsImage() {
		return record{}, fmt.Errorf("%w: %s is not an image manifest (media type %q)", ErrNotFound, at, desc.MediaType)
	}
	m, err := v1.ParseManifest(strings.NewReader(string(desc.Manifest)))
	if err != nil {
		return record{}, fmt.Errorf("%w: manifest %s: %v", ErrCorrupt, desc.Digest, err)
	}
	if !s.blobs.hasBlob(m.Config.Digest, m.Config.Size) {
		l, err := p.Layer(ctx, ep.repo.Digest(m.Config.Digest.String()))
		if err != nil {
			return record{}, err
		}
		if err := s.fetchBlob(l, m.Config.Digest, m.Config.Size, nil); err != nil {
			return record{}, err
		}
	}
	cfgBytes, err := s.blobs.readBlob(m.Config.Digest)
	if err != nil {
		return record{}, err
	}
	cf, err := v1.ParseConfigFile(strings.NewReader(string(cfgBytes)))
	if err != nil {
		return record{}, fmt.Errorf("%w: config %s: %v", ErrCorrupt, m.Config.Digest, err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		return record{}, fmt.Errorf("%w: the image is %s/%s only", ErrPlatform, cf.OS, cf.Architecture)
	}
	if err := s.blobs.writeBlob(desc.Digest, int64(len(desc.Manifest)), strings.NewReader(string(desc.Manifest)), nil); err != nil {
		return record{}, err
	}
	return newRecord(desc.Digest, desc.MediaType, int64(len(desc.Manifest)), m, indexDigest), nil
}

func newRecord(d v1.Hash, mt types.MediaType, size int64, m *v1.Manifest, index string) record {
	rec := record{Digest: d.String(), MediaType: string(mt), ManifestSize: size, Config: m.Config.Digest.String(),
		ConfigSize: m.Config.Size, Index: index, Added: time.Now().UTC()}
	for _, l := range m.Layers {
		rec.Layers = append(rec.Layers, layerRecord{Digest: l.Digest.String(), Size: l.Size, MediaType: string(l.MediaType)})
	}
	return rec
}

// chooseChild picks the linux/amd64 manifest of an index, or says which
// platforms it has.
func chooseChild(index []byte) (v1.Descriptor, error) {
	var im v1.IndexManifest
	if err := json.Unmarshal(index, &im); err != nil {
		return v1.Descriptor{}, fmt.Errorf("%w: index: %v", ErrCorrupt, err)
	}
	var have []string
	for _, c := range im.Manifests {
		if c.Platform == nil {
			continue
		}
		if c.Platform.OS == platform.OS && c.Platform.Architecture == platform.Architecture && c.MediaType.IsImage() {
			return c, nil
		}
		if c.Platform.OS != "unknown" {
			have = append(have, c.Platform.String())
		}
	}
	if len(have) == 0 {
		return v1.Descriptor{}, fmt.Errorf("%w: the index lists no platform", ErrPlatform)
	}
	return v1.Descriptor{}, fmt.Errorf("%w: the index has %s only", ErrPlatform, strings.Join(have, ", "))
}

// fetchBlob streams a remote blob into the store, verified.
func (s *Store) fetchBlob(l v1.Layer, d v1.Hash, size int64, progress func(int64)) error {
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	err = s.blobs.writeBlob(d, size, rc, progress)
	switch {
	case err == nil, errors.Is(err, ErrCorrupt), isNetErr(err):
		return err
	case strings.Contains(err.Error(), "verifying") || strings.Contains(err.Error(), "checksum"):
		// ggcr's verifying reader fails the last read on a digest mismatch.
		return fmt.Errorf("%w: digest mismatch: %v", ErrCorrupt, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: truncated: %v", ErrCorrupt, err)
	}
	return err
}

func isNetErr(err error) bool {
	c := classify(err)
	return errors.Is(c, ErrUnreachable)
}
