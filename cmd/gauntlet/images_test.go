package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestImagesPullListPrune(t *testing.T) {
	reg := imagetest.Registry(t, localreg.Options{})
	img := imagetest.Image(t, v1.Config{WorkingDir: "/app"}, imagetest.Layer(t, imagetest.File("app/x", "x")))
	if err := reg.Push(context.Background(), "library/app:1", img); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "images.toml")
	if err := image.WriteSettings(settings, image.Settings{Mirrors: []image.Mirror{reg.Mirror("docker.io")}}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	flags := []string{"--data", data, "--settings", settings}

	out, errOut, code := gauntlet(t, append([]string{"images", "pull", "app:1"}, flags...)...)
	if code != 0 || !strings.Contains(out, "docker.io/library/app@"+imagetest.Digest(t, img)) {
		t.Fatalf("images pull: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = gauntlet(t, append([]string{"images", "list"}, flags...)...)
	if code != 0 || !strings.Contains(out, "docker.io/library/app:1") || !strings.Contains(out, "ROOTFS") {
		t.Fatalf("images list: code %d\n%s", code, out)
	}
	out, errOut, code = gauntlet(t, append([]string{"images", "pull", "nosuch:1"}, flags...)...)
	if code != 1 || !strings.Contains(errOut, "image nosuch:1") || !strings.Contains(errOut, "image not found") {
		t.Fatalf("images pull nosuch: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = gauntlet(t, append([]string{"images", "prune", "--images"}, flags...)...)
	if code != 0 || !strings.Contains(out, "removed 1 rootfs") || !strings.Contains(out, "1 images") {
		t.Fatalf("images prune: code %d\n%s", code, out)
	}
	if ents, _ := os.ReadDir(filepath.Join(data, "images", "rootfs")); len(ents) > 1 { // the lock file may stay
		t.Fatalf("rootfs cache after prune: %v", ents)
	}
	_, errOut, code = gauntlet(t, "images", "pull", "--data", data, "--mirror", "docker.io", "app:1")
	if code != 2 || !strings.Contains(errOut, "--mirror") {
		t.Fatalf("images pull --mirror docker.io: code %d, stderr %s; want a usage error", code, errOut)
	}
}
