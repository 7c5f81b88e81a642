package benchmark

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxNameLen is the longest task, category or dataset-name segment.
const MaxNameLen = 128

// namePattern is the one rule for every name that becomes part of a store
// key or a blob path (task names, categories, dataset-name segments): a
// single path segment that starts with a letter or digit, so "." and ".."
// can never be one. '$' is allowed because real registries use it
// (swesmith's "vuejs__core.d0b513eb.$emit.e9a11073").
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._$-]{0,127}$`)

// NameRule says in words what ValidTaskName accepts; errors quote it.
const NameRule = "letters, digits, '.', '_', '$' and '-', starting with a letter or digit, at most 128 bytes"

// ValidTaskName reports whether name is a valid task name (NameRule). Run
// configs' task_names, registry task names and local dataset directory
// names are all held to it, because a task name becomes a key and a blob
// path segment.
func ValidTaskName(name string) bool { return namePattern.MatchString(name) }

// ValidCategory reports whether category is a valid task category: the same
// rule as a task name.
func ValidCategory(category string) bool { return namePattern.MatchString(category) }

// CheckDatasetName checks a registry dataset name: one or more
// '/'-separated segments, each following NameRule (so no empty, "." or ".."
// segment), at most 255 bytes in all.
func CheckDatasetName(name string) error {
	if name == "" {
		return fmt.Errorf("is required")
	}
	if len(name) > 255 {
		return fmt.Errorf("is %d bytes; at most 255 are allowed", len(name))
	}
	for _, seg := range strings.Split(name, "/") {
		if !namePattern.MatchString(seg) {
			return fmt.Errorf("%q is not a dataset name: '/'-separated segments of %s", name, NameRule)
		}
	}
	return nil
}
