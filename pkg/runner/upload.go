package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// ArtifactsArchive is the name of the artifacts tarball uploaded to
// Output.ArtifactsURL.
const ArtifactsArchive = "artifacts.tar.gz"

// uploadAttempts is how often one upload is tried.
const uploadAttempts = 3

// upload PUTs result.json and a tar.gz of artifacts/ to the presigned URLs in
// out, when set (the cloud; locally the driver copies OutDir itself).
// Artifacts go first, so a result that is visible always has its artifacts.
func upload(ctx context.Context, client *http.Client, out sandbox.Output, outDir, workDir string) error {
	if out.ArtifactsURL != "" {
		archive := filepath.Join(workDir, ArtifactsArchive)
		if err := writeTarGz(filepath.Join(outDir, ArtifactsDir), archive); err != nil {
			return fmt.Errorf("pack artifacts: %w", err)
		}
		if err := putFile(ctx, client, out.ArtifactsURL, archive, "application/gzip"); err != nil {
			return fmt.Errorf("upload artifacts: %w", err)
		}
	}
	if out.ResultURL != "" {
		if err := putFile(ctx, client, out.ResultURL, filepath.Join(outDir, harbor.TrialResultFile), "application/json"); err != nil {
			return fmt.Errorf("upload result: %w", err)
		}
	}
	return nil
}

// putFile PUTs the file with a known Content-Length (presigned S3 PUTs need
// one), retrying transient failures.
func putFile(ctx context.Context, client *http.Client, url, path, contentType string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := range uploadAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		if lastErr = put(ctx, client, url, data, contentType); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

func put(ctx context.Context, client *http.Client, url string, data []byte, contentType string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := client.Do(req)
	if err != nil {
		return redactURLError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return nil
}

// writeTarGz packs the tree at dir (regular files and directories; the
// runner wrote it, so it holds nothing else) into a .tar.gz at dest.
func writeTarGz(dir, dest string) error {
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		return copyFileTo(tw, path)
	})
	for _, closeErr := range []error{tw.Close(), gz.Close(), f.Close()} {
		if walkErr == nil {
			walkErr = closeErr
		}
	}
	return walkErr
}

// copyFileTo copies a regular file without following a symlink swapped in
// for it after the walk (artifacts come from the sandbox).
func copyFileTo(w io.Writer, path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
