package image

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cachedRootfs is one unpacked rootfs on disk.
type cachedRootfs struct {
	hex      string
	size     int64
	lastUsed time.Time
}

func (s *Store) listCachedRootfs() ([]cachedRootfs, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "rootfs"))
	if err != nil {
		return nil, err
	}
	var out []cachedRootfs
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rr, ok := s.rootfsRecord(mustHash("sha256:" + hex))
		if !ok {
			continue
		}
		c := cachedRootfs{hex: hex, size: rr.Size, lastUsed: rr.Unpacked}
		if fi, err := os.Stat(filepath.Join(s.dir, "rootfs", hex+".lock")); err == nil {
			c.lastUsed = fi.ModTime()
		}
		out = append(out, c)
	}
	return out, nil
}

// evict removes least recently used rootfs dirs not in use until the cache
// fits MaxRootfsBytes; keep is never removed (it was just unpacked for a
// caller). Failures are logged: eviction never fails the caller.
func (s *Store) evict(keep string) {
	all, err := s.listCachedRootfs()
	if err != nil {
		s.logger.Warn("rootfs eviction: list cache", "err", err)
		return
	}
	var total int64
	for _, c := range all {
		total += c.size
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lastUsed.Before(all[j].lastUsed) })
	for _, c := range all {
		if total <= s.maxRootfs {
			return
		}
		if c.hex == keep {
			continue
		}
		removed, err := s.removeRootfs(c.hex)
		if err != nil {
			s.logger.Warn("rootfs eviction", "config", "sha256:"+c.hex, "err", err)
			continue
		}
		if removed {
			total -= c.size
			s.logger.Info("rootfs evicted", "config", "sha256:"+c.hex, "bytes", c.size, "last_used", c.lastUsed.UTC().Format(time.RFC3339))
		}
	}
}

// removeRootfs removes one unpacked rootfs if no one holds it; false when it
// is in use.
func (s *Store) removeRootfs(hex string) (bool, error) {
	base := filepath.Join(s.dir, "rootfs", hex)
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, err
	}
	// Record first: without it the directory counts as absent, whatever is left.
	if err := os.Remove(base + ".json"); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	if _, err := os.Lstat(base); err == nil {
		if err := removeTree(s.dir, base); err != nil {
			return false, err
		}
	}
	return true, nil
}
