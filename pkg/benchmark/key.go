package benchmark

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

const keyPattern = `^[a-z0-9][a-z0-9-]{0,62}$`

var keyRE = regexp.MustCompile(keyPattern)

// MaxKeyLen is the longest benchmark key.
const MaxKeyLen = 63

// ValidKey reports whether key is a valid benchmark key: a slug of lowercase
// letters, digits and dashes, starting with a letter or digit, at most 63 bytes
// (^[a-z0-9][a-z0-9-]{0,62}$).
func ValidKey(key string) bool { return keyRE.MatchString(key) }

// KeyFor derives a benchmark key from a dataset name and version:
// lowercased, every run of characters other than a-z and 0-9 becomes one
// dash, leading and trailing dashes dropped, cut to 63 bytes. For example
// KeyFor("terminal-bench", "2.0") is "terminal-bench-2-0" and
// KeyFor("SWE-bench Verified", "") is "swe-bench-verified". It returns ""
// when name and version hold no letter or digit.
func KeyFor(name, version string) string {
	s := name
	if version != "" {
		s += "-" + version
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	key := b.String()
	if len(key) > MaxKeyLen {
		key = strings.TrimRight(key[:MaxKeyLen], "-")
	}
	return key
}

// SplitRef splits a registry spec "name@version" into its name and version;
// a spec without "@" has an empty version.
func SplitRef(ref string) (name, version string) {
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// ComputeDigest returns the manifest digest of tasks: "sha256:" and the hex
// SHA-256 of the task names and task digests, sorted by name, each field
// length-prefixed, plus each task's pinned environment when it has one (so a
// moved image tag is a new manifest). It does not depend on the order of
// tasks.
func ComputeDigest(tasks []Task) string {
	sorted := make([]Task, len(tasks))
	copy(sorted, tasks)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Name != sorted[j].Name {
			return sorted[i].Name < sorted[j].Name
		}
		return sorted[i].Digest < sorted[j].Digest
	})
	h := sha256.New()
	for _, t := range sorted {
		fmt.Fprintf(h, "%d:%s%d:%s\n", len(t.Name), t.Name, len(t.Digest), t.Digest)
		if line := t.Environment.digestLine(); line != "" {
			fmt.Fprintf(h, "%s\n", line)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d has the form of a manifest digest
// ("sha256:" and 64 lowercase hex digits).
func ValidDigest(d string) bool { return digestRE.MatchString(d) }
