package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBuilders measures one task's build (BenchmarkBuild's Dockerfile:
// FROM the Debian minbase served on loopback, one RUN step, WORKDIR) on
// three builders side by side in one run, each in the same three cases:
//
//   - cold: empty storage, the base pulled, the step run;
//   - next: another task's Dockerfile FROM the base the storage holds;
//   - warm: the same Dockerfile again, every step cached;
//   - warm-key (buildah only): the same again through the platform's
//     whole-build cache (Config.Built), which finds the build key in the
//     store and runs nothing.
//
// The builders:
//
//   - buildah: Builder.Build as the platform runs it (overlay storage, the
//     RUN steps in their own namespaces with slirp4netns, the image pushed
//     to an OCI layout the importer takes);
//   - buildkitd: moby/buildkit v0.26.2's buildkitd (OCI worker, runc,
//     overlayfs snapshotter, as root) driven by buildctl, the image exported
//     as an OCI layout dir (what an importer would take; zstd level 1, as
//     buildah's push), RUN steps with
//     network none; the binaries come from $GAUNTLET_BUILDKIT_BIN or the
//     cache `make buildkit` fills;
//   - docker: Debian's docker.io 20.10 engine (its own data root, no
//     bridge, no iptables) with `DOCKER_BUILDKIT=1 /usr/bin/docker build
//     --network none`, the image kept in its own store.
//
// A builder that is not installed is skipped, saying so.
func BenchmarkBuilders(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("run as root: the builds' namespaces, buildkitd and dockerd need it here")
	}
	base := serveDebianBase(b)
	registryHost := strings.Split(base, "/")[0]
	dockerfile := func(i int) []byte {
		return fmt.Appendf(nil, "FROM %s\nRUN echo %d > /task.txt && mkdir -p /app\nWORKDIR /app\n", base, i)
	}
	// keyCache turns on the platform's whole-build cache (Config.Built:
	// a build key the store holds is not built again) for buildah's
	// warm-key case.
	keyCache := false
	builders := []struct {
		name string
		// start prepares the builder in dir and returns build (of
		// Dockerfile i) and empty (drop every image and cached layer).
		start func(b *testing.B, dir string) (build func(i int) error, empty func())
	}{
		{"buildah", func(b *testing.B, dir string) (func(int) error, func()) {
			ctxDir := filepath.Join(dir, "context")
			if err := os.MkdirAll(ctxDir, 0o755); err != nil {
				b.Fatal(err)
			}
			storage := filepath.Join(dir, "storage")
			var builder *Builder
			// built are the keys imported; consulted (as the platform's
			// store is) only in the warm-key case.
			built := map[string]bool{}
			fresh := func() {
				if builder != nil {
					unmountBelow(storage)
					if err := os.RemoveAll(storage); err != nil {
						b.Fatal(err)
					}
				}
				var err error
				clear(built)
				builder, err = New(Config{Dir: storage, Import: func(_ context.Context, layout, key string) (string, error) {
					built[key] = true
					return "oci:" + layout, os.RemoveAll(layout)
				}, Built: func(_ context.Context, key string) (string, bool) {
					return "oci:built", keyCache && built[key]
				}})
				if err != nil {
					b.Fatal(err)
				}
			}
			fresh()
			b.Cleanup(func() { unmountBelow(storage) })
			return func(i int) error {
				var log strings.Builder
				if _, err := builder.Build(context.Background(), Request{Key: fmt.Sprintf("%064x", i), ContextDir: ctxDir, Dockerfile: dockerfile(i), Log: &log}); err != nil {
					return fmt.Errorf("%w\n%s", err, log.String())
				}
				return nil
			}, fresh
		}},
		{"buildkitd", func(b *testing.B, dir string) (func(int) error, func()) {
			bin := os.Getenv("GAUNTLET_BUILDKIT_BIN")
			if bin == "" {
				cache := os.Getenv("GAUNTLET_CACHE")
				if cache == "" {
					home, _ := os.UserHomeDir()
					cache = filepath.Join(home, ".cache", "gauntlet")
				}
				bin = filepath.Join(cache, "buildkit", "v0.26.2")
			}
			buildkitd, buildctl := filepath.Join(bin, "buildkitd"), filepath.Join(bin, "buildctl")
			if _, err := os.Stat(buildkitd); err != nil {
				b.Skipf("buildkitd not built (make buildkit): %v", err)
			}
			conf := filepath.Join(dir, "buildkitd.toml")
			if err := os.WriteFile(conf, fmt.Appendf(nil, "[registry.%q]\nhttp = true\ninsecure = true\n", registryHost), 0o600); err != nil {
				b.Fatal(err)
			}
			addr := "unix://" + filepath.Join(dir, "buildkitd.sock")
			daemonLog := &bytes.Buffer{}
			d := exec.Command(buildkitd, "--root", filepath.Join(dir, "root"), "--addr", addr, "--config", conf,
				"--oci-worker-snapshotter", "overlayfs", "--oci-worker-net", "host", "--containerd-worker", "false")
			d.Stdout, d.Stderr = daemonLog, daemonLog
			d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := d.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_ = syscall.Kill(-d.Process.Pid, syscall.SIGTERM)
				_ = d.Wait()
				unmountBelow(dir)
			})
			ctl := func(args ...string) error {
				out, err := exec.Command(buildctl, append([]string{"--addr", addr}, args...)...).CombinedOutput()
				if err != nil {
					return fmt.Errorf("buildctl %s: %w\n%s", strings.Join(args, " "), err, out)
				}
				return nil
			}
			waitReady(b, func() bool { return ctl("debug", "workers") == nil }, daemonLog)
			ctxDir := filepath.Join(dir, "context")
			if err := os.MkdirAll(ctxDir, 0o755); err != nil {
				b.Fatal(err)
			}
			return func(i int) error {
					if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), dockerfile(i), 0o600); err != nil {
						return err
					}
					out := filepath.Join(dir, "out")
					defer os.RemoveAll(out)
					return ctl("build", "--progress", "plain", "--frontend", "dockerfile.v0", "--local", "context="+ctxDir, "--local", "dockerfile="+ctxDir,
						"--opt", "force-network-mode=none", "--output", "type=oci,tar=false,compression=zstd,compression-level=1,dest="+out)
				}, func() {
					if err := ctl("prune", "--all"); err != nil {
						b.Fatal(err)
					}
				}
		}},
		{"docker", func(b *testing.B, dir string) (func(int) error, func()) {
			if _, err := exec.LookPath("dockerd"); err != nil {
				b.Skipf("dockerd not installed (apt-get install docker.io): %v", err)
			}
			cli := "/usr/bin/docker" // docker.io's own client, which builds with BuildKit without buildx
			if _, err := os.Stat(cli); err != nil {
				b.Skipf("docker.io's client not installed (apt-get install docker.io): %v", err)
			}
			sock := "unix://" + filepath.Join(dir, "docker.sock")
			daemonLog := &bytes.Buffer{}
			d := exec.Command("dockerd", "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
				"--host", sock, "--pidfile", filepath.Join(dir, "docker.pid"), "--iptables=false", "--bridge=none")
			d.Stdout, d.Stderr = daemonLog, daemonLog
			d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := d.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_ = syscall.Kill(d.Process.Pid, syscall.SIGTERM)
				_ = d.Wait()
				unmountBelow(dir)
			})
			docker := func(args ...string) error {
				cmd := exec.Command(cli, args...)
				cmd.Env = append(os.Environ(), "DOCKER_HOST="+sock, "DOCKER_BUILDKIT=1")
				out, err := cmd.CombinedOutput()
				if err != nil {
					return fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, out)
				}
				return nil
			}
			waitReady(b, func() bool { return docker("info") == nil }, daemonLog)
			ctxDir := filepath.Join(dir, "context")
			if err := os.MkdirAll(ctxDir, 0o755); err != nil {
				b.Fatal(err)
			}
			return func(i int) error {
					if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), dockerfile(i), 0o600); err != nil {
						return err
					}
					return docker("build", "-q", "--network", "none", "-t", fmt.Sprintf("task:%d", i), ctxDir)
				}, func() {
					if err := docker("system", "prune", "--all", "--force"); err != nil {
						b.Fatal(err)
					}
					if err := docker("builder", "prune", "--all", "--force"); err != nil {
						b.Fatal(err)
					}
				}
		}},
	}
	for _, bd := range builders {
		b.Run(bd.name, func(b *testing.B) {
			dir := b.TempDir()
			build, empty := bd.start(b, dir)
			must := func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.Run("cold", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					empty()
					b.StartTimer()
					must(build(0))
				}
			})
			n := 0
			b.Run("next", func(b *testing.B) {
				for b.Loop() {
					n++
					must(build(n))
				}
			})
			b.Run("warm", func(b *testing.B) {
				for b.Loop() {
					must(build(0))
				}
			})
			if bd.name == "buildah" {
				// The same Dockerfile and context as the platform builds
				// it: the build key is in the store, nothing runs.
				keyCache = true
				b.Run("warm-key", func(b *testing.B) {
					for b.Loop() {
						must(build(0))
					}
				})
				keyCache = false
			}
		})
	}
}

// waitReady polls ready until it holds (a daemon answering), failing after
// two minutes with the daemon's log.
func waitReady(b *testing.B, ready func() bool, log *bytes.Buffer) {
	b.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for !ready() {
		select {
		case <-tick.C:
		case <-deadline:
			b.Fatalf("the daemon did not answer in 2 minutes:\n%s", log.String())
		}
	}
}
