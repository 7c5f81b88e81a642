package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Image is a task environment's unpacked image as the driver hands it
// to the runner (the sandbox protocol's, sandbox.Image).
type Image = sandbox.Image

// LoadImage reads an Image written by WriteImage and checks it.
func LoadImage(file string) (Image, error) { return sandbox.LoadImage(file) }

// WriteImage writes img for LoadImage (the driver side of --image).
func WriteImage(file string, img Image) error { return sandbox.WriteImage(file, img) }

// imageUser is a user a phase runs as, resolved in the image's /etc/passwd
// and /etc/group as a container runtime does.
type imageUser struct {
	spec     string // as written (for logs)
	uid, gid uint32
	groups   []uint32 // supplementary groups
	home     string
}

func (u imageUser) root() bool { return u.uid == 0 }

// resolveUser resolves a Docker USER value ("", name, uid, name:group,
// uid:gid) against the rootfs's /etc/passwd and /etc/group. A numeric uid
// need not exist in passwd (then gid = uid's passwd gid or 0, home /).
func resolveUser(rootfs, spec string) (imageUser, error) {
	u := imageUser{spec: spec, home: "/"}
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	if userPart == "" {
		userPart = "root"
	}
	passwd, err := readColonFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil {
		return u, err
	}
	found := false
	for _, f := range passwd {
		if len(f) < 7 || (f[0] != userPart && f[2] != userPart) {
			continue
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		u.uid, u.gid, u.home, found = uint32(uid), uint32(gid), f[5], true
		break
	}
	if !found {
		uid, err := strconv.ParseUint(userPart, 10, 32)
		if err != nil {
			return u, fmt.Errorf("image user %q: no user %q in the image's /etc/passwd", spec, userPart)
		}
		u.uid, u.gid = uint32(uid), uint32(uid)
		if uid == 0 {
			u.home = "/root"
		}
	}
	groups, err := readColonFile(filepath.Join(rootfs, "etc", "group"))
	if err != nil {
		return u, err
	}
	if hasGroup {
		gid, ok := lookupGroup(groups, groupPart)
		if !ok {
			return u, fmt.Errorf("image user %q: no group %q in the image's /etc/group", spec, groupPart)
		}
		u.gid = gid
	}
	// Supplementary groups: those listing the user by name (as Docker does).
	name := userPart
	for _, f := range passwd {
		if len(f) >= 3 && f[2] == strconv.FormatUint(uint64(u.uid), 10) {
			name = f[0]
			break
		}
	}
	for _, f := range groups {
		if len(f) < 4 {
			continue
		}
		for _, member := range strings.Split(f[3], ",") {
			if member == name {
				if gid, err := strconv.ParseUint(f[2], 10, 32); err == nil && uint32(gid) != u.gid {
					u.groups = append(u.groups, uint32(gid))
				}
			}
		}
	}
	return u, nil
}

func lookupGroup(groups [][]string, spec string) (uint32, bool) {
	for _, f := range groups {
		if len(f) >= 3 && (f[0] == spec || f[2] == spec) {
			if gid, err := strconv.ParseUint(f[2], 10, 32); err == nil {
				return uint32(gid), true
			}
		}
	}
	if gid, err := strconv.ParseUint(spec, 10, 32); err == nil {
		return uint32(gid), true
	}
	return 0, false
}

// readColonFile reads a passwd(5)-style file of the image without following
// a symlink out of it; a missing file reads as empty.
func readColonFile(path string) ([][]string, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("image: %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Split(line, ":"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("image: read %s: %w", path, err)
	}
	return rows, nil
}

// imageEnv lays a phase's environment (built by agentEnv or verifierEnv) over
// the image's Env, as `docker exec -e` lays variables over the container's:
// the phase's variables win, except PATH, which stays the image's when the
// image sets one (its tools live there), and HOME, the user's home from the
// image's passwd (the phase's HOME is a host-layout default).
func imageEnv(img Image, u imageUser, phase []string) []string {
	env := map[string]string{}
	order := []string{}
	set := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range img.Env {
		set(kv)
	}
	imagePath, hasPath := env["PATH"]
	for _, kv := range phase {
		set(kv)
	}
	if hasPath {
		env["PATH"] = imagePath
	}
	env["HOME"] = u.home
	if _, ok := env["HOSTNAME"]; !ok {
		order = append(order, "HOSTNAME")
	}
	env["HOSTNAME"] = sandboxHostname
	list := make([]string, 0, len(order))
	for _, k := range order {
		list = append(list, k+"="+env[k])
	}
	return list
}
