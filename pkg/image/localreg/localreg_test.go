package localreg_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
)

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:5000"} {
		if r, err := localreg.Start(localreg.Options{Addr: addr, BlobDir: t.TempDir()}); err == nil {
			r.Close()
			t.Errorf("Start(%q) succeeded, want a loopback-only error", addr)
		} else if !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Start(%q) = %v, want a loopback-only error", addr, err)
		}
	}
}

func TestBaseLayoutSaysMakeBaseImages(t *testing.T) {
	_, err := localreg.BaseLayout(t.TempDir())
	if !errors.Is(err, localreg.ErrNoBaseImages) || !strings.Contains(err.Error(), "make base-images") {
		t.Fatalf("BaseLayout(empty dir) = %v, want ErrNoBaseImages saying make base-images", err)
	}
}

func TestBaseDirFollowsGauntletCache(t *testing.T) {
	t.Setenv("GAUNTLET_CACHE", "/x/cache")
	if got := localreg.BaseDir(); got != "/x/cache/base" {
		t.Fatalf("BaseDir() = %q, want /x/cache/base", got)
	}
}
