package agentbundle

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// startArgs are what each program answers without a model: its version
// (claude-code's --version checks for updates; --help does not).
var startArgs = map[string]string{"claude-code": "--help"}

// BenchmarkBundleStart starts each prepared bundle's program (its version)
// on the host's root filesystem and in a bubblewrap sandbox on the Debian
// minbase image with the bundle mounted read-only at /installed-agent,
// loader and libraries through fd 217 both times: the ratio of the two is
// what running from the read-only mount in an image costs. (The bundles
// come from `make agents`, the image from `make base-images`.)
func BenchmarkBundleStart(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal("needs bubblewrap (make run-deps)")
	}
	// The image's top-level directories read-only on a tmpfs root (a
	// read-only root could not take the bundle's mount point).
	rootfs := testrootfs.Dir(b)
	entries, err := os.ReadDir(rootfs)
	if err != nil {
		b.Fatal(err)
	}
	root := []string{"--tmpfs", "/"}
	for _, e := range entries {
		p := filepath.Join(rootfs, e.Name())
		switch {
		case e.Name() == "proc" || e.Name() == "dev" || e.Name() == "tmp":
		case e.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				b.Fatal(err)
			}
			root = append(root, "--symlink", target, "/"+e.Name())
		case e.IsDir():
			root = append(root, "--ro-bind", p, "/"+e.Name())
		}
	}
	for _, h := range Bundled(harness.All()) {
		dir, err := (Cache{}).Path(h)
		if err != nil {
			b.Fatalf("%v\n(prepare the bundles with `make agents`)", err)
		}
		args := startArgs[h.Name]
		if args == "" {
			args = "--version"
		}
		script := func(at string) string {
			s := at + "/" + h.Bundle.Program + " " + args + " >/dev/null"
			if h.Bundle.Program == "bin/node" { // gemini-cli: its JS on the bundled Node
				s = at + "/bin/node " + at + "/gemini/bundle/gemini.js --version >/dev/null"
			}
			if h.Bundle.Glibc {
				s = "exec " + harness.RuntimeFD + "<" + at + "/" + harness.RuntimeLib + " && " + s
			}
			return s
		}
		// copilot-cli finds its unpacked JS through this variable (its row's Env).
		env := []string{"PATH=/usr/bin:/bin", "COPILOT_PKG_CACHE_HOME=" + dir + "/copilot"}
		b.Run(h.Name+"/host", func(b *testing.B) {
			home := b.TempDir()
			for b.Loop() {
				cmd := exec.Command(dir+"/"+harness.RuntimePath+"/bash", "-c", script(dir))
				cmd.Env = append(env, "HOME="+home)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
		b.Run(h.Name+"/image", func(b *testing.B) {
			at := harness.BundleMount
			for b.Loop() {
				args := append(slices.Clip(root), "--ro-bind", dir, at, "--proc", "/proc", "--dev", "/dev",
					"--tmpfs", "/tmp", "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "PATH", at+"/"+harness.RuntimePath+":/usr/bin:/bin",
					"--setenv", "COPILOT_PKG_CACHE_HOME", at+"/copilot", "--unshare-all", "--die-with-parent", "bash", "-c", script(at))
				cmd := exec.Command(bwrap, args...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
}
