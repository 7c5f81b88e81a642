package runner

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Bounds of an unpacked task bundle: its total size and its number of
// entries (a tar of a million empty files costs inodes, not bytes).
const (
	maxBundleBytes   = 2 << 30
	maxBundleEntries = 100_000
)

// taskDir returns the local directory holding the task's files: ref.Dir, or
// the bundle in ref.BundleFile or at ref.BundleURL unpacked under dest.
func taskDir(ctx context.Context, client *http.Client, ref sandbox.TaskRef, dest string) (string, error) {
	set := 0
	for _, v := range []string{ref.Dir, ref.BundleFile, ref.BundleURL} {
		if v != "" {
			set++
		}
	}
	switch {
	case set > 1:
		return "", errors.New("spec task: set only one of dir, bundle_file and bundle_url")
	case ref.Dir != "":
		return ref.Dir, nil
	case ref.BundleFile != "":
		if err := unpackBundleFile(ref.BundleFile, dest); err != nil {
			return "", fmt.Errorf("task bundle: %w", err)
		}
		return bundleRoot(dest)
	case ref.BundleURL == "":
		return "", errors.New("spec task: none of dir, bundle_file and bundle_url is set")
	}
	if err := downloadBundle(ctx, client, ref.BundleURL, dest); err != nil {
		return "", fmt.Errorf("task bundle: %w", err)
	}
	return bundleRoot(dest)
}

func unpackBundleFile(file, dest string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dest, err)
	}
	return extractTarGz(f, dest)
}

func downloadBundle(ctx context.Context, client *http.Client, url, dest string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		// The URL is presigned: its query is a credential, so it is not logged.
		return fmt.Errorf("download: %w", redactURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download: HTTP status %d", resp.StatusCode)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dest, err)
	}
	return extractTarGz(resp.Body, dest)
}

// extractTarGz unpacks a .tar.gz into dest. Every write goes through an
// os.Root, so no entry (a "../" name, or a file below a symlink entry) can
// land outside dest; and every symlink entry must resolve inside dest once
// the whole archive is out (a link may point at a later entry), because the
// runner reads the task's files on the host: a bundle's instruction.md ->
// /etc/shadow is refused, naming the entry.
func extractTarGz(r io.Reader, dest string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	defer gz.Close()
	root, err := os.OpenRoot(dest)
	if err != nil {
		return fmt.Errorf("open %s: %w", dest, err)
	}
	defer root.Close()
	tr := tar.NewReader(gz)
	var (
		total   int64
		entries int
		links   []string
	)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return checkLinks(root, links)
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("tar entry %q leaves the bundle", hdr.Name)
		}
		if entries++; entries > maxBundleEntries {
			return fmt.Errorf("bundle has more than %d entries", maxBundleEntries)
		}
		if hdr.Typeflag == tar.TypeSymlink {
			links = append(links, name)
		}
		total += max(hdr.Size, 0)
		if total > maxBundleBytes {
			return fmt.Errorf("bundle unpacks to more than %d bytes", int64(maxBundleBytes))
		}
		if err := extractEntry(root, name, hdr, tr); err != nil {
			return fmt.Errorf("tar entry %q: %w", hdr.Name, err)
		}
	}
}

func extractEntry(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(hdr.Mode).Perm()|0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(r, hdr.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		return root.Symlink(hdr.Linkname, name)
	}
	return nil // other entry types (devices, FIFOs, hard links) are ignored
}

// checkLinks refuses a symlink that does not resolve inside root (outside,
// absolute, or dangling).
func checkLinks(root *os.Root, links []string) error {
	for _, name := range links {
		if _, err := root.Stat(name); err != nil {
			target, _ := root.Readlink(name)
			return fmt.Errorf("tar entry %q is a symbolic link to %q, which does not resolve inside the bundle: refused", name, target)
		}
	}
	return nil
}

// bundleRoot finds the task directory in an unpacked bundle: dest itself, or
// its only subdirectory when the bundle wraps the task in one.
func bundleRoot(dest string) (string, error) {
	if _, err := os.Stat(filepath.Join(dest, harbor.TaskConfigFile)); err == nil {
		return dest, nil
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		return "", fmt.Errorf("read bundle: %w", err)
	}
	if len(entries) == 1 && entries[0].IsDir() {
		return filepath.Join(dest, entries[0].Name()), nil
	}
	return "", fmt.Errorf("bundle has no %s at its root", harbor.TaskConfigFile)
}

// redactURLError drops the URL (and its presigned query) from an HTTP client error.
func redactURLError(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Errorf("%s: %w", urlErr.Op, urlErr.Err)
	}
	return err
}
