package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ContentHash is Harbor's task content hash (publisher/packager.py,
// Packager.compute_content_hash) of the files rels under dir: the hex
// SHA-256 of one record per file, "<relative path>\x00<hex sha256 of the
// file>\n", in the order of the sorted slash-separated relative paths.
func ContentHash(dir string, rels []string) (string, error) {
	sorted := make([]string, len(rels))
	copy(sorted, rels)
	sort.Strings(sorted) // byte order of UTF-8 is Python's code-point order
	outer := sha256.New()
	for _, rel := range sorted {
		sum, err := fileHash(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(outer, "%s\x00%s\n", rel, sum)
	}
	return hex.EncodeToString(outer.Sum(nil)), nil
}

// TreeHash is ContentHash over every regular file under dir: what a task
// archive, which holds exactly the files its publisher hashed, must hash
// to once unpacked. Anything but regular files and directories is an error.
func TreeHash(dir string) (string, error) {
	var rels []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rels = append(rels, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return ContentHash(dir, rels)
}

// FileHash is the hex SHA-256 of one file's bytes (Harbor's
// compute_file_hash, also the content hash of a dataset file).
func FileHash(path string) (string, error) { return fileHash(path) }

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// normalizeHash is Harbor's _normalize_content_hash: trimmed, lowercase,
// without "sha256:".
func normalizeHash(raw string) string {
	return strings.TrimPrefix(strings.ToLower(strings.TrimSpace(raw)), "sha256:")
}
