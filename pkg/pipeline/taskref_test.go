package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
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

func TestTaskRefPicksWhatTheSandboxCanRead(t *testing.T) {
	ctx := context.Background()
	files, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := files.Put(ctx, "tasks/abc.tar.gz", strings.NewReader("bundle")); err != nil {
		t.Fatal(err)
	}
	dirAndBundle := &records.Task{Files: records.TaskFiles{Dir: "/srv/tasks/hello", BundleKey: "tasks/abc.tar.gz"}}
	bundleOnly := &records.Task{Files: records.TaskFiles{BundleKey: "tasks/abc.tar.gz"}}
	missing := &records.Task{Files: records.TaskFiles{BundleKey: "tasks/missing.tar.gz"}}

	local := &Service{ports: Ports{Blobs: files}}
	cloud := &Service{ports: Ports{Blobs: presigningStore{files}}}
	tests := []struct {
		name    string
		svc     *Service
		task    *records.Task
		check   func(dir, file, url string) bool
		wantErr bool
	}{
		{"local prefers the synced directory", local, dirAndBundle, func(d, f, u string) bool { return d == "/srv/tasks/hello" && f == "" && u == "" }, false},
		{"local unpacks a git task's bundle file", local, bundleOnly, func(d, f, u string) bool { return d == "" && strings.HasSuffix(f, "tasks/abc.tar.gz") && u == "" }, false},
		{"local with a missing bundle fails", local, missing, nil, true},
		{"cloud always sends a URL", cloud, dirAndBundle, func(d, f, u string) bool { return d == "" && f == "" && strings.HasPrefix(u, "https://") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := tt.svc.taskRef(ctx, tt.task)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("taskRef = %+v, want an error", ref)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(ref.Dir, ref.BundleFile, ref.BundleURL) {
				t.Errorf("taskRef = %+v", ref)
			}
		})
	}
}
