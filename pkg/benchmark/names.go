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
const NameRule = "letters, digits, '.', '_', '$' and '-', starting with a letter or digit, at most 128 bytes, optionally after an org and '/' as Harbor's package tasks are named (\"terminal-bench/git-multibranch\")"

// SegmentRule says in words what a single name segment (a category, a
// local task directory) may be.
const SegmentRule = "letters, digits, '.', '_', '$' and '-', starting with a letter or digit, at most 128 bytes"

// ValidTaskName reports whether name is a valid task name (NameRule): one
// segment ("git-multibranch"), or Harbor's package form "org/name" — two
// segments and no ".." anywhere, as Harbor's ORG_NAME_PATTERN has it, so
// Osmosis configs' task_names = ["terminal-bench/git-multibranch"] select
// the task a package dataset lists under that id. Run configs'
// task_names, registry task names and synced manifests are all held to it.
// A name is never used as a path as it is: where it names a stored object,
// TaskSegment turns it into one path segment.
func ValidTaskName(name string) bool {
	org, short, ok := strings.Cut(name, "/")
	if !ok {
		return namePattern.MatchString(name)
	}
	return namePattern.MatchString(org) && namePattern.MatchString(short) && !strings.Contains(name, "..")
}

// TaskSegment returns a valid task name as one path segment: the name
// itself for a one-segment name, and "org~name" for "org/name" ('~' is in
// no task name, so distinct names stay distinct). Blob keys and file names
// that include a task use it, never the name itself.
func TaskSegment(name string) string { return strings.Replace(name, "/", "~", 1) }

// ValidCategory reports whether category is a valid task category: one
// segment (SegmentRule).
func ValidCategory(category string) bool { return namePattern.MatchString(category) }

// CheckDatasetName checks a registry dataset name: one or more
// '/'-separated segments, each following SegmentRule (so no empty, "." or ".."
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
			return fmt.Errorf("%q is not a dataset name: '/'-separated segments of %s", name, SegmentRule)
		}
	}
	return nil
}
