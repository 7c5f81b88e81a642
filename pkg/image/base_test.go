package image_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
)

// TestBaseImages pulls the Debian base images through the docker.io mirror
// setting, as a TB2 task's `FROM python:3.13-slim-bookworm` would be.
func TestBaseImages(t *testing.T) {
	_, mirrors := imagetest.BaseImages(t)
	st, err := image.Open(filepath.Join(t.TempDir(), "images"), image.Options{Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ ref, file string }{
		{"debian:bookworm-slim", "usr/bin/bash"},
		{"python:3.13-slim-bookworm", "usr/bin/python3"},
	} {
		res, err := st.Resolve(ctx, tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Rootfs(ctx, res.Ref)
		if err != nil {
			t.Fatal(err)
		}
		root := imagetest.Mount(t, r.Layers)
		if _, err := os.Stat(filepath.Join(root, tc.file)); err != nil {
			t.Errorf("%s: %v", tc.ref, err)
		}
		if l, err := os.Readlink(filepath.Join(root, "bin")); err != nil || l != "usr/bin" {
			t.Errorf("%s: /bin -> %q (%v), want usr/bin (merged /usr)", tc.ref, l, err)
		}
		r.Close()
	}
}
