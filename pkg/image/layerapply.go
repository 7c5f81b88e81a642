package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Overlayfs markers a layer directory carries (see the kernel's
// Documentation/filesystems/overlayfs.rst). The opaque xattr is written in
// both namespaces: trusted.* for the kernel's overlayfs mounted by root,
// user.* for one mounted with userxattr in a user namespace and for
// fuse-overlayfs; only root may write trusted.*.
var opaqueXattrs = []string{"trusted.overlay.opaque", "user.overlay.opaque"}

// whiteout makes p (resolved, inside the layer) an overlayfs whiteout: a
// character device 0/0, which hides what lower layers have at p. Linux ≥ 5.8
// lets any user make one.
func (a *applier) whiteout(p string) error {
	dir, base := splitPath(p)
	fd, err := a.parentFD(dir)
	if err != nil {
		return err
	}
	if err := unix.Mknodat(fd, base, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("mknod whiteout: %w", err)
	}
	return nil
}

// markOpaque marks the directory dir of this layer (made if missing) as
// hiding what lower layers have in it; what this layer itself puts there,
// before or after the marker, stays.
func (a *applier) markOpaque(dir string) error {
	if err := a.mkdirAll(dir); err != nil {
		return err
	}
	set := 0
	var errs []error
	for _, x := range opaqueXattrs {
		if x == "trusted.overlay.opaque" && !a.chown {
			continue
		}
		if err := unix.Lsetxattr(filepath.Join(a.dir, dir), x, []byte("y"), 0); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", x, err))
			continue
		}
		set++
	}
	if set == 0 {
		return fmt.Errorf("opaque directory %q: %w", dir, errors.Join(errs...))
	}
	return nil
}

// lowerLookup finds rel in the lower layers, topmost first: the path of
// the first entry, "" when a whiteout hides it or no layer has it.
func (a *applier) lowerLookup(rel string) (string, os.FileInfo) {
	for _, l := range a.parents {
		p := filepath.Join(l, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if isWhiteout(fi) {
			return "", nil
		}
		return p, fi
	}
	return "", nil
}

// isWhiteout reports whether fi is an overlayfs whiteout.
func isWhiteout(fi os.FileInfo) bool {
	if fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// inheritDir gives the directory just made at p (base in parent fd) the
// owner and mode of the lower layers' directory at p, if there is one.
func (a *applier) inheritDir(pfd int, base, p string) error {
	_, fi := a.lowerLookup(p)
	if fi == nil || !fi.IsDir() {
		return nil
	}
	st := fi.Sys().(*syscall.Stat_t)
	if a.chown {
		if err := unix.Fchownat(pfd, base, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s: %w", p, err)
		}
	}
	if err := unix.Fchmodat(pfd, base, st.Mode&0o7777, 0); err != nil {
		return fmt.Errorf("chmod %s: %w", p, err)
	}
	return nil
}

// copyFromLower writes the lower layers' regular file target as base in
// the directory fd: a hardlink entry whose target another layer holds.
func (a *applier) copyFromLower(target string, fd int, base, name string) error {
	src, fi := a.lowerLookup(target)
	if fi == nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: hardlink target %q is in no layer", ErrCorrupt, name)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st := fi.Sys().(*syscall.Stat_t)
	nfd, err := unix.Openat(fd, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	out := os.NewFile(uintptr(nfd), base)
	n, err := io.CopyBuffer(struct{ io.Writer }{out}, in, a.buf)
	if err != nil {
		out.Close()
		return fmt.Errorf("copy hardlink target %q: %w", name, err)
	}
	a.size += n
	if a.chown {
		if err := out.Chown(int(st.Uid), int(st.Gid)); err != nil {
			out.Close()
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(nfd, st.Mode&0o7777); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
