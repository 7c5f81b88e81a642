package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
)

// BundleURLTTL bounds the presigned URL of a task bundle: the runner
// fetches it once, right after it starts.
const BundleURLTTL = 2 * time.Hour

// FilePaths is implemented by blob stores whose objects are local files
// (fsblob): a local sandbox can unpack a task bundle in place.
type FilePaths interface {
	Path(key string) (string, error)
}

// ErrNoTaskFiles reports a task reference that no driver can resolve.
var ErrNoTaskFiles = errors.New("sandbox: no task files")

// ResolveLocal resolves ref for a runner on this host with blob store
// blobs: a bundle a presigning store holds is fetched through a URL, a
// recorded directory is used as is, and a bundle a file-backed store holds
// is unpacked from its file.
func ResolveLocal(ctx context.Context, ref TaskRef, blobs blob.Store) (TaskRef, error) {
	presigner, remote := blobs.(blob.Presigner)
	files, hasFiles := blobs.(FilePaths)
	switch {
	case remote && ref.BundleKey != "":
		url, err := presigner.PresignGet(ctx, ref.BundleKey, BundleURLTTL)
		if err != nil {
			return ref, fmt.Errorf("task %s: presign bundle: %w", ref.Name, err)
		}
		ref.BundleURL, ref.Dir = url, ""
	case ref.Dir != "":
	case hasFiles && ref.BundleKey != "":
		path, err := files.Path(ref.BundleKey)
		if err != nil {
			return ref, fmt.Errorf("task %s: bundle: %w", ref.Name, err)
		}
		ref.BundleFile = path
	case ref.BundleKey != "":
		return ref, fmt.Errorf("task %s: its bundle %s needs a blob store that presigns URLs or keeps local files: %w", ref.Name, ref.BundleKey, ErrNoTaskFiles)
	default:
		return ref, fmt.Errorf("task %s: %w recorded", ref.Name, ErrNoTaskFiles)
	}
	return ref, nil
}
