// Package testrootfs gives tests a real image rootfs: the Debian minbase
// image the images branch builds with mmdebstrap (`make base-images`),
// unpacked once per machine and customised the same way every time, for use
// as the never-written lower of sandbox overlays.
package testrootfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Version names the customisation below; bump it when that changes.
const Version = "v2"

// Contents of the test image beside Debian minbase: /app/seed.txt holding
// "seed" (what the runner's fixture task's Dockerfile copies), a user agent
// (1000:1000, home /home/agent) and /usr/local/bin/image-tool printing
// "image-tool".
const (
	AgentUser = "agent"
	AgentUID  = 1000
)

// BaseDir holds the base image tars; $GAUNTLET_BASE_IMAGES overrides.
func BaseDir() string {
	if dir := os.Getenv("GAUNTLET_BASE_IMAGES"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "gauntlet", "base")
}

var once struct {
	sync.Once
	dir string
	err error
}

// Dir returns the test image's rootfs, building it on first use (fails the
// test, saying how to get the base image, when it is missing).
func Dir(tb testing.TB) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("image sandbox tests need root (overlay and loop mounts)")
	}
	once.Do(func() { once.dir, once.err = build(MinbaseTar) })
	if once.err != nil {
		tb.Fatal(once.err)
	}
	return once.dir
}

// Base image tarballs of `make base-images` (scripts/base-images.sh).
const (
	MinbaseTar = "debian-bookworm-minbase.tar" // Debian 12 minbase
	Python3Tar = "debian-bookworm-python3.tar" // the python:3.x-slim stand-in
	TrixieTar  = "debian-trixie-minbase.tar"   // a newer glibc (2.41): the Ubuntu-like image
	NoBashTar  = "debian-bookworm-nobash.tar"  // minbase without bash and /usr/bin/env
	MuslTar    = "musl-busybox.tar"            // musl and busybox only: no glibc, no bash
)

var variants struct {
	sync.Mutex
	dirs map[string]string
}

// Of returns the rootfs of the base image tarball (one of the *Tar
// names), customised as Dir's, building it on first use.
func Of(tb testing.TB, tarball string) string {
	tb.Helper()
	if tarball == MinbaseTar {
		return Dir(tb)
	}
	if os.Geteuid() != 0 {
		tb.Fatal("image sandbox tests need root (overlay and loop mounts)")
	}
	variants.Lock()
	defer variants.Unlock()
	if dir, ok := variants.dirs[tarball]; ok {
		return dir
	}
	dir, err := build(tarball)
	if err != nil {
		tb.Fatal(err)
	}
	if variants.dirs == nil {
		variants.dirs = map[string]string{}
	}
	variants.dirs[tarball] = dir
	return dir
}

func build(name string) (string, error) {
	tarball := filepath.Join(BaseDir(), name)
	info, err := os.Stat(tarball)
	if err != nil {
		return "", fmt.Errorf("the image tests need the base image %s (build it with `make base-images`, or point GAUNTLET_BASE_IMAGES at a dir holding it): %v", tarball, err)
	}
	prefix := "gauntlet-test-rootfs-"
	if name != MinbaseTar {
		prefix += strings.TrimSuffix(name, ".tar") + "-"
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%s-%d", prefix, Version, info.Size()))
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("tar", "-xpf", tarball, "--numeric-owner", "-C", tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %v: %s", tarball, err, out)
	}
	script := `set -e
mkdir -p app home/agent usr/local/bin
echo seed > app/seed.txt
echo 'agent:x:1000:1000:agent:/home/agent:/bin/bash' >> etc/passwd
echo 'agent:x:1000:' >> etc/group
chown 1000:1000 home/agent
printf '#!/bin/sh\necho image-tool\n' > usr/local/bin/image-tool
chmod 755 usr/local/bin/image-tool
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("customise the test rootfs: %v: %s", err, out)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp, dir)
}
