package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// presigningStore is a file blob store that also hands out URLs, standing in
// for S3's presigner so the choice between a URL and a local path can be
// seen; the cloud adapter's real presigning is tested in pkg/awsx/s3blob.
type presigningStore struct{ *fsblob.Store }

func (presigningStore) PresignGet(_ context.Context, key string, _ time.Duration) (string, error) {
	return "https://bucket.example/" + key + "?X-Amz-Signature=x", nil
}

func (presigningStore) PresignPut(_ context.Context, key string, _ time.Duration) (string, error) {
	return "https://bucket.example/" + key + "?X-Amz-Signature=y", nil
}

// TestResolveLocal: a local driver resolves the stored references to what
// its runner can read, by what its blob port offers.
func TestResolveLocal(t *testing.T) {
	ctx := context.Background()
	files, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := files.Put(ctx, "tasks/abc.tar.gz", strings.NewReader("bundle")); err != nil {
		t.Fatal(err)
	}
	dirAndBundle := sandbox.TaskRef{Name: "hello", Dir: "/srv/tasks/hello", BundleKey: "tasks/abc.tar.gz"}
	bundleOnly := sandbox.TaskRef{Name: "hello", BundleKey: "tasks/abc.tar.gz"}
	missing := sandbox.TaskRef{Name: "hello", BundleKey: "tasks/missing.tar.gz"}

	var local blob.Store = files
	var cloud blob.Store = presigningStore{files}
	tests := []struct {
		name    string
		blobs   blob.Store
		task    sandbox.TaskRef
		check   func(dir, file, url string) bool
		wantErr bool
	}{
		{"local prefers the synced directory", local, dirAndBundle, func(d, f, u string) bool { return d == "/srv/tasks/hello" && f == "" && u == "" }, false},
		{"local unpacks a git task's bundle file", local, bundleOnly, func(d, f, u string) bool { return d == "" && strings.HasSuffix(f, "tasks/abc.tar.gz") && u == "" }, false},
		{"local with a missing bundle fails", local, missing, nil, true},
		{"a presigning store always gives a URL", cloud, dirAndBundle, func(d, f, u string) bool { return d == "" && f == "" && strings.HasPrefix(u, "https://") }, false},
		{"no references at all fail", local, sandbox.TaskRef{Name: "hello"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := sandbox.ResolveLocal(ctx, tt.task, tt.blobs)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ResolveLocal = %+v, want an error", ref)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(ref.Dir, ref.BundleFile, ref.BundleURL) {
				t.Errorf("ResolveLocal = %+v", ref)
			}
		})
	}
}
