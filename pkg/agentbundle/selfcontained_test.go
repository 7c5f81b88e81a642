package agentbundle

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// TestPreparedBundlesRunWithNothingButThemselves starts every prepared
// bundle's program in a bubblewrap sandbox whose root filesystem holds the
// bundle and nothing else — no /lib, no /bin/sh, no /usr — mounted at a
// path that is not /installed-agent: each runs, on the bundle's own loader
// and libraries (Node's memory map shows no library from elsewhere), under
// the bundle's own bash. (The bundles come from `make agents`; this fails,
// never skips, without them.)
func TestPreparedBundlesRunWithNothingButThemselves(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal("needs bubblewrap (make run-deps)")
	}
	for _, h := range Bundled(harness.All()) {
		t.Run(h.Name, func(t *testing.T) {
			dir, err := (Cache{}).Path(h)
			if err != nil {
				t.Fatalf("%v\n(prepare the bundles with `make agents`)", err)
			}
			const at = "/opt/elsewhere/agent"
			script := at + "/" + h.Bundle.Program + " --version"
			if h.Bundle.Glibc {
				script = "exec " + harness.RuntimeFD + "<" + at + "/" + harness.RuntimeLib + " && " + script
			}
			if h.Bundle.Program == "bin/node" {
				script += ` && ` + at + `/bin/node -e 'for (const l of require("fs").readFileSync("/proc/self/maps", "utf8").split("\n")) { const f = l.split(/\s+/)[5]; if (f && f.includes(".so")) console.log("MAP " + f) }'`
			}
			cmd := exec.Command(bwrap, "--ro-bind", dir, at, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
				"--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "PATH", at+"/"+harness.RuntimePath,
				"--unshare-all", "--die-with-parent", "bash", "-c", script)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s in an empty root: %v\n%s", h.Bundle.Program, err, out.String())
			}
			if h.Bundle.Program != "bin/node" && !strings.Contains(out.String(), h.Version) {
				t.Errorf("%s --version = %q, want %s", h.Bundle.Program, out.String(), h.Version)
			}
			maps := 0
			for _, line := range strings.Split(out.String(), "\n") {
				if f, ok := strings.CutPrefix(line, "MAP "); ok {
					maps++
					if !strings.HasPrefix(f, at+"/"+harness.RuntimeLib+"/") {
						t.Errorf("node mapped %s, not a library of its bundle", f)
					}
				}
			}
			if h.Bundle.Program == "bin/node" && maps < 5 {
				t.Errorf("node's memory map shows %d libraries, want its loader, libc, libstdc++, libgcc_s, libatomic…\n%s", maps, out.String())
			}
			if err := CheckRunnable(filepath.Join(dir, h.Bundle.Program), t.TempDir()); err != nil {
				t.Errorf("CheckRunnable in an empty root: %v", err)
			}
		})
	}
}

// TestCheckRunnableOfABundleProgramLooksInItsBundle: a program on the
// bundle's loader is checked against the bundle's lib/, not the image.
func TestCheckRunnableOfABundleProgramLooksInItsBundle(t *testing.T) {
	h, _ := harness.Lookup("gemini-cli")
	dir, err := (Cache{}).Path(h)
	if err != nil {
		t.Fatalf("%v\n(prepare the bundles with `make agents`)", err)
	}
	// A copy of the bundle without libatomic.
	cp := t.TempDir()
	for _, rel := range []string{h.Bundle.Program, harness.RuntimeLoader, "lib/libc.so.6", "lib/libm.so.6", "lib/libdl.so.2",
		"lib/libpthread.so.0", "lib/libstdc++.so.6", "lib/libgcc_s.so.1"} {
		if err := os.MkdirAll(filepath.Join(cp, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(dir, rel), filepath.Join(cp, rel)); err != nil {
			t.Fatal(err)
		}
	}
	err = CheckRunnable(filepath.Join(cp, h.Bundle.Program), "/")
	if !errors.Is(err, ErrUnrunnable) || !strings.Contains(err.Error(), "libatomic.so.1") {
		t.Errorf("CheckRunnable without the bundle's libatomic = %v, want ErrUnrunnable naming it (the host's must not count)", err)
	}
}
