package hub

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits of one task archive.
const (
	// MaxArchiveBytes bounds a downloaded archive.
	MaxArchiveBytes = 1 << 30
	// MaxUnpackedBytes bounds the files an archive unpacks to.
	MaxUnpackedBytes = 4 << 30
	// MaxArchiveEntries bounds the entries of an archive.
	MaxArchiveEntries = 100_000
	// MaxFileBytes bounds a dataset file.
	MaxFileBytes = 64 << 20
)

// TaskVersion is a resolved task version (RegistryDB.resolve_task_version).
type TaskVersion struct {
	ID          string `json:"id"`
	ArchivePath string `json:"archive_path"`
	// ContentHash is hex without "sha256:" once normalised.
	ContentHash  string  `json:"content_hash"`
	Revision     *int64  `json:"revision"`
	YankedAt     *string `json:"yanked_at"`
	YankedReason *string `json:"yanked_reason"`
}

// HashMismatchError reports a task archive whose files do not hash to the
// content hash the registry pins it by.
type HashMismatchError struct {
	// What is "task org/name" or "dataset file metric.py".
	What string
	Want string // sha256:<hex>, from the registry
	Got  string // sha256:<hex>, of the downloaded bytes
}

// Error names both hashes.
func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s: content hash mismatch: the registry pins %s, the downloaded files hash to %s (Harbor's packager rule)", e.What, e.Want, e.Got)
}

// ArchiveError reports a task archive that cannot be unpacked (truncated,
// not gzip, unsafe entries, over the limits).
type ArchiveError struct {
	Task   string
	Reason string
}

// Error implements error.
func (e *ArchiveError) Error() string {
	return fmt.Sprintf("task %s: archive is unusable: %s", e.Task, e.Reason)
}

// ResolveTask resolves a task version through the resolve_task_version RPC
// (ref "" is "latest", as in Harbor).
func (c *Client) ResolveTask(ctx context.Context, org, name, ref string) (TaskVersion, error) {
	if ref == "" {
		ref = LatestTag
	}
	var tv *TaskVersion
	if err := c.rpc(ctx, "resolve_task_version", map[string]string{"p_org": org, "p_name": name, "p_ref": ref}, &tv); err != nil {
		return TaskVersion{}, err
	}
	if tv == nil {
		return TaskVersion{}, &NotFoundError{msg: fmt.Sprintf("Task version not found: %s/%s@%s", org, name, ref)}
	}
	if tv.ArchivePath == "" || tv.ContentHash == "" {
		return TaskVersion{}, fmt.Errorf("%w: task version %s/%s@%s has no archive_path or content_hash", ErrProtocol, org, name, ref)
	}
	tv.ContentHash = normalizeHash(tv.ContentHash)
	return *tv, nil
}

// FetchedTask is a downloaded, verified task.
type FetchedTask struct {
	Version TaskVersion
	// Warning is Harbor's yanked warning for the task version, or "".
	Warning string
}

// FetchTask downloads task t's archive (resolved by its content hash, as
// Harbor's TaskClient does), unpacks it into dst (which must not exist)
// and verifies that its files hash to t.ContentHash. On any error dst is
// removed.
func (c *Client) FetchTask(ctx context.Context, t TaskID, dst string) (FetchedTask, error) {
	ref := "sha256:" + t.ContentHash
	tv, err := c.ResolveTask(ctx, t.Org, t.Name, ref)
	if err != nil {
		return FetchedTask{}, err
	}
	out := FetchedTask{Version: tv}
	if tv.YankedAt != nil {
		out.Warning = fmt.Sprintf("Task version %s@%s is yanked", t.Package(), ref)
		if tv.YankedReason != nil && *tv.YankedReason != "" {
			out.Warning += ": " + *tv.YankedReason
		}
	}
	if err := c.unpack(ctx, t.Package(), tv.ArchivePath, dst); err != nil {
		_ = os.RemoveAll(dst)
		return FetchedTask{}, err
	}
	got, err := TreeHash(dst)
	if err != nil {
		_ = os.RemoveAll(dst)
		return FetchedTask{}, err
	}
	if got != t.ContentHash {
		_ = os.RemoveAll(dst)
		return FetchedTask{}, &HashMismatchError{What: "task " + t.Package(), Want: "sha256:" + t.ContentHash, Got: "sha256:" + got}
	}
	return out, nil
}

// open GETs a storage object of Harbor's bucket.
func (c *Client) open(ctx context.Context, storagePath string) (io.ReadCloser, error) {
	if storagePath == "" || strings.HasPrefix(storagePath, "/") || strings.Contains(storagePath, "..") || strings.ContainsAny(storagePath, "?#\\\x00") {
		return nil, fmt.Errorf("%w: storage path %q", ErrProtocol, storagePath)
	}
	segs := strings.Split(storagePath, "/")
	for i, s := range segs {
		segs[i] = urlPathEscape(s)
	}
	resp, err := c.do(ctx, http.MethodGet, storagePath0+strings.Join(segs, "/"), nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

const storagePath0 = storagePath + bucket + "/"

// unpack downloads an archive and writes its regular files and directories
// under dst. Links, devices, absolute or climbing names are refused:
// Harbor's publisher writes regular files only, and extracts with tarfile's
// "data" filter.
func (c *Client) unpack(ctx context.Context, task, storagePath, dst string) error {
	body, err := c.open(ctx, storagePath)
	if err != nil {
		return err
	}
	defer body.Close()
	limited := &limitReader{r: body, n: MaxArchiveBytes}
	zr, err := gzip.NewReader(limited)
	if err != nil {
		return c.archiveError(ctx, task, limited, err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("task %s: %w", task, err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("task %s: %w", task, err)
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.archiveError(ctx, task, limited, err)
		}
		if n >= MaxArchiveEntries {
			return &ArchiveError{Task: task, Reason: fmt.Sprintf("more than %d entries", MaxArchiveEntries)}
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return &ArchiveError{Task: task, Reason: err.Error()}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := root.MkdirAll(name, 0o755); err != nil {
					return &ArchiveError{Task: task, Reason: err.Error()}
				}
			}
		case tar.TypeReg:
			total += hdr.Size
			if total > MaxUnpackedBytes {
				return &ArchiveError{Task: task, Reason: fmt.Sprintf("unpacks to more than %d bytes", MaxUnpackedBytes)}
			}
			if err := writeEntry(root, name, hdr, tr); err != nil {
				return c.archiveError(ctx, task, limited, err)
			}
		default:
			return &ArchiveError{Task: task, Reason: fmt.Sprintf("entry %q is not a regular file or directory (type %q)", hdr.Name, hdr.Typeflag)}
		}
	}
	// The gzip trailer (its CRC) is checked once the tar stream ends.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return c.archiveError(ctx, task, limited, err)
	}
	return nil
}

func (c *Client) archiveError(ctx context.Context, task string, l *limitReader, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case l.n <= 0:
		return &ArchiveError{Task: task, Reason: fmt.Sprintf("larger than %d bytes", MaxArchiveBytes)}
	case l.readErr != nil:
		return c.transportError(ctx, "download of task "+task, l.readErr)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &ArchiveError{Task: task, Reason: "truncated (unexpected end of data)"}
	}
	return &ArchiveError{Task: task, Reason: err.Error()}
}

// entryName checks an archive entry name: relative, no "..", slash-separated.
func entryName(raw string) (string, error) {
	if raw == "" || strings.HasPrefix(raw, "/") || strings.ContainsAny(raw, "\\\x00") {
		return "", fmt.Errorf("entry name %q is not a relative path", raw)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(raw, "/"), "/") {
		if seg == ".." {
			return "", fmt.Errorf("entry name %q climbs out of the task directory", raw)
		}
	}
	return path.Clean(raw), nil
}

func writeEntry(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	if _, err := io.CopyN(f, r, hdr.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// limitReader stops after n bytes and remembers a transport error (so a
// broken connection is not reported as a damaged archive).
type limitReader struct {
	r       io.Reader
	n       int64
	readErr error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("archive too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		l.readErr = err
	}
	return n, err
}

// DownloadFile writes a dataset file to dst (which must not exist) and
// verifies its hash.
func (c *Client) DownloadFile(ctx context.Context, f File, dst string) error {
	body, err := c.open(ctx, f.StoragePath)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(body, MaxFileBytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
		return c.transportError(ctx, "download of dataset file "+f.Path, err)
	}
	if n > MaxFileBytes {
		_ = os.Remove(dst)
		return fmt.Errorf("dataset file %s: larger than %d bytes", f.Path, MaxFileBytes)
	}
	got, err := FileHash(dst)
	if err != nil {
		return err
	}
	if got != f.ContentHash {
		_ = os.Remove(dst)
		return &HashMismatchError{What: "dataset file " + f.Path, Want: "sha256:" + f.ContentHash, Got: "sha256:" + got}
	}
	return nil
}
