package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StaticBinDir is the data dir's folder of static helper programs mounted
// read-only at /opt/gauntlet/bin in every sandbox.
const StaticBinDir = "static-bin"

// installStaticBinaries copies each program into dir (mode 0755, the
// sandbox's user may be any uid) and returns dir, or "" when there are
// none. A program already there with the same bytes is left alone, so a
// restart does not rewrite what a running sandbox has mounted; an installed
// copy carries its source's modification time, so the usual restart tells
// them equal from two stats without reading either.
func installStaticBinaries(dir string, programs []string) (string, error) {
	if len(programs) == 0 {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("static binaries: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("static binaries: %w", err)
	}
	for _, src := range programs {
		dst := filepath.Join(dir, filepath.Base(src))
		srcInfo, err := os.Stat(src)
		if err != nil {
			return "", fmt.Errorf("static binary %s: %w", src, err)
		}
		if dstInfo, err := os.Stat(dst); err == nil && dstInfo.Size() == srcInfo.Size() && dstInfo.ModTime().Equal(srcInfo.ModTime()) {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("static binary %s: %w", src, err)
		}
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			if err := os.Chtimes(dst, srcInfo.ModTime(), srcInfo.ModTime()); err != nil {
				return "", fmt.Errorf("static binary %s: %w", src, err)
			}
			continue
		}
		tmp, err := os.CreateTemp(dir, ".install-*")
		if err != nil {
			return "", fmt.Errorf("static binary %s: %w", src, err)
		}
		_, werr := tmp.Write(data)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o755), os.Chtimes(tmp.Name(), srcInfo.ModTime(), srcInfo.ModTime())); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("static binary %s: %w", src, err)
		}
		if err := os.Rename(tmp.Name(), dst); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("static binary %s: %w", src, err)
		}
	}
	return dir, nil
}
