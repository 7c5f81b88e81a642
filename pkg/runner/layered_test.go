package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"golang.org/x/sys/unix"
)

// layeredImage stacks two layers over base's rootfs, made as the image
// store makes shared layers (an overlayfs whiteout, an opaque directory in
// both xattr namespaces), owned by owner (nil: root) as a store running as
// that user would leave them.
//
//	top:  etc/top.txt, whiteouts of etc/mid.txt and etc/issue, opt/stack/ opaque holding upper.txt
//	mid:  etc/mid.txt, opt/stack/lower.txt
//	base: the test rootfs
func layeredImage(t *testing.T, base Image, owner *account) Image {
	t.Helper()
	root, err := os.MkdirTemp("", "layered-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	top, mid := filepath.Join(root, "top"), filepath.Join(root, "mid")
	files := map[string]string{
		"top/etc/top.txt":         "from the top layer\n",
		"top/opt/stack/upper.txt": "upper\n",
		"mid/etc/mid.txt":         "from the middle layer\n",
		"mid/opt/stack/lower.txt": "lower\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{"top/etc/mid.txt", "top/etc/issue"} {
		if err := unix.Mknod(filepath.Join(root, w), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		if err := unix.Lsetxattr(filepath.Join(top, "opt/stack"), x, []byte("y"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if owner != nil {
		err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, owner.uid, owner.gid)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	img := base
	img.Layers = []string{top, mid, base.Rootfs}
	img.Rootfs = ""
	return img
}

const layeredProbe = `{
echo "top=$(cat /etc/top.txt)"
echo "mid=$([ -e /etc/mid.txt ] && echo visible || echo hidden)"
echo "issue=$([ -e /etc/issue ] && echo visible || echo hidden)"
echo "stack=$(ls /opt/stack | tr '\n' ' ')"
echo "user=$(id -u):$(id -g)"
echo "write=$(echo x > /tmp/new && echo ok)"
} > /logs/agent/probe.txt`

// TestLayeredImageSandbox: an image given as a stack of layer directories
// (the image store's shared layers) runs as its overlay shows it — a
// whiteout hides the lower file, an opaque directory the lower content —
// under the kernel's overlayfs as root, and rootless under the kernel's
// overlayfs and fuse-overlayfs; the image's users come from the stack (the
// agent user is in the base layer's /etc/passwd); the attempt writes none
// of the layers.
func TestLayeredImageSandbox(t *testing.T) {
	want := map[string]string{"top": "from the top layer", "mid": "hidden", "issue": "hidden", "stack": "upper.txt ", "user": "1000:1000", "write": "ok"}
	check := func(t *testing.T, img Image, r rootlessRun) {
		t.Helper()
		if r.code != sandbox.ExitOK {
			t.Fatalf("runner exit %d:\n%s", r.code, r.output)
		}
		got := parseProbe(r.artifact(t, "agent/probe.txt"))
		for k, v := range want {
			if got[k] != v {
				t.Errorf("probe %s = %q, want %q (all: %v)", k, got[k], v, got)
			}
		}
		for _, l := range img.Layers {
			if _, err := os.Lstat(filepath.Join(l, "tmp/new")); err == nil {
				t.Errorf("the attempt wrote into layer %s", l)
			}
		}
	}
	t.Run("root, kernel overlayfs", func(t *testing.T) {
		img := layeredImage(t, testImage(t), nil)
		img.User = "agent"
		spec := baseSpec(t, "command")
		spec.Command = layeredProbe
		r := runBinary(t, nil, spec, img, "--overlay", OverlayKernel)
		check(t, img, r)
	})
	as := rootlessUser(t)
	for _, overlay := range []string{OverlayKernel, OverlayFuse} {
		t.Run("rootless, "+overlay, func(t *testing.T) {
			img := layeredImage(t, rootlessImage(t, as), &as)
			img.User = "agent"
			spec := baseSpec(t, "command")
			spec.Command = layeredProbe
			r := runRootless(t, as, spec, img, "--overlay", overlay)
			check(t, img, r)
			if !strings.Contains(r.artifact(t, "runner.log"), "layers=3") {
				t.Errorf("runner.log does not say the image has 3 layers:\n%s", r.artifact(t, "runner.log"))
			}
		})
	}
}
