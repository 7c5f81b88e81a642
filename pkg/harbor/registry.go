package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

// HeadVersion is the version name Harbor resolves to first when a dataset is
// named without a version.
const HeadVersion = "head"

// Errors Resolve wraps.
var (
	ErrDatasetNotFound = errors.New("dataset not found")
	ErrVersionNotFound = errors.New("dataset version not found")
	// ErrInvalidEntry reports that the dataset version asked for is in the
	// registry but its entry is refused (Dataset.Problems says why).
	ErrInvalidEntry = errors.New("registry entry invalid")
)

// Registry is Harbor's registry.json: a list of dataset versions. The same
// dataset name appears once per version. An entry that fails its checks
// stays in the list with its Problems, so that it alone is refused and
// every other dataset of the registry stays usable.
type Registry []Dataset

// Dataset is one dataset version of the registry (Harbor's DatasetSpec).
type Dataset struct {
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Description string    `json:"description"`
	Tasks       []TaskRef `json:"tasks"`
	// Metrics are Harbor metric configs ({"type": ..., "kwargs": {...}}),
	// kept verbatim.
	Metrics []json.RawMessage `json:"metrics,omitempty"`
	// Problems says why ParseRegistry refused the entry, one per problem,
	// each naming the entry and the field; nil for a usable entry. It is
	// not part of registry.json.
	Problems []string `json:"-"`
}

// TaskRef points at one task directory: Path inside the git repository
// GitURL at GitCommitID, or a local Path when GitURL is empty.
type TaskRef struct {
	Name        string `json:"name"`
	GitURL      string `json:"git_url,omitempty"`
	GitCommitID string `json:"git_commit_id,omitempty"`
	Path        string `json:"path"`
}

// Spec returns "name@version".
func (d Dataset) Spec() string { return d.Name + "@" + d.Version }

// ParseRegistry decodes and checks a registry.json document. Every entry
// must have a name, a version and tasks with names and paths; an entry that
// does not (or does not even decode) is kept with its Problems, each naming
// the entry and field, and is refused alone by Resolve. Only a document that
// is not a JSON array is an error.
//
// At most MaxRegistryBytes are read; decode errors say the line, column and
// field.
func ParseRegistry(r io.Reader) (Registry, error) {
	data, err := ReadLimited(r, MaxRegistryBytes, "registry")
	if err != nil {
		return nil, err
	}
	var entries []json.RawMessage
	if err := decodeJSON(data, &entries); err != nil {
		return nil, fmt.Errorf("decode registry: %w", err)
	}
	if entries == nil {
		return nil, errors.New("decode registry: want a JSON array of datasets, got null")
	}
	starts := entryOffsets(data, len(entries))
	reg := make(Registry, len(entries))
	for i, raw := range entries {
		d := &reg[i]
		if err := json.Unmarshal(raw, d); err != nil {
			// The decoder fills what it can: the name and version usually
			// survive a wrong type elsewhere, so the entry can be named.
			// The field checks would only repeat the decoder's complaint.
			d.Problems = []string{fmt.Sprintf("registry entry %d (%q): %v", i, d.Spec(), entryJSONError(data, starts[i], err))}
			continue
		}
		for _, err := range d.validate(i) {
			d.Problems = append(d.Problems, err.Error())
		}
	}
	return reg, nil
}

// entryOffsets returns the byte offset in data of each of the n elements of
// the top-level array data holds (data is known to decode as one).
func entryOffsets(data []byte, n int) []int64 {
	starts := make([]int64, 0, n)
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '['
		return make([]int64, n)
	}
	for dec.More() && len(starts) < n {
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
		starts = append(starts, off)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	for len(starts) < n {
		starts = append(starts, 0)
	}
	return starts
}

// entryJSONError is JSONError for an error decoding the entry that starts
// at byte start of data: its position is the document's line and column.
func entryJSONError(data []byte, start int64, err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		shifted := *typ
		shifted.Offset += start
		if shifted.Field == "" {
			return fmt.Errorf("line %s: want a JSON object, got a JSON %s", position(data, shifted.Offset), typ.Value)
		}
		return JSONError(data, &shifted)
	}
	return JSONError(data, err)
}

func (d Dataset) validate(index int) []error {
	var errs []error
	fail := func(field, reason string) {
		errs = append(errs, fmt.Errorf("registry entry %d (%q): %s: %s", index, d.Spec(), field, reason))
	}
	if err := benchmark.CheckDatasetName(d.Name); err != nil {
		fail("name", err.Error())
	}
	if d.Version == "" {
		fail("version", "is required")
	} else if !validVersion(d.Version) {
		fail("version", fmt.Sprintf("%q is not a version: letters, digits, '.', '_', '+', '!' or '-', starting with a letter or digit, at most 128 bytes", d.Version))
	}
	if d.Tasks == nil {
		fail("tasks", "is required")
	}
	for i, t := range d.Tasks {
		if t.Name == "" {
			fail(fmt.Sprintf("tasks[%d].name", i), "is required")
		} else if !benchmark.ValidTaskName(t.Name) {
			fail(fmt.Sprintf("tasks[%d].name", i), fmt.Sprintf("%q is not a task name: %s", t.Name, benchmark.NameRule))
		}
		if t.Path == "" {
			fail(fmt.Sprintf("tasks[%d].path", i), "is required")
		}
		if t.GitCommitID != "" && t.GitURL == "" {
			fail(fmt.Sprintf("tasks[%d].git_commit_id", i), "needs git_url")
		}
	}
	for i, m := range d.Metrics {
		var metric struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(m, &metric); err != nil || metric.Type == "" {
			fail(fmt.Sprintf("metrics[%d]", i), `must be an object with a "type"`)
		}
	}
	return errs
}

// Names returns the distinct dataset names, sorted; an entry whose name or
// version is itself invalid cannot be asked for and is left out.
func (r Registry) Names() []string {
	seen := make(map[string]struct{}, len(r))
	names := make([]string, 0, len(r))
	for _, d := range r {
		if _, ok := seen[d.Name]; !ok && d.addressable() {
			seen[d.Name] = struct{}{}
			names = append(names, d.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Versions returns the distinct versions of dataset name in ascending order
// (see SortVersions); nil when the name is unknown.
func (r Registry) Versions(name string) []string {
	var versions []string
	for _, d := range r {
		if d.Name == name && d.addressable() && !slices.Contains(versions, d.Version) {
			versions = append(versions, d.Version)
		}
	}
	SortVersions(versions)
	return versions
}

// addressable reports whether a request can name the entry: its name and
// version are valid (its other fields may not be).
func (d Dataset) addressable() bool {
	return benchmark.CheckDatasetName(d.Name) == nil && validVersion(d.Version)
}

func validVersion(v string) bool {
	return v != "" && len(v) <= 128 && versionPattern.MatchString(v)
}

// Refused returns the problems of every refused entry, in registry order.
func (r Registry) Refused() []string {
	var out []string
	for _, d := range r {
		out = append(out, d.Problems...)
	}
	return out
}

// Resolve returns dataset name at version. An empty version picks the one
// Harbor picks (LatestVersion). When a name@version occurs more than once the
// first entry wins, as in Harbor. Unknown names and versions give errors
// wrapping ErrDatasetNotFound or ErrVersionNotFound that list what exists; a
// refused entry gives an error wrapping ErrInvalidEntry with its problems
// and the versions of the dataset that are usable.
func (r Registry) Resolve(name, version string) (Dataset, error) {
	versions := r.Versions(name)
	if len(versions) == 0 {
		return Dataset{}, fmt.Errorf("%w: %q (known datasets: %s)", ErrDatasetNotFound, name, strings.Join(r.Names(), ", "))
	}
	if version == "" {
		version = LatestVersion(versions)
	}
	d, ok := r.first(name, version)
	switch {
	case !ok:
		return Dataset{}, fmt.Errorf("%w: %s@%s (versions of %s: %s)", ErrVersionNotFound, name, version, name, strings.Join(versions, ", "))
	case len(d.Problems) > 0:
		return Dataset{}, fmt.Errorf("%w: %s%s", ErrInvalidEntry, strings.Join(d.Problems, "; "), r.usableVersionsHint(name))
	}
	return d, nil
}

// usableVersionsHint lists the versions of name whose entries are usable,
// for the message about a refused one.
func (r Registry) usableVersionsHint(name string) string {
	var usable []string
	for _, v := range r.Versions(name) {
		if d, _ := r.first(name, v); len(d.Problems) == 0 {
			usable = append(usable, v)
		}
	}
	if len(usable) == 0 {
		return fmt.Sprintf(" (%s has no usable version in this registry)", name)
	}
	return fmt.Sprintf(" (usable versions of %s: %s)", name, strings.Join(usable, ", "))
}

// first returns the first entry of name@version (Harbor's rule for
// duplicates), if any.
func (r Registry) first(name, version string) (Dataset, bool) {
	for _, d := range r {
		if d.Name == name && d.Version == version {
			return d, true
		}
	}
	return Dataset{}, false
}

// LatestVersion applies Harbor's rule for a dataset named without a version:
// "head" if present, else the highest valid PEP 440 version, else the
// lexically last. It returns "" for no versions.
func LatestVersion(versions []string) string {
	if slices.Contains(versions, HeadVersion) {
		return HeadVersion
	}
	sorted := slices.Clone(versions)
	SortVersions(sorted)
	if len(sorted) == 0 {
		return ""
	}
	var best string
	for _, v := range sorted {
		if IsPEP440(v) {
			best = v // ascending, so the last valid one is the highest
		}
	}
	if best != "" {
		return best
	}
	return sorted[len(sorted)-1]
}

// SortVersions sorts versions in place: valid PEP 440 versions first in PEP
// 440 order (equivalent ones lexically), then the others lexically.
func SortVersions(versions []string) {
	slices.SortStableFunc(versions, func(a, b string) int {
		c, ok := ComparePEP440(a, b)
		switch {
		case ok && c != 0:
			return c
		case ok:
			return strings.Compare(a, b)
		}
		aValid, bValid := IsPEP440(a), IsPEP440(b)
		if aValid != bValid {
			if aValid {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
}

var (
	datasetNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	versionPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+!-]*$`)
)

// ParseSpec splits a dataset spec "name@version" or "name" (version "" then
// means "let Resolve pick").
func ParseSpec(s string) (name, version string, err error) {
	name, version, hasAt := strings.Cut(s, "@")
	if !datasetNamePattern.MatchString(name) {
		return "", "", fmt.Errorf("dataset spec %q: name must be letters, digits, '.', '_', '-' or '/', starting with a letter or digit", s)
	}
	if hasAt && !versionPattern.MatchString(version) {
		return "", "", fmt.Errorf("dataset spec %q: version after '@' must be letters, digits, '.', '_', '+', '!' or '-'", s)
	}
	return name, version, nil
}
