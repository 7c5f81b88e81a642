package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
)

// A compose file's volumes, as Docker gives them: a named volume is one
// directory of the trial's, empty when created, shared by every service
// that mounts it (main included); an anonymous volume is the mounting
// service's own. The first mount of a new volume copies the mounting
// image's content at the target into it, owners and modes kept, unless
// volume.nocopy — Docker's copy-up. The directories live in the runner's
// work dir and go with it.

// volumeMounts are the mounts of svc's volumes in an image whose
// unwritten root is imageRoot, each volume created (and filled from the
// image) at its first mount.
func (sv services) volumeMounts(svc compose.Service, imageRoot string) ([]mount, error) {
	var out []mount
	for _, v := range svc.Volumes {
		key := "named:" + v.Volume
		if v.Volume == "" {
			key = "anonymous:" + svc.Name + ":" + v.Target
		}
		dir, fresh, err := sv.volumeDir(key)
		if err != nil {
			return nil, err
		}
		if fresh && !v.NoCopy {
			if err := copyUp(imageRoot, v.Target, dir); err != nil {
				return nil, fmt.Errorf("volume %s: copy the image's %s into it: %w", volumeName(v), v.Target, err)
			}
		}
		out = append(out, mount{host: dir, target: v.Target, writable: !v.ReadOnly})
	}
	return out, nil
}

func volumeName(v compose.VolumeMount) string {
	if v.Volume == "" {
		return "(anonymous, at " + v.Target + ")"
	}
	return v.Volume
}

// volumeDir is the directory of the volume key, created on first use
// (fresh).
func (sv services) volumeDir(key string) (dir string, fresh bool, err error) {
	t := sv.t
	if dir, ok := t.volumes[key]; ok {
		return dir, false, nil
	}
	sum := sha256.Sum256([]byte(key))
	dir = filepath.Join(t.work, "volumes", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", false, fmt.Errorf("volume: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("volume: %w", err)
	}
	if t.volumes == nil {
		t.volumes = map[string]string{}
	}
	t.volumes[key] = dir
	return dir, true, nil
}

// copyUp copies the directory target of the image root (read through an
// os.Root: a symlink of the image resolves inside it) into the empty
// volume dir: its mode and owner, then its tree — directories, regular
// files and symlinks, with their owners and modes. Nothing when the image
// has no directory there.
func copyUp(imageRoot, target, dir string) error {
	r, err := os.OpenRoot(imageRoot)
	if err != nil {
		return err
	}
	defer r.Close()
	src := strings.TrimPrefix(path.Clean(target), "/")
	info, err := r.Stat(src)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !info.IsDir() {
		return nil
	}
	if err != nil {
		return err
	}
	// Directories get their modes last, deepest first: a read-only one
	// must be filled before it is made so.
	type dirMeta struct {
		dst  string
		info fs.FileInfo
	}
	dirs := []dirMeta{{dir, info}}
	err = fs.WalkDir(r.FS(), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, src+"/")))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dirMeta{dst, info})
			return os.Mkdir(dst, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := r.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, dst); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyRootFile(r, p, dst); err != nil {
				return err
			}
		default:
			return nil // devices, sockets, fifos: not copied
		}
		return keepMeta(dst, info)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := keepMeta(dirs[i].dst, dirs[i].info); err != nil {
			return err
		}
	}
	return nil
}

// keepMeta gives dst the owner and (but for a symlink) the mode of info.
// An owner the runner may not give (rootless) is left as it is.
func keepMeta(dst string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	return os.Chmod(dst, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}
