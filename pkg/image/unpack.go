package image

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// Whiteout markers (OCI image spec, "Representing Changes").
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
	whiteoutMeta   = ".wh..wh." // aufs metadata (e.g. .wh..wh.plnk): never extracted
)

// decompress detects gzip and zstd by their magic bytes (many layers say
// "tar+gzip" and are plain tar, or the other way round). klauspost/compress
// is used because its gzip decoder is about twice the standard library's
// speed, and ggcr already depends on it.
func decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return zr, nil
	case len(magic) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd:
		zr, err := zstd.NewReader(br)
		if err != nil {
			return nil, err
		}
		return zr.IOReadCloser(), nil
	}
	return io.NopCloser(br), nil
}

// applier applies layer tars to one rootfs directory, in order, the way a
// container runtime does: entries replace what lower layers had, whiteouts
// delete, opaque whiteouts hide a directory's lower content, and ownership,
// modes, xattrs, times, hardlinks, symlinks and device nodes are kept.
//
// Every path is resolved inside the root with chroot semantics (an absolute
// symlink target means the rootfs's own /, `..` stops at the root), so no
// entry, and no symlink an earlier entry made, can reach outside it; the
// final operations go through an os.Root, which refuses escapes as a second
// guard. Entry names that are absolute or climb above the root are refused.
type applier struct {
	root  *os.Root
	dir   string
	size  int64
	euid  int
	buf   []byte
	chown bool // false when not root: ownership cannot be set (the store logs it)
	// skipped counts what a store that is not root leaves out: device
	// nodes and xattrs outside user.* (the store logs it).
	skipped struct{ devices, xattrs int }

	linkBuf [4096]byte

	rootFD int            // the root directory, opened through root
	fds    map[string]int // open descriptors of resolved directories, see dirFD

	// parents, when not nil, makes this a layer applier: the root is one
	// layer's own directory, stacked by overlayfs above these lower layer
	// directories (topmost first). Whiteouts become overlayfs whiteouts (a
	// 0/0 character device) and opaque markers an overlay.opaque xattr
	// instead of deletions; a directory this layer needs but does not
	// carry takes the owner and mode of the lower layers' one (else the
	// upper's 0755 would hide, say, /tmp's 1777); a hardlink to a file of
	// a lower layer becomes a copy of it (a link cannot span layers).
	parents []string
}

// newLayerApplier returns an applier writing one layer into dir, above the
// lower layer directories parents (topmost first).
func newLayerApplier(dir string, parents []string) (*applier, error) {
	a, err := newApplier(dir)
	if err != nil {
		return nil, err
	}
	a.parents = append([]string{}, parents...)
	if a.parents == nil {
		a.parents = []string{}
	}
	return a, nil
}

// layered reports whether a writes one layer of an overlay stack.
func (a *applier) layered() bool { return a.parents != nil }

func newApplier(dir string) (*applier, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	f, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	unix.CloseOnExec(fd)
	return &applier{root: r, dir: dir, euid: os.Geteuid(), buf: make([]byte, 1<<20), chown: os.Geteuid() == 0,
		rootFD: fd, fds: map[string]int{}}, nil
}

func (a *applier) Close() error {
	a.dropFDs()
	unix.Close(a.rootFD)
	return a.root.Close()
}

// layerState is what one layer has written, for opaque whiteouts, and its
// directories, whose times are set once the layer is done.
type layerState struct {
	written map[string]bool
	dirs    []*tar.Header
	cache   map[string]string // resolved parent dirs; cleared when a symlink or removal could change them
}

// apply applies one uncompressed layer tar stream.
func (a *applier) apply(r io.Reader) error {
	tr := tar.NewReader(r)
	st := &layerState{written: map[string]bool{}, cache: map[string]string{}}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: layer tar: %v", ErrCorrupt, err)
		}
		if err := a.entry(tr, hdr, st); err != nil {
			return err
		}
	}
	// Directory times last (children change them), deepest first.
	sort.SliceStable(st.dirs, func(i, j int) bool { return len(st.dirs[i].Name) > len(st.dirs[j].Name) })
	for _, h := range st.dirs {
		p, err := a.resolve(cleanName(h.Name), st)
		if err != nil {
			continue // removed by a later entry of the same layer
		}
		dir, base := splitPath(p)
		fd, err := a.parentFD(dir)
		if err != nil {
			continue
		}
		if err := setTimes(fd, base, h); err != nil {
			return fmt.Errorf("layer entry %q: %w", h.Name, err)
		}
	}
	return nil
}

// cleanName turns an entry name into a path relative to the root ("" for the
// root itself), or "\x00" when it is absolute or climbs out.
func cleanName(n string) string {
	if strings.HasPrefix(n, "/") {
		return "\x00"
	}
	c := path.Clean("/" + n)
	raw := path.Clean(n)
	if raw == ".." || strings.HasPrefix(raw, "../") {
		return "\x00"
	}
	return strings.TrimPrefix(c, "/")
}

func (a *applier) entry(tr *tar.Reader, h *tar.Header, st *layerState) error {
	rel := cleanName(h.Name)
	if rel == "\x00" {
		return fmt.Errorf("%w: %q: absolute or `..` path escapes the rootfs", ErrUnsafeLayer, h.Name)
	}
	switch h.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil
	case tar.TypeGNUSparse, tar.TypeCont:
		return fmt.Errorf("%w: %q: tar entry type %q is not supported", ErrUnsafeLayer, h.Name, string(h.Typeflag))
	}
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if rel == "" {
		dir, base = "", ""
	}
	// Whiteouts.
	if strings.HasPrefix(base, whiteoutPrefix) {
		parent, err := a.resolveDir(dir, st)
		if err != nil {
			return fmt.Errorf("layer entry %q: %w", h.Name, err)
		}
		switch {
		case base == whiteoutOpaque && a.layered():
			return a.markOpaque(parent)
		case base == whiteoutOpaque:
			return a.opaque(parent, st)
		case strings.HasPrefix(base, whiteoutMeta):
			return nil
		default:
			victim := base[len(whiteoutPrefix):]
			if victim == "" || victim == "." || victim == ".." {
				return fmt.Errorf("%w: %q: bad whiteout", ErrUnsafeLayer, h.Name)
			}
			a.invalidate(st)
			if err := a.root.RemoveAll(join(parent, victim)); err != nil {
				return fmt.Errorf("layer entry %q: whiteout: %w", h.Name, err)
			}
			if a.layered() {
				if err := a.whiteout(join(parent, victim)); err != nil {
					return fmt.Errorf("layer entry %q: whiteout: %w", h.Name, err)
				}
			}
			return nil
		}
	}
	var target string
	if rel == "" {
		target = ""
	} else {
		parent, err := a.resolveDir(dir, st)
		if err != nil {
			return fmt.Errorf("layer entry %q: %w", h.Name, err)
		}
		target = join(parent, base)
	}
	st.written[target] = true
	if err := a.create(tr, h, target, st); err != nil {
		return fmt.Errorf("layer entry %q: %w", h.Name, err)
	}
	return nil
}

func join(dir, base string) string {
	if dir == "" {
		return base
	}
	return dir + "/" + base
}

// splitPath splits a resolved path into its parent and last element; the
// root itself is "." in "".
func splitPath(p string) (dir, base string) {
	if p == "" {
		return "", "."
	}
	d, b := path.Split(p)
	return strings.TrimSuffix(d, "/"), b
}

// dirFD returns a descriptor of the resolved directory p ("" is the root),
// opened one level at a time from the root's descriptor with O_NOFOLLOW
// (resolved paths have no symlink and no ".."), so it is inside the root
// by construction; descriptors are kept for the next entries, which mostly
// share directories. Every operation on an entry is then one *at system
// call on its last element, never following a symlink there: a path walk
// per operation made unpacking several times slower than tar.
func (a *applier) dirFD(p string) (int, error) {
	if p == "" {
		return a.rootFD, nil
	}
	if fd, ok := a.fds[p]; ok {
		return fd, nil
	}
	parent, base := splitPath(p)
	pfd, err := a.dirFD(parent)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p, Err: err}
	}
	if len(a.fds) >= 512 {
		a.dropFDs()
	}
	a.fds[p] = fd
	return fd, nil
}

// parentFD is dirFD of p's parent.
func (a *applier) parentFD(dir string) (int, error) { return a.dirFD(dir) }

func (a *applier) dropFDs() {
	for _, fd := range a.fds {
		unix.Close(fd)
	}
	clear(a.fds)
}

// invalidate forgets resolved directories after something was removed.
func (a *applier) invalidate(st *layerState) {
	clear(st.cache)
	a.dropFDs()
}

func (a *applier) create(tr *tar.Reader, h *tar.Header, p string, st *layerState) error {
	dir, base := splitPath(p)
	fd, err := a.parentFD(dir)
	if err != nil {
		return err
	}
	var stat unix.Stat_t
	err = unix.Fstatat(fd, base, &stat, unix.AT_SYMLINK_NOFOLLOW)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if exists && !(stat.Mode&unix.S_IFMT == unix.S_IFDIR && h.Typeflag == tar.TypeDir) {
		if p == "" {
			return fmt.Errorf("%w: the root must be a directory", ErrUnsafeLayer)
		}
		a.invalidate(st)
		if err := a.root.RemoveAll(p); err != nil {
			return err
		}
		if fd, err = a.parentFD(dir); err != nil {
			return err
		}
		exists = false
	}
	mode := uint32(h.Mode) & 0o7777
	switch h.Typeflag {
	case tar.TypeDir:
		if !exists {
			if err := unix.Mkdirat(fd, base, 0o755); err != nil {
				return fmt.Errorf("mkdir: %w", err)
			}
		}
		st.dirs = append(st.dirs, h)
	case tar.TypeReg: // the reader turns the old TypeRegA into TypeReg
		nfd, err := unix.Openat(fd, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		f := os.NewFile(uintptr(nfd), p)
		n, err := io.CopyBuffer(struct{ io.Writer }{f}, tr, a.buf)
		if err != nil {
			f.Close()
			if pe := (*os.PathError)(nil); errors.As(err, &pe) && pe.Op == "write" {
				return fmt.Errorf("file content: %w", err) // the store's disk (ENOSPC), not the layer
			}
			return fmt.Errorf("%w: file content: %v", ErrCorrupt, err)
		}
		a.size += n
		if err := f.Close(); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := unix.Symlinkat(h.Linkname, fd, base); err != nil {
			return fmt.Errorf("symlink: %w", err)
		}
	case tar.TypeLink:
		lrel := cleanName(h.Linkname)
		if lrel == "\x00" || lrel == "" {
			return fmt.Errorf("%w: hardlink target %q escapes the rootfs", ErrUnsafeLayer, h.Linkname)
		}
		ldir, lbase := path.Split(lrel)
		lparent, err := a.resolveDir(strings.TrimSuffix(ldir, "/"), st)
		if err != nil {
			return fmt.Errorf("hardlink target %q: %w", h.Linkname, err)
		}
		lfd, err := a.dirFD(lparent)
		if err != nil {
			return fmt.Errorf("hardlink target %q: %w", h.Linkname, err)
		}
		if fd, err = a.parentFD(dir); err != nil {
			return err
		}
		if err := unix.Linkat(lfd, lbase, fd, base, 0); err != nil {
			if a.layered() && errors.Is(err, unix.ENOENT) {
				// The target is in a lower layer: copy it up.
				return a.copyFromLower(join(lparent, lbase), fd, base, h.Linkname)
			}
			return fmt.Errorf("hardlink to %q: %w", h.Linkname, err)
		}
		return nil // a hardlink shares its target's inode: nothing more to set
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if !a.chown && h.Typeflag != tar.TypeFifo {
			// Only root makes device nodes. They would serve nothing: a
			// sandbox's /dev is its own, and every writable mount nodev.
			a.skipped.devices++
			return nil
		}
		kind := uint32(unix.S_IFIFO)
		switch h.Typeflag {
		case tar.TypeChar:
			kind = unix.S_IFCHR
		case tar.TypeBlock:
			kind = unix.S_IFBLK
		}
		if err := unix.Mknodat(fd, base, kind|mode, int(unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor)))); err != nil {
			return fmt.Errorf("mknod: %w", err)
		}
	default:
		return fmt.Errorf("%w: tar entry type %q is not supported", ErrUnsafeLayer, string(h.Typeflag))
	}
	return a.setMeta(fd, base, h, mode)
}

// setMeta sets ownership, then mode (chown clears setuid bits), then xattrs
// (chown clears security.capability), then times (not for directories: they
// are set when the layer is done, as their children change them).
func (a *applier) setMeta(fd int, base string, h *tar.Header, mode uint32) error {
	if a.chown {
		if err := unix.Fchownat(fd, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if h.Typeflag != tar.TypeSymlink {
		if err := unix.Fchmodat(fd, base, mode, 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	for k, v := range h.PAXRecords {
		key, ok := strings.CutPrefix(k, "SCHILY.xattr.")
		if !ok {
			continue
		}
		if a.layered() && (strings.HasPrefix(key, "trusted.overlay.") || strings.HasPrefix(key, "user.overlay.")) {
			// overlayfs's own markers (opaque, redirect, metacopy) are the
			// store's to write, from the layer's whiteouts: a layer that
			// carried them could reshape the stack it is mounted in.
			continue
		}
		if !a.chown && !strings.HasPrefix(key, "user.") {
			// security.capability and trusted.* are root's to set.
			a.skipped.xattrs++
			continue
		}
		if err := unix.Lsetxattr(procPath(fd, base), key, []byte(v), 0); err != nil {
			return fmt.Errorf("xattr %s: %w", key, err)
		}
	}
	if h.Typeflag == tar.TypeDir {
		return nil
	}
	return setTimes(fd, base, h)
}

func setTimes(fd int, base string, h *tar.Header) error {
	at := h.AccessTime
	if at.IsZero() {
		at = h.ModTime
	}
	ts := []unix.Timespec{toTimespec(at), toTimespec(h.ModTime)}
	return unix.UtimesNanoAt(fd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func toTimespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Sec: 0, Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}

func procPath(fd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
}

// resolveDir resolves dir (relative, clean) to a path with no symlinks,
// creating missing directories 0755 as a runtime does.
func (a *applier) resolveDir(dir string, st *layerState) (string, error) {
	if dir == "" {
		return "", nil
	}
	if p, ok := st.cache[dir]; ok {
		return p, nil
	}
	p, err := a.resolve(dir, st)
	if err != nil {
		return "", err
	}
	if err := a.mkdirAll(p); err != nil {
		return "", err
	}
	st.cache[dir] = p
	return p, nil
}

// mkdirAll creates the missing directories of the resolved path p, 0755.
func (a *applier) mkdirAll(p string) error {
	if p == "" {
		return nil
	}
	if _, ok := a.fds[p]; ok {
		return nil
	}
	parent, base := splitPath(p)
	if err := a.mkdirAll(parent); err != nil {
		return err
	}
	pfd, err := a.dirFD(parent)
	if err != nil {
		return err
	}
	err = unix.Mkdirat(pfd, base, 0o755)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: p, Err: err}
	}
	if err == nil && a.layered() {
		if err := a.inheritDir(pfd, base, p); err != nil {
			return err
		}
	}
	_, err = a.dirFD(p) // ENOTDIR when something else is there
	return err
}

// resolve follows symlinks in rel with chroot semantics. Components that do
// not exist are kept as they are.
func (a *applier) resolve(rel string, st *layerState) (string, error) {
	var out []string
	todo := strings.Split(rel, "/")
	hops := 0
	missing := false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			missing = false
			continue
		}
		cur := strings.Join(append(out, c), "/")
		var stat unix.Stat_t
		var err error = unix.ENOENT
		pfd := -1
		if !missing {
			if pfd, err = a.dirFD(strings.Join(out, "/")); err != nil {
				return "", err
			}
			err = unix.Fstatat(pfd, c, &stat, unix.AT_SYMLINK_NOFOLLOW)
		}
		if errors.Is(err, unix.ENOENT) {
			missing = true // in this layer; so is everything below it
			if a.layered() {
				// The lower layers' symlinks lead as the overlay would.
				lp, fi := a.lowerLookup(cur)
				switch {
				case fi != nil && fi.Mode()&os.ModeSymlink != 0:
					hops++
					if hops > 255 {
						return "", fmt.Errorf("%s: too many levels of symbolic links", rel)
					}
					link, err := os.Readlink(lp)
					if err != nil {
						return "", err
					}
					if strings.HasPrefix(link, "/") {
						out = out[:0]
					}
					missing = false
					todo = append(strings.Split(link, "/"), todo...)
					continue
				case fi != nil && !fi.IsDir() && len(todo) > 0:
					return "", fmt.Errorf("%s: not a directory", cur)
				}
			}
			out = append(out, c)
			continue
		}
		if err != nil {
			return "", &os.PathError{Op: "lstat", Path: cur, Err: err}
		}
		if stat.Mode&unix.S_IFMT != unix.S_IFLNK {
			if stat.Mode&unix.S_IFMT != unix.S_IFDIR && len(todo) > 0 {
				return "", fmt.Errorf("%s: not a directory", cur)
			}
			out = append(out, c)
			continue
		}
		hops++
		if hops > 255 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", rel)
		}
		n, err := unix.Readlinkat(pfd, c, a.linkBuf[:])
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: cur, Err: err}
		}
		link := string(a.linkBuf[:n])
		if strings.HasPrefix(link, "/") {
			out = out[:0]
		}
		missing = false
		todo = append(strings.Split(link, "/"), todo...)
	}
	return strings.Join(out, "/"), nil
}

// opaque hides everything in dir that lower layers put there: entries this
// layer wrote stay, and inside directories it wrote, the same rule applies.
func (a *applier) opaque(dir string, st *layerState) error {
	d := dir
	if d == "" {
		d = "."
	}
	f, err := a.root.Open(d)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		p := join(dir, n)
		if !st.written[p] {
			a.invalidate(st)
			if err := a.root.RemoveAll(p); err != nil {
				return err
			}
			continue
		}
		if fi, err := a.root.Lstat(p); err == nil && fi.IsDir() {
			if err := a.opaque(p, st); err != nil {
				return err
			}
		}
	}
	return nil
}
