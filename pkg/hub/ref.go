// Package hub is a client of Harbor's package registry (the "Harbor Hub"
// behind `harbor run -d org/name@ref`): it resolves a dataset reference to
// a dataset version and its tasks exactly as Harbor's own client does —
// the same PostgREST tables and RPC calls, the same storage downloads, the
// same API-key exchange — and downloads each task's archive, verifying its
// content hash with Harbor's packager rule. It speaks HTTP only through
// the *http.Client it is given, so callers decide which networks it may
// reach.
package hub

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// LatestTag is the ref of a reference without '@' (Harbor's default).
const LatestTag = "latest"

// RefKind says how a ref names a version: Harbor's VersionRef types.
type RefKind string

// Ref kinds.
const (
	// Tag is a mutable label ("latest", "stable", "2.1"); it moves.
	Tag RefKind = "tag"
	// Revision is a version's immutable revision number ("3").
	Revision RefKind = "revision"
	// Digest is a version's immutable content hash ("sha256:<hex>").
	Digest RefKind = "digest"
)

// Rules quoted by parse errors.
const (
	// NameRule is Harbor's ORG_NAME_PATTERN in words.
	NameRule = "org/name: two parts of letters, digits, '.', '_' and '-', each starting with a letter or digit, no '..' (Harbor's package name rule)"
	// RefRule says what may follow '@'.
	RefRule = "a tag (lowercase letters, digits, '.' and '-', starting with a letter or digit, e.g. latest), a revision number (e.g. 3) or a digest (sha256: and 64 hex digits)"
)

var (
	// orgNamePattern is Harbor's ORG_NAME_PATTERN (constants.py).
	orgNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$`)
	// tagPattern is Harbor's _TAG_PATTERN (models/package/version_ref.py).
	tagPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9.\-]*$`)
	digestPattern = regexp.MustCompile(`^sha256:[0-9a-fA-F]{64}$`)
)

// Ref is a parsed package reference "org/name[@ref]" (Harbor's
// PackageReference with its VersionRef).
type Ref struct {
	Org  string
	Name string
	// Version is the text after '@' ("latest" when there was none); a
	// digest is kept lowercase.
	Version string
	Kind    RefKind
}

// RefError reports a malformed reference; Field is "name" or "ref".
type RefError struct {
	Input  string
	Field  string
	Reason string
}

// Error implements error.
func (e *RefError) Error() string {
	return fmt.Sprintf("package reference %q: %s %s", e.Input, e.Field, e.Reason)
}

// ErrBadRef is wrapped by every *RefError.
var ErrBadRef = errors.New("bad package reference")

// Unwrap returns ErrBadRef.
func (e *RefError) Unwrap() error { return ErrBadRef }

// IsPackageSpec reports whether a dataset spec names a package dataset
// rather than a registry.json dataset: as in Harbor's CLI, a name with a
// '/' is a package ("terminal-bench/terminal-bench-2-1@latest"), one
// without is a registry.json dataset ("terminal-bench@2.0").
func IsPackageSpec(spec string) bool {
	name, _, _ := strings.Cut(spec, "@")
	return strings.Contains(name, "/")
}

// ParseRef parses "org/name" or "org/name@ref" the way Harbor's
// PackageReference.parse does (the last '@' splits), and holds the parts
// to Harbor's rules: the name to ORG_NAME_PATTERN without "..", the ref to
// a tag, a revision or a digest. A ref Harbor would take as a tag but that
// breaks its tag rule (upper case, '_', '/') is refused rather than sent.
func ParseRef(s string) (Ref, error) {
	name, version := s, LatestTag
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		name, version = s[:i], s[i+1:]
		if version == "" {
			return Ref{}, &RefError{Input: s, Field: "ref", Reason: "after '@' is empty: give " + RefRule}
		}
	}
	if len(name) > 256 || !orgNamePattern.MatchString(name) || strings.Contains(name, "..") {
		return Ref{}, &RefError{Input: s, Field: "name", Reason: fmt.Sprintf("%q is not a package name: %s", name, NameRule)}
	}
	org, short, _ := strings.Cut(name, "/")
	r := Ref{Org: org, Name: short, Version: version}
	switch {
	case isDigits(version):
		if _, err := strconv.ParseInt(version, 10, 32); err != nil {
			return Ref{}, &RefError{Input: s, Field: "ref", Reason: fmt.Sprintf("revision %s is out of range", version)}
		}
		r.Kind = Revision
	case strings.HasPrefix(version, "sha256:"):
		if !digestPattern.MatchString(version) {
			return Ref{}, &RefError{Input: s, Field: "ref", Reason: fmt.Sprintf("%q is not a digest: want sha256: and 64 hex digits", version)}
		}
		r.Version, r.Kind = strings.ToLower(version), Digest
	case len(version) <= 128 && tagPattern.MatchString(version):
		r.Kind = Tag
	default:
		return Ref{}, &RefError{Input: s, Field: "ref", Reason: fmt.Sprintf("%q is neither tag, revision nor digest: give %s", version, RefRule)}
	}
	return r, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Package returns "org/name".
func (r Ref) Package() string { return r.Org + "/" + r.Name }

// String returns "org/name@ref".
func (r Ref) String() string { return r.Package() + "@" + r.Version }

// Pinned reports whether the ref names one version for good (a revision or
// a digest); a tag may move.
func (r Ref) Pinned() bool { return r.Kind == Revision || r.Kind == Digest }
