package harbor

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ArtifactsManifestFile is the record of one artifact collection, beside
// what it collected (Harbor's manifest.json); no destination may shadow it.
const ArtifactsManifestFile = "manifest.json"

// ArtifactsConventionDir is the agent's publish directory, collected on
// every trial and handed to a separate verifier at the same path.
const ArtifactsConventionDir = "/logs/artifacts"

// MainService is the compose service the agent runs in; an artifact with
// no service is collected from it.
const MainService = "main"

// Artifact is one entry of `artifacts = [...]` (task, step or trial
// level): a path in the environment collected after the agent ran, kept
// with the attempt and handed to a separate verifier at Source.
type Artifact struct {
	// Source is the absolute path in the environment (file or directory).
	Source string `json:"source"`
	// Destination is where the copy lands, relative to the attempt's
	// artifacts directory; "" mirrors Source there.
	Destination string `json:"destination,omitempty"`
	// Exclude lists patterns left out of a directory artifact (tar
	// --exclude semantics: a pattern matches a path or any of its names).
	Exclude []string `json:"exclude,omitempty"`
	// Service is the compose service the artifact comes from; "" or
	// "main" is the agent's environment.
	Service string `json:"service,omitempty"`
}

// Sidecar reports whether the artifact comes from a service other than
// the agent's environment.
func (a Artifact) Sidecar() bool { return a.Service != "" && a.Service != MainService }

// HostPath is the artifact's place under the attempt's artifacts
// directory (slash-separated, relative): its destination, else its source
// without the leading slash, as Harbor lays them out.
func (a Artifact) HostPath() string {
	if a.Destination != "" {
		return strings.Trim(path.Clean(a.Destination), "/")
	}
	return strings.TrimPrefix(path.Clean(a.Source), "/")
}

// ParseArtifacts reads an `artifacts` value (strings, or tables with
// source, destination, exclude and service) as Harbor's ArtifactConfig
// does. field names it in errors ("artifacts", "steps[0].artifacts"); file
// names the file. Every invalid entry is reported, joined into one error.
func ParseArtifacts(v any, file, field string) ([]Artifact, error) {
	r := &fieldReader{file: file}
	list := r.artifactList(v, field)
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return list, nil
}

func (r *fieldReader) artifacts(doc map[string]any, prefix string) []Artifact {
	v, ok := doc["artifacts"]
	if !ok {
		return nil
	}
	return r.artifactList(v, joinKey(prefix, "artifacts"))
}

func (r *fieldReader) artifactList(v any, field string) []Artifact {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case []map[string]any:
		for _, m := range x {
			items = append(items, m)
		}
	default:
		r.fail(field, "must be an array of paths or tables with source, destination, exclude and service, got %s", tomlType(v))
		return nil
	}
	out := make([]Artifact, 0, len(items))
	for i, item := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		var a Artifact
		switch x := item.(type) {
		case string:
			a.Source = x
			if !r.artifactSource(a.Source, f) {
				continue
			}
		case map[string]any:
			src, ok := r.str(x, f, "source")
			if !ok {
				if _, present := x["source"]; !present {
					r.fail(f+".source", "is required")
				}
				continue
			}
			a.Source = src
			if !r.artifactSource(a.Source, f+".source") {
				continue
			}
			a.Destination, _ = r.str(x, f, "destination")
			if a.Destination != "" && !r.artifactDestination(a.Destination, f+".destination") {
				continue
			}
			a.Exclude, _ = r.strList(x, f, "exclude")
			a.Service, _ = r.str(x, f, "service")
		default:
			r.fail(f, "must be a path or a table with source, got %s", tomlType(item))
			continue
		}
		out = append(out, a)
	}
	return out
}

// artifactSource checks a source: an absolute path in the environment
// that cannot climb out of it (Harbor refuses ".." components; gauntlet
// also refuses a relative path, which names no place of its own).
func (r *fieldReader) artifactSource(src, field string) bool {
	switch {
	case src == "":
		r.fail(field, "must be an absolute path in the environment, got an empty string")
	case strings.ContainsRune(src, 0):
		r.fail(field, "contains a NUL character")
	case !strings.HasPrefix(src, "/"):
		r.fail(field, "must be an absolute path in the environment (e.g. %q), got %q: a relative path is outside the environment's file tree", "/app/out.txt", src)
	case hasDotDot(src):
		r.fail(field, "must not contain '..' components (it would name a path outside the environment), got %q", src)
	case path.Clean(src) == "/":
		r.fail(field, "must name a file or directory below /, got %q", src)
	default:
		return true
	}
	return false
}

// artifactDestination checks a destination: relative to the attempt's
// artifacts directory, inside it, not the manifest.
func (r *fieldReader) artifactDestination(dst, field string) bool {
	switch {
	case strings.Contains(dst, `\`):
		r.fail(field, "must use forward slashes, got %q", dst)
	case strings.HasPrefix(dst, "/"):
		r.fail(field, "must be a path relative to the attempt's artifacts directory, got %q", dst)
	case hasDotDot(dst):
		r.fail(field, "must not contain '..' components, got %q", dst)
	case strings.Trim(path.Clean(dst), "/") == "" || path.Clean(dst) == ".":
		r.fail(field, "must name a file or directory, got %q", dst)
	case strings.TrimRight(dst, "/") == ArtifactsManifestFile:
		r.fail(field, "%q is reserved for the collection manifest", ArtifactsManifestFile)
	default:
		return true
	}
	return false
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
