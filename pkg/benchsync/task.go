package benchsync

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
)

// BundleKey returns the blob key of the bundle of a task with content digest
// ("sha256:<hex>"): tasks/<hex>.tar.gz. Equal content shares one bundle.
func BundleKey(digest string) string {
	return blob.TasksPrefix + strings.TrimPrefix(digest, "sha256:") + ".tar.gz"
}

// syncTask fetches one task into dir, loads and digests it, and makes sure
// its bundle is in the blob store. It returns the source's warning about
// the task, if any. A package task the registry cannot deliver intact is
// kept in the manifest as unavailable, naming why, with no files.
func (s *fetcher) syncTask(ctx context.Context, src registry.Source, ref harbor.TaskRef, dir string) (benchmark.Task, records.TaskFiles, string, error) {
	fetched, err := src.FetchTask(ctx, ref, dir)
	var unavailable *registry.UnavailableTaskError
	if errors.As(err, &unavailable) {
		s.log.WarnContext(ctx, "task unavailable", "task", ref.Name, "reason", unavailable.Reason)
		return benchmark.Task{Name: ref.Name, Digest: unavailable.ContentHash, Location: benchmark.TaskLocation{ContentHash: unavailable.ContentHash},
			Environment: &benchmark.Environment{Unavailable: unavailable.Reason}}, records.TaskFiles{}, "", nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return benchmark.Task{}, records.TaskFiles{}, "", ctx.Err()
		}
		return benchmark.Task{}, records.TaskFiles{}, "", failf("%v", err)
	}
	loaded, err := harbor.LoadTask(dir)
	if err != nil {
		return benchmark.Task{}, records.TaskFiles{}, "", failf("task %s: %s", ref.Name, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	digest, err := harbor.TaskDigest(dir)
	if err != nil {
		return benchmark.Task{}, records.TaskFiles{}, "", failf("task %s: %s", ref.Name, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	t := manifestTask(ref.Name, digest, loaded.Config, fetched.Ref)
	t.Location.ContentHash = fetched.ContentHash
	if reason := cmp.Or(unsupportedReason(ref.Name, loaded), s.sidecarReason(ref.Name, loaded)); reason != "" {
		t.Environment = &benchmark.Environment{Unavailable: reason}
	}
	key := BundleKey(digest)
	if err := s.putBundle(ctx, key, dir); err != nil {
		return benchmark.Task{}, records.TaskFiles{}, "", fmt.Errorf("task %s: %w", ref.Name, err)
	}
	return t, records.TaskFiles{Dir: fetched.LocalDir, BundleKey: key}, fetched.Warning, nil
}

// unsupportedReason says why a task that uses what gauntlet does not run
// yet is unavailable (naming each key and file), or "" when it runs as
// Harbor would run it.
func unsupportedReason(name string, task harbor.Task) string {
	reasons := task.Unsupported()
	if len(reasons) == 0 {
		return ""
	}
	return fmt.Sprintf("task %s: uses what gauntlet does not run yet: %s", name, strings.Join(reasons, "; "))
}

// manifestTask describes a loaded task for the manifest.
func manifestTask(name, digest string, cfg harbor.TaskConfig, ref harbor.TaskRef) benchmark.Task {
	t := benchmark.Task{
		Name:               name,
		Category:           cfg.Metadata.Category(),
		Difficulty:         cfg.Metadata.Difficulty(),
		Tags:               cfg.Metadata.Tags(),
		Digest:             digest,
		AgentTimeoutSec:    cfg.Agent.TimeoutSec,
		VerifierTimeoutSec: cfg.Verifier.TimeoutSec,
		DockerImage:        cfg.Environment.DockerImage,
		NetworkMode:        cfg.Environment.NetworkMode,
		CPUs:               cfg.Environment.CPUs,
		MemoryMB:           cfg.Environment.MemoryMB,
		StorageMB:          cfg.Environment.StorageMB,
	}
	if len(t.Tags) == 0 {
		t.Tags = nil
	}
	for _, st := range cfg.Steps {
		step := benchmark.TaskStep{Name: st.Name, AgentTimeoutSec: cmp.Or(st.AgentTimeoutSec, cfg.Agent.TimeoutSec),
			VerifierTimeoutSec: cfg.Verifier.TimeoutSec, MinReward: st.MinReward}
		if st.VerifierTimeoutSec != nil {
			step.VerifierTimeoutSec = *st.VerifierTimeoutSec
		}
		t.Steps = append(t.Steps, step)
	}
	if len(cfg.Steps) > 0 {
		t.RewardStrategy = cfg.MultiStepRewardStrategy
	}
	if ref.GitURL != "" {
		t.Location = benchmark.TaskLocation{GitURL: ref.GitURL, GitCommitID: ref.GitCommitID, Path: ref.Path}
	}
	return t
}

// putBundle stores dir as a .tar.gz under key unless it is there already
// (the key is content-addressed, so an existing object is this bundle).
func (s *fetcher) putBundle(ctx context.Context, key, dir string) error {
	infos, err := s.blobs.List(ctx, key)
	if err != nil {
		return fmt.Errorf("list bundle %s: %w", key, err)
	}
	for _, info := range infos {
		if info.Key == key {
			return nil
		}
	}
	var buf bytes.Buffer
	if err := WriteBundle(&buf, dir); err != nil {
		return err
	}
	if err := s.blobs.Put(ctx, key, &buf); err != nil {
		return fmt.Errorf("put bundle %s: %w", key, err)
	}
	return nil
}

// WriteBundle writes dir as a reproducible gzip-compressed tar: entries in
// path order, relative names, directories 0755, files 0644 or 0755 (any
// executable bit), symbolic links as links, no owners and a fixed time, so
// equal directories give equal bytes. .git directories are left out.
func WriteBundle(w io.Writer, dir string) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0).UTC()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("bundle %s: %w", path, err)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return fmt.Errorf("bundle %s: %w", path, err)
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			return writeFileEntry(tw, hdr, path)
		}
		return fmt.Errorf("bundle %s: unsupported file type %v", path, d.Type())
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bundle %s: %w", dir, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("bundle %s: %w", dir, err)
	}
	return nil
}

func writeFileEntry(tw *tar.Writer, hdr *tar.Header, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("bundle %s: %w", path, err)
	}
	hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, info.Size(), 0o644
	if info.Mode().Perm()&0o111 != 0 {
		hdr.Mode = 0o755
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("bundle %s: %w", path, err)
	}
	if _, err := io.CopyN(tw, f, info.Size()); err != nil {
		return fmt.Errorf("bundle %s: %w", path, err)
	}
	return nil
}
