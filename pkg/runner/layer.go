package runner

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultStorageMB is the per-attempt storage limit when the task's
// storage_mb sets none and the operator configured no other default.
const DefaultStorageMB = 10240

// Names inside an attempt's layer dir (the runner's work dir).
const (
	layerDiskImage = "disk.img" // sparse backing file of the quota filesystem
	layerDisk      = "disk"     // mount point of the quota filesystem
	layerRoot      = "root"     // mount point of the merged overlay: the sandbox's /
	layerUpper     = "upper"    // on the quota filesystem
	layerOverWork  = "ovlwork"  // overlayfs workdir, on the quota filesystem
	layerLogs      = "logs"     // the attempt's /logs, on the quota filesystem
	layerView      = "image"    // mount point of the image's layers alone, read-only
)

// layer is one attempt's writable root: a kernel overlay whose lowers are
// the image's layer directories (shared with other images, never written)
// and whose upper lives on a
// filesystem of the attempt's own, a sparse ext4 image loop-mounted with the
// attempt's storage limit as its size. Everything the phases can write — the
// root (so /app and /tmp), /logs — is on that filesystem, so a full disk is
// the attempt's ENOSPC and never the host's. Closing it unmounts both and
// deletes the lot: the next attempt starts from the image again.
type layer struct {
	dir    string // the work dir holding disk.img, disk/ and root/
	lowers []string
	root   string // merged: the sandbox's /
	// view is the image as built, without the attempt's writes: the one
	// lower, or a read-only overlay of the lowers. The runner reads the
	// image's users and checks programs there, never in the root, which the
	// agent writes.
	view      string
	disk      string // quota filesystem mount point ("" = none: no storage limit)
	storageMB int
	mounted   []string // mount points, innermost last
	driver    string   // what mounted the merged root, for the trial's log
	// fuse is the fuse-overlayfs process serving the merged root (nil: the
	// kernel's overlayfs); fuseExited receives its Wait.
	fuse       *exec.Cmd
	fuseExited chan error
	// viewFuse serves the view when fuse-overlayfs mounted it.
	viewFuse       *exec.Cmd
	viewFuseExited chan error

	// detach unmounts without waiting for the kernel to write back: a
	// sidecar service's overlay, whose upper dir is on the runner's disk
	// and is removed at once (nothing of it is kept).
	detach bool
}

// Overlay drivers of the attempt's writable root.
const (
	// OverlayAuto mounts the kernel's overlayfs and, where the kernel
	// refuses it (an old kernel in a user namespace, a lower on a
	// filesystem overlayfs cannot stack on), fuse-overlayfs.
	OverlayAuto = ""
	// OverlayKernel mounts the kernel's overlayfs only.
	OverlayKernel = "kernel"
	// OverlayFuse mounts fuse-overlayfs only.
	OverlayFuse = "fuse"
)

// fuseReadyTimeout bounds how long fuse-overlayfs may take to mount.
const fuseReadyTimeout = 10 * time.Second

// newLayer makes the attempt's writable root under dir (which must not be
// on the quota filesystem itself) over the lower dirs (topmost first), limited to
// storageMB (0 = no quota filesystem: the upper lives in dir, unlimited),
// mounted by the overlay driver (OverlayAuto, OverlayKernel, OverlayFuse).
// The runner must be root: of the host, or of its own user namespace
// (rootless.go), where the quota filesystem cannot be had.
func newLayer(dir string, lowers []string, storageMB int, driver string) (l *layer, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("image sandbox: the runner must be root, of the host or of a user namespace of its own, to mount the attempt's overlay (the sandbox-runner program enters one itself when it is not root)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("image sandbox: create %s: %w", dir, err)
	}
	if len(lowers) == 0 {
		return nil, errors.New("image sandbox: the image has no layer")
	}
	lower := strings.Join(lowers, ":")
	l = &layer{dir: dir, lowers: lowers, root: filepath.Join(dir, layerRoot), storageMB: storageMB, view: lowers[0]}
	defer func() {
		if err != nil {
			_ = l.close()
			l = nil
		}
	}()
	base := dir
	if storageMB > 0 {
		l.disk = filepath.Join(dir, layerDisk)
		if err := l.mountDisk(); err != nil {
			return nil, err
		}
		base = l.disk
	}
	upper, work := filepath.Join(base, layerUpper), filepath.Join(base, layerOverWork)
	for _, d := range []string{upper, work, l.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("image sandbox: create %s: %w", d, err)
		}
	}
	// The lowerdir option is a comma-separated list: refuse what would
	// split or escape it rather than quote it.
	for _, p := range append([]string{upper, work}, lowers...) {
		if strings.ContainsAny(p, ",:\\") {
			return nil, fmt.Errorf("image sandbox: path %q holds a character overlayfs options cannot carry (, : \\)", p)
		}
	}
	if len(lowers) > 1 {
		if err := l.mountView(driver); err != nil {
			return nil, err
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	switch driver {
	case OverlayAuto, OverlayKernel:
		kopts, closeLowers, err := kernelLowers(lowers)
		if err != nil {
			return nil, err
		}
		kopts += ",upperdir=" + upper + ",workdir=" + work
		defer closeLowers()
		if inUserNamespace() {
			// Root of a user namespace cannot write trusted.* xattrs:
			// without user.overlay.* ones, removing a directory of the
			// image fails with EIO.
			kopts += ",userxattr"
		}
		kerr := unix.Mount("overlay", l.root, "overlay", unix.MS_NODEV, kopts)
		if kerr == nil {
			l.driver = "kernel overlayfs"
			break
		}
		if driver == OverlayKernel {
			return nil, fmt.Errorf("image sandbox: mount overlay (lower %s): %w", lower, kerr)
		}
		if err := l.mountFuse(opts); err != nil {
			return nil, fmt.Errorf("image sandbox: mount overlay (lower %s): the kernel's refused (%v) and %w", lower, kerr, err)
		}
		l.driver = fmt.Sprintf("fuse-overlayfs (the kernel's overlayfs refused: %v)", kerr)
		return l, nil
	case OverlayFuse:
		if err := l.mountFuse(opts); err != nil {
			return nil, fmt.Errorf("image sandbox: mount overlay (lower %s): %w", lower, err)
		}
		l.driver = "fuse-overlayfs"
		return l, nil
	default:
		return nil, fmt.Errorf("image sandbox: overlay driver %q: want %q (auto), %q or %q", driver, OverlayAuto, OverlayKernel, OverlayFuse)
	}
	l.mounted = append(l.mounted, l.root)
	return l, nil
}

// maxKernelOpts is how long the kernel overlay's options may get before
// the lowers are passed by descriptor: the kernel takes one page of
// options, and an image of many layers would overflow it.
const maxKernelOpts = 3000

// kernelLowers returns the lowerdir option for the kernel's overlayfs and
// the release of what it opened. A long list passes every layer as
// /proc/self/fd/N of a descriptor held open across the mount (the kernel
// resolves the paths when mounting), as short as names get.
func kernelLowers(lowers []string) (string, func(), error) {
	opt := "lowerdir=" + strings.Join(lowers, ":")
	if len(opt) <= maxKernelOpts {
		return opt, func() {}, nil
	}
	var fds []int
	release := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	short := make([]string, len(lowers))
	for i, d := range lowers {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			release()
			return "", nil, fmt.Errorf("image sandbox: open layer %s: %w", d, err)
		}
		fds = append(fds, fd)
		short[i] = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	return "lowerdir=" + strings.Join(short, ":"), release, nil
}

// mountView mounts the image's layers alone, read-only, at dir/image: the
// view the runner reads the image in.
func (l *layer) mountView(driver string) error {
	view := filepath.Join(l.dir, layerView)
	if err := os.MkdirAll(view, 0o755); err != nil {
		return fmt.Errorf("image sandbox: create %s: %w", view, err)
	}
	var kerr error
	if driver != OverlayFuse {
		opts, release, err := kernelLowers(l.lowers)
		if err != nil {
			return err
		}
		if inUserNamespace() {
			opts += ",userxattr"
		}
		kerr = unix.Mount("overlay", view, "overlay", unix.MS_RDONLY|unix.MS_NODEV|unix.MS_NOSUID, opts)
		release()
		if kerr == nil {
			l.view = view
			l.mounted = append(l.mounted, view)
			return nil
		}
		if driver == OverlayKernel {
			return fmt.Errorf("image sandbox: mount the image's %d layers read-only: %w", len(l.lowers), kerr)
		}
	}
	cmd, exited, err := startFuse("lowerdir="+strings.Join(l.lowers, ":")+",nodev", view)
	if err != nil {
		return fmt.Errorf("image sandbox: mount the image's %d layers read-only (kernel: %v): %w", len(l.lowers), kerr, err)
	}
	l.viewFuse, l.viewFuseExited = cmd, exited
	l.view = view
	l.mounted = append(l.mounted, view)
	return nil
}

// mountFuse mounts the merged root with fuse-overlayfs, run in the
// foreground as the runner's child (it dies with the runner, and ends when
// the root is unmounted), and returns once the mount is in place.
func (l *layer) mountFuse(opts string) error {
	cmd, exited, err := startFuse(opts+",nodev", l.root)
	if err != nil {
		return err
	}
	l.fuse, l.fuseExited = cmd, exited
	l.mounted = append(l.mounted, l.root)
	return nil
}

// startFuse runs fuse-overlayfs in the foreground, mounting at dir, and
// returns once the mount is in place (or the program is gone).
func startFuse(opts, dir string) (*exec.Cmd, chan error, error) {
	bin, err := exec.LookPath("fuse-overlayfs")
	if err != nil {
		return nil, nil, errors.New("fuse-overlayfs is not installed (apt-get install fuse-overlayfs)")
	}
	cmd := exec.Command(bin, "-f", "-o", opts, dir)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start fuse-overlayfs: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(fuseReadyTimeout)
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.FUSE_SUPER_MAGIC {
			return cmd, exited, nil
		}
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("fuse-overlayfs exited (%v): %s", err, strings.TrimSpace(errBuf.String()))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return nil, nil, fmt.Errorf("fuse-overlayfs did not mount within %s: %s", fuseReadyTimeout, strings.TrimSpace(errBuf.String()))
		}
	}
}

// mountDisk gives the attempt its quota filesystem: a sparse copy of a
// formatted ext4 image of the storage limit's size (formatted once per size
// and machine, with lazy inode tables and no journal; the copy moves only
// the few allocated blocks), attached to a free loop device with autoclear
// and mounted nodev, nosuid. The device goes with the last unmount, also
// when the runner's mount namespace dies with it.
func (l *layer) mountDisk() error {
	img := filepath.Join(l.dir, layerDiskImage)
	tmpl, err := ext4Template(l.storageMB)
	if err != nil {
		return err
	}
	if err := sparseCopy(tmpl, img); err != nil {
		return fmt.Errorf("image sandbox: copy the %d MB filesystem: %w", l.storageMB, err)
	}
	if err := os.MkdirAll(l.disk, 0o700); err != nil {
		return fmt.Errorf("image sandbox: create %s: %w", l.disk, err)
	}
	if err := loopMount(img, l.disk); err != nil {
		return fmt.Errorf("image sandbox: loop-mount the storage limit: %w", err)
	}
	l.mounted = append(l.mounted, l.disk)
	return nil
}

// ext4TemplateDir holds the formatted, empty ext4 images, one per size.
var ext4TemplateDir = filepath.Join(os.TempDir(), "gauntlet-ext4-templates")

// ext4Template returns the formatted empty image of sizeMB, making it
// (under a lock shared with other runners) when missing.
func ext4Template(sizeMB int) (string, error) {
	if err := os.MkdirAll(ext4TemplateDir, 0o700); err != nil {
		return "", fmt.Errorf("image sandbox: %w", err)
	}
	path := filepath.Join(ext4TemplateDir, fmt.Sprintf("ext4-%dM.img", sizeMB))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("image sandbox: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("image sandbox: lock %s: %w", path, err)
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("image sandbox: %w", err)
	}
	err = f.Truncate(int64(sizeMB) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("image sandbox: size %s: %w", tmp, err)
	}
	mkfs := exec.Command("mkfs.ext4", "-q", "-F", "-O", "^has_journal,^resize_inode", "-m", "0", "-i", "16384",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", tmp)
	if out, err := mkfs.CombinedOutput(); err != nil {
		return "", fmt.Errorf("image sandbox: mkfs.ext4 the %d MB storage limit (install e2fsprogs): %w: %s", sizeMB, err, strings.TrimSpace(string(out)))
	}
	return path, os.Rename(tmp, path)
}

// sparseCopy copies src to dst keeping holes: only the data extents
// (SEEK_DATA / SEEK_HOLE) are copied, in the kernel (copy_file_range).
func sparseCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := out.Truncate(info.Size()); err != nil {
		return err
	}
	inFd, outFd := int(in.Fd()), int(out.Fd())
	for off := int64(0); off < info.Size(); {
		data, err := unix.Seek(inFd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(inFd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for pos := data; pos < hole; {
			r, w := pos, pos
			n, err := unix.CopyFileRange(inFd, &r, outFd, &w, int(hole-pos), 0)
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
			pos += int64(n)
		}
		off = hole
	}
	return out.Close()
}

// loopMount attaches img to a free loop device (autoclear) and mounts its
// ext4 at dir.
func loopMount(img, dir string) error {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ctl.Close()
	back, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer back.Close()
	for range 10 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		cfg := unix.LoopConfig{Fd: uint32(back.Fd()), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}}
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
		if errors.Is(err, unix.EBUSY) {
			lf.Close() // taken meanwhile by another process: try the next
			continue
		}
		if err != nil {
			lf.Close()
			return fmt.Errorf("configure %s: %w", dev, err)
		}
		err = unix.Mount(dev, dir, "ext4", unix.MS_NODEV|unix.MS_NOSUID|unix.MS_NOATIME, "")
		// With autoclear the device detaches once this fd is closed and,
		// after a successful mount, once the filesystem is unmounted.
		lf.Close()
		if err != nil {
			return fmt.Errorf("mount %s: %w", dev, err)
		}
		return nil
	}
	return errors.New("no free loop device after 10 tries")
}

// logsDir is where the attempt's /logs live on the host (on the quota
// filesystem when there is one).
func (l *layer) logsDir() string {
	if l.disk != "" {
		return filepath.Join(l.disk, layerLogs)
	}
	return filepath.Join(l.dir, layerLogs)
}

func (l *layer) upperDir() string {
	if l.disk != "" {
		return filepath.Join(l.disk, layerUpper)
	}
	return filepath.Join(l.dir, layerUpper)
}

// full reports whether the quota filesystem has (almost) no space or inodes
// left, and how much it holds.
func (l *layer) full() (full bool, usedMB int64) {
	if l == nil || l.disk == "" {
		return false, 0
	}
	var st unix.Statfs_t
	if err := unix.Statfs(l.disk, &st); err != nil {
		return false, 0
	}
	used := int64(st.Blocks-st.Bfree) * st.Bsize >> 20
	return st.Bavail*uint64(st.Bsize) < 1<<20 || st.Ffree == 0, used
}

// close unmounts the overlay and the quota filesystem and removes the
// layer's files. Safe to call twice.
func (l *layer) close() error {
	if l == nil {
		return nil
	}
	var errs []error
	for i := len(l.mounted) - 1; i >= 0; i-- {
		flags := 0
		if l.mounted[i] == l.disk || l.detach {
			// Nothing on it is kept: detach at once and let the kernel
			// write back and free it (and its loop device) in the
			// background instead of waiting for that here.
			flags = unix.MNT_DETACH
		}
		if err := unix.Unmount(l.mounted[i], flags); err != nil && !errors.Is(err, unix.EINVAL) {
			// Busy: a process of the sandbox still holds it. Detach now; the
			// kernel frees it when the last user goes.
			if err2 := unix.Unmount(l.mounted[i], unix.MNT_DETACH); err2 != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", l.mounted[i], err))
			}
		}
	}
	l.mounted = nil
	for _, f := range []struct {
		cmd    **exec.Cmd
		exited chan error
	}{{&l.fuse, l.fuseExited}, {&l.viewFuse, l.viewFuseExited}} {
		if *f.cmd == nil {
			continue
		}
		// Unmounted, it exits on its own; a busy mount was only detached.
		select {
		case <-f.exited:
		case <-time.After(fuseReadyTimeout):
			_ = (*f.cmd).Process.Kill()
			<-f.exited
		}
		*f.cmd = nil
	}
	for _, p := range []string{l.root, filepath.Join(l.dir, layerView), l.disk, filepath.Join(l.dir, layerDiskImage), filepath.Join(l.dir, layerUpper), filepath.Join(l.dir, layerOverWork), filepath.Join(l.dir, layerLogs)} {
		if p == "" {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeDiff writes the upper dir as a gzipped OCI layer tar: what the
// attempt changed against the image, deletions as .wh. whiteouts and
// opaque directories as .wh..wh..opq, as an image layer records them.
func (l *layer) writeDiff(dst string, limit int64) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("diff artifact: %w", err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	upper := l.upperDir()
	var written int64
	err = filepath.WalkDir(upper, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(upper, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		if info.Mode()&fs.ModeCharDevice != 0 && st != nil && st.Rdev == 0 {
			return tw.WriteHeader(&tar.Header{Name: filepath.Join(filepath.Dir(rel), ".wh."+d.Name()), Typeflag: tar.TypeReg, Mode: 0o600})
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil // sockets and the like: not part of a diff
		}
		hdr.Name = rel
		if d.IsDir() {
			hdr.Name += "/"
		}
		if st != nil {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		}
		hdr.Uname, hdr.Gname = "", ""
		if info.Mode().IsRegular() && written+info.Size() > limit {
			return fmt.Errorf("diff larger than %d bytes", limit)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			if opaqueDir(path) {
				return tw.WriteHeader(&tar.Header{Name: filepath.Join(rel, ".wh..wh..opq"), Typeflag: tar.TypeReg, Mode: 0o600})
			}
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		n, err := io.Copy(tw, in)
		written += n
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return fmt.Errorf("diff artifact: %w", err)
	}
	return nil
}

// opaqueDir reports whether the upper's directory path hides the lower's
// contents: the kernel's overlayfs marks it with trusted.overlay.opaque
// (user.overlay.opaque in a user namespace), fuse-overlayfs with
// user.fuseoverlayfs.opaque (its .wh..wh..opq files are copied as they
// are: they already are the OCI form).
func opaqueDir(path string) bool {
	for _, attr := range []string{"trusted.overlay.opaque", "user.overlay.opaque", "user.fuseoverlayfs.opaque"} {
		buf := make([]byte, 1)
		if n, err := unix.Lgetxattr(path, attr, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}
