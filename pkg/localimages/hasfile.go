package localimages

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// hasFile reports whether the warmed image pinned holds a regular file at
// path. It reads the cached rootfs through an os.Root, so a symlink in the
// image resolves inside the image, as it would in a container.
func (w warmer) hasFile(ctx context.Context, pinned, path string) (bool, error) {
	rf, err := w.s.CachedRootfs(ctx, pinned)
	if err != nil {
		return false, cause(err)
	}
	defer rf.Close()
	root, err := os.OpenRoot(rf.Dir)
	if err != nil {
		return false, fmt.Errorf("open the image's rootfs: %w", err)
	}
	defer root.Close()
	info, err := root.Stat(strings.TrimPrefix(path, "/"))
	if err != nil {
		// Missing, or a symlink that leaves the image: nothing in it.
		return false, nil
	}
	return info.Mode().IsRegular(), nil
}
