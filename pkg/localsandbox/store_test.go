package localsandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// TestLaunchRunsTheTasksImageFromTheStore goes through the real image
// store: the Debian base image pulled from a loopback registry, resolved
// to a digest and unpacked ahead of the launch (as sync does), then run by
// the driver from the store's cache.
func TestLaunchRunsTheTasksImageFromTheStore(t *testing.T) {
	f := newFixture(t)
	_, mirrors := imagetest.BaseImages(t)
	store, err := image.Open(t.TempDir(), image.Options{Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := store.Resolve(ctx, "debian:bookworm-slim")
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	f.driver.cfg.Images = storeImages{store}

	// Not prepared yet: the launch must not pull it.
	s := spec(t, "cold", "command", "true")
	s.Image = res.Ref
	if _, err := f.driver.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if c := f.nextCompletion(t); c.Reason != sandbox.FailedToStart || !strings.Contains(c.Message, "not") {
		t.Errorf("launch of an image not in the cache: completion %+v, want failed_to_start", c)
	}

	rf, err := store.Rootfs(ctx, res.Ref) // what sync does
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	_ = rf.Close()
	s = spec(t, "warm", "command", `{ echo "debian=$(cut -d. -f1 /etc/debian_version)"; echo "bwrap=$([ -e /usr/bin/bwrap ] && echo host || echo absent)"; } > /logs/agent/probe.txt`)
	s.Image = res.Ref
	if _, err := f.driver.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if c := f.nextCompletion(t); c.Reason != sandbox.Exited || c.ExitCode != sandbox.ExitOK {
		t.Fatalf("completion %+v, want exited 0", c)
	}
	if got := string(f.blobs.get(t, "runs/run-1/slots/warm/g2/artifacts/agent/probe.txt")); got != "debian=12\nbwrap=absent\n" {
		t.Errorf("probe = %q, want Debian 12 and no host bwrap", got)
	}
	if _, err := store.CachedRootfs(ctx, "docker.io/library/debian@sha256:"+strings.Repeat("0", 64)); !errors.Is(err, image.ErrNotCached) {
		t.Errorf("CachedRootfs(unknown) = %v, want ErrNotCached", err)
	}
}

// storeImages is Images over the image store's cache, as the platform wires
// it (pkg/localimages on the envsync branch does the same).
type storeImages struct{ s *image.Store }

func (si storeImages) CachedRootfs(ctx context.Context, ref string) (Rootfs, error) {
	r, err := si.s.CachedRootfs(ctx, ref)
	if err != nil {
		return Rootfs{}, err
	}
	return Rootfs{Layers: r.Layers, Env: r.Config.Env, WorkingDir: r.Config.WorkingDir, User: r.Config.User,
		Release: func() { _ = r.Close() }}, nil
}
