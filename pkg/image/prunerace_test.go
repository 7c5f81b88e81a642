package image_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// pausedLaunch imports an image FROM a base (a build's result, not
// unpacked: its layers are blobs) and starts a launch of it
// (RestoreRootfs, which unpacks it from those blobs) that stops at the
// store's hook point until release is called.
type pausedLaunch struct {
	st      *image.Store
	ref     string
	done    chan launchResult
	release func()
}

type launchResult struct {
	r   *image.Rootfs
	err error
}

func startPausedLaunch(t *testing.T, point string) *pausedLaunch {
	t.Helper()
	st, err := image.Open(filepath.Join(t.TempDir(), "images"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := imagetest.Layer(t, imagetest.File("usr/lib/base.so", strings.Repeat("b", 32<<10)))
	img := imagetest.Image(t, v1.Config{}, base, imagetest.Layer(t, imagetest.File("app/own", "own")))
	res, err := st.Import(context.Background(), writeLayout(t, img), "gauntlet.local/build/k0:latest")
	if err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	image.SetTestHook(st, func(p string) {
		if p != point {
			return
		}
		once.Do(func() {
			close(reached)
			<-release
		})
	})
	l := &pausedLaunch{st: st, ref: res.Ref, done: make(chan launchResult, 1)}
	var rel sync.Once
	l.release = func() { rel.Do(func() { close(release) }) }
	t.Cleanup(l.release)
	go func() {
		r, _, err := st.RestoreRootfs(context.Background(), res.Ref)
		l.done <- launchResult{r, err}
	}()
	select {
	case <-reached:
	case r := <-l.done:
		t.Fatalf("the launch ended (%v) before reaching %q", r.err, point)
	}
	return l
}

// TestPruneKeepsAnImageALaunchIsUnpacking: a launch restoring an image
// from its blobs holds the image's lock exclusively while it unpacks; a
// prune --images that runs then (here: while the launch holds the lock and
// has read nothing yet) keeps the image's record and blobs, and the launch
// gets its whole image. Before the fix the prune, which only spared images
// with an unpacked rootfs, removed the record and blobs under the launch:
// "layer 2 (sha256:…): open …/blobs/sha256/…: no such file or directory".
func TestPruneKeepsAnImageALaunchIsUnpacking(t *testing.T) {
	l := startPausedLaunch(t, "rootfs: locked")
	rep, err := l.st.Prune(context.Background(), image.PruneOptions{Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Images != 0 || rep.Blobs != 0 {
		t.Errorf("prune during the launch's unpack removed %d image records and %d blobs, want none: the launch holds the image", rep.Images, rep.Blobs)
	}
	l.release()
	got := <-l.done
	if got.err != nil {
		t.Fatalf("launch while a prune ran: %v", got.err)
	}
	defer got.r.Close()
	for _, f := range []string{"usr/lib/base.so", "app/own"} {
		p, err := got.r.Lookup(f)
		if err == nil {
			_, err = os.ReadFile(p)
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	assertConsistent(t, l.st.Dir())
}

// TestLaunchOfAnImagePrunedBeforeItsLockIsNotCached: a prune --images that
// forgets an image after a launch read its record but before the launch
// took the image's lock leaves the launch ErrNotCached naming the image
// (the next sync brings it back), never a missing-blob error nor a pull.
func TestLaunchOfAnImagePrunedBeforeItsLockIsNotCached(t *testing.T) {
	l := startPausedLaunch(t, "rootfs: record read")
	rep, err := l.st.Prune(context.Background(), image.PruneOptions{Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Images != 1 {
		t.Fatalf("prune forgot %d images, want the one not yet held", rep.Images)
	}
	l.release()
	got := <-l.done
	if got.err == nil {
		got.r.Close()
		t.Fatal("launch of a pruned image succeeded")
	}
	if !errors.Is(got.err, image.ErrNotCached) || !strings.Contains(got.err.Error(), l.ref) {
		t.Fatalf("launch of an image pruned under it = %v, want ErrNotCached naming %s", got.err, l.ref)
	}
	assertConsistent(t, l.st.Dir())
}
