package localimages

import (
	"context"
	"os"
	"path/filepath"
)

// maxLinkHops bounds the symlinks hasFile follows, as the kernel's
// MAXSYMLINKS does.
const maxLinkHops = 40

// hasFile reports whether the warmed image pinned holds a regular file at
// path. It looks the path up in the image's layers as the overlay shows
// them, following a symlink at the path inside the image (an absolute
// target is the image's, as it would be in a container), never on the host.
func (w warmer) hasFile(ctx context.Context, pinned, path string) (bool, error) {
	rf, err := w.s.CachedRootfs(ctx, pinned)
	if err != nil {
		return false, cause(err)
	}
	defer rf.Close()
	rel := filepath.Clean("/" + path)
	for range maxLinkHops {
		p, err := rf.Lookup(rel)
		if err != nil {
			return false, nil // missing: nothing in the image
		}
		info, err := os.Lstat(p)
		if err != nil {
			return false, nil
		}
		if info.Mode()&os.ModeSymlink == 0 {
			return info.Mode().IsRegular(), nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return false, nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(rel), target)
		}
		rel = filepath.Clean(target)
	}
	return false, nil
}
