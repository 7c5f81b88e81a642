package image_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
)

func TestMirrorPrefixRewriteAndOrder(t *testing.T) {
	dead := imagetest.Registry(t, localreg.Options{})
	dead.Close()
	live := imagetest.Registry(t, localreg.Options{})
	img := simpleImage(t)
	if err := live.Push(context.Background(), "hub/python:3.13", img); err != nil {
		t.Fatal(err)
	}
	mirrors := []image.Mirror{
		// The longer prefix wins over docker.io; its first endpoint is down.
		{Prefix: "docker.io/library", Endpoints: []string{dead.URL, live.URL + "/hub"}, SkipUpstream: true},
		{Prefix: "docker.io", Endpoints: []string{dead.URL}, SkipUpstream: true},
	}
	st, err := image.Open(t.TempDir(), image.Options{Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Resolve(context.Background(), "python:3.13")
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref != "docker.io/library/python@"+imagetest.Digest(t, img) || res.Source != live.URL+"/hub" {
		t.Fatalf("Resolve = %+v, want docker.io/library/python pinned, served by %s/hub", res, live.URL)
	}
	r, err := st.Rootfs(context.Background(), res.Ref)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	// Outside docker.io/library, only the dead docker.io mirror applies.
	if _, err := st.Resolve(context.Background(), "someone/tool:1"); !errors.Is(err, image.ErrUnreachable) {
		t.Fatalf("Resolve(someone/tool) = %v, want ErrUnreachable from the docker.io mirror", err)
	}
}

func TestValidateMirrors(t *testing.T) {
	tests := []struct {
		name    string
		mirrors []image.Mirror
		wantErr string
	}{
		{"ok", []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"https://mirror.example.com/dockerhub", "http://127.0.0.1:5000"}}}, ""},
		{"ok localhost", []image.Mirror{{Prefix: "ghcr.io/org", Endpoints: []string{"http://localhost:5000"}}}, ""},
		{"empty prefix", []image.Mirror{{Endpoints: []string{"https://m.example.com"}}}, "mirrors[0].prefix is empty"},
		{"no endpoints", []image.Mirror{{Prefix: "docker.io"}}, "mirrors[0].endpoints is empty"},
		{"http beyond loopback", []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"http://10.0.0.5:5000"}}}, "plain http is allowed for loopback mirrors only"},
		{"bad scheme", []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"ftp://m.example.com"}}}, `scheme "ftp"`},
		{"twice", []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"https://a.example.com"}}, {Prefix: "index.docker.io", Endpoints: []string{"https://b.example.com"}}}, "mirrors[1].prefix \"index.docker.io\" is set twice"},
		{"credentials in url", []image.Mirror{{Prefix: "docker.io", Endpoints: []string{"https://u:p@m.example.com"}}}, "mirrors[0].endpoints[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := image.ValidateMirrors(tc.mirrors)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateMirrors = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, image.ErrInvalidReference) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidateMirrors = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestBadReferencesAndCredentials(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	for _, ref := range []string{"", "UPPER/case:1", "a:b:c"} {
		if _, err := f.store.Resolve(context.Background(), ref); !errors.Is(err, image.ErrInvalidReference) {
			t.Errorf("Resolve(%q) = %v, want ErrInvalidReference", ref, err)
		}
	}
	if _, err := f.store.Resolve(context.Background(), "app:1", image.Credential{Registry: f.reg.Host}); !errors.Is(err, image.ErrInvalidReference) ||
		!strings.Contains(err.Error(), "neither username nor token") {
		t.Errorf("Resolve with an empty credential = %v, want ErrInvalidReference", err)
	}
}
