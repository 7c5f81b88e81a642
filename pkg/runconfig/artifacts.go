package runconfig

import (
	"path"
	"strings"
)

// MaxArtifacts bounds the run config's trial-level artifacts.
const MaxArtifacts = 64

// artifactPath checks one trial-level artifact: an absolute path in the
// environment that cannot climb out of it (the rules of a task's
// `artifacts`, pkg/harbor).
func (d *decoder) artifactPath(p string, v any) (string, bool) {
	s, ok := v.(string)
	switch {
	case !ok:
		d.add(p, "must be a path string, got %s", typeName(v))
	case !strings.HasPrefix(s, "/"):
		d.add(p, "must be an absolute path in the environment (e.g. \"/app/out.txt\"), got %q: a relative path is outside the environment's file tree", s)
	case strings.ContainsRune(s, 0) || len(s) > 1024:
		d.add(p, "must be a path of at most 1024 bytes without NUL")
	case hasDotDot(s):
		d.add(p, "must not contain '..' components (it would name a path outside the environment), got %q", s)
	case path.Clean(s) == "/":
		d.add(p, "must name a file or directory below /, got %q", s)
	default:
		return path.Clean(s), true
	}
	return "", false
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
