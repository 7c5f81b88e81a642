package main

import (
	"context"
	"encoding/json"
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
	// Two images FROM one base: the base layer is unpacked once and shared.
	base := imagetest.Layer(t, imagetest.File("usr/lib/base.bin", strings.Repeat("b", 64<<10)))
	img := imagetest.Image(t, v1.Config{WorkingDir: "/app"}, base, imagetest.Layer(t, imagetest.File("app/x", "x")))
	other := imagetest.Image(t, v1.Config{WorkingDir: "/app"}, base, imagetest.Layer(t, imagetest.File("app/y", "yy")))
	if err := reg.Push(context.Background(), "library/app:1", img); err != nil {
		t.Fatal(err)
	}
	if err := reg.Push(context.Background(), "library/app:2", other); err != nil {
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
	if out, errOut, code = gauntlet(t, append([]string{"images", "pull", "app:2"}, flags...)...); code != 0 {
		t.Fatalf("images pull app:2: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = gauntlet(t, append([]string{"images", "list", "--json"}, flags...)...)
	var list []image.Info
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 2 {
		t.Fatalf("images list --json: code %d, %v\n%s", code, err, out)
	}
	for _, i := range list {
		if i.Layers != 2 || i.Shared != 64<<10 || i.Own > 2 {
			t.Errorf("images list: %v has %d layers, own %d, shared %d bytes; want 2 layers, the 64 KiB base shared", i.Names, i.Layers, i.Own, i.Shared)
		}
	}
	out, _, code = gauntlet(t, append([]string{"images", "list"}, flags...)...)
	if code != 0 || !strings.Contains(out, "docker.io/library/app:1") || !strings.Contains(out, "SHARED") {
		t.Fatalf("images list: code %d\n%s", code, out)
	}
	out, _, code = gauntlet(t, append([]string{"images", "du", "--json"}, flags...)...)
	var u image.Usage
	if err := json.Unmarshal([]byte(out), &u); code != 0 || err != nil {
		t.Fatalf("images du --json: code %d, %v\n%s", code, err, out)
	}
	if u.Layers != 3 || u.LayerBytes != 64<<10+3 || u.SharedBytes != 64<<10 || u.ImageBytes != 2*(64<<10)+3 || u.Unpacked != 2 {
		t.Errorf("images du = %+v: want 3 layers of 64 KiB + 3 bytes, the base shared by 2 unpacked images", u)
	}
	out, _, code = gauntlet(t, append([]string{"images", "du"}, flags...)...)
	if code != 0 || !strings.Contains(out, "saved by sharing layers") {
		t.Fatalf("images du: code %d\n%s", code, out)
	}
	out, errOut, code = gauntlet(t, append([]string{"images", "pull", "nosuch:1"}, flags...)...)
	if code != 1 || !strings.Contains(errOut, "image nosuch:1") || !strings.Contains(errOut, "image not found") {
		t.Fatalf("images pull nosuch: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = gauntlet(t, append([]string{"images", "prune", "--images"}, flags...)...)
	if code != 0 || !strings.Contains(out, "removed 2 rootfs, 3 layers") || !strings.Contains(out, "2 images") {
		t.Fatalf("images prune: code %d\n%s", code, out)
	}
	if ents, _ := os.ReadDir(filepath.Join(data, "images", "layers")); len(ents) != 0 {
		t.Fatalf("layers after prune: %v", ents)
	}
	_, errOut, code = gauntlet(t, "images", "pull", "--data", data, "--mirror", "docker.io", "app:1")
	if code != 2 || !strings.Contains(errOut, "--mirror") {
		t.Fatalf("images pull --mirror docker.io: code %d, stderr %s; want a usage error", code, errOut)
	}
}
