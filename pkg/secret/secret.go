// Package secret defines the secret-value port. Values are write-only from the
// API's point of view: only the dispatcher reads them, to hand a sandbox the
// secrets its agent names. Metadata (who set a record, when) lives in the table.
package secret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// ErrNotFound reports a missing secret record.
var ErrNotFound = errors.New("secret: not found")

// Scope says who a record belongs to.
type Scope string

// Scopes of secret records.
const (
	Workspace Scope = "workspace" // shared by the workspace
	Personal  Scope = "personal"  // visible to and used for its owner only
)

var namePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// NamePattern is the shape of a secret record name, for messages.
const NamePattern = "^[A-Z][A-Z0-9_]*$"

// ValidName reports whether name is an allowed secret record name
// (an upper-case environment variable name not starting with '_':
// ^[A-Z][A-Z0-9_]*$, at most 128 bytes). Osmosis uses the same shape, so a
// config valid here names records valid there.
func ValidName(name string) bool { return len(name) <= 128 && namePattern.MatchString(name) }

// storedNamePattern is the looser shape records were stored under before
// the Osmosis rule (a leading '_' was allowed): such a record can still be
// addressed, so its owner can delete it, but no new one is written.
var storedNamePattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ValidStoredName reports whether name can address an existing record:
// ValidName, or a name an earlier version allowed.
func ValidStoredName(name string) bool {
	return len(name) <= 128 && storedNamePattern.MatchString(name)
}

// ReservedPrefixes are the environment-variable prefixes the platform's
// runner owns: gauntlet's own (the runner injects GAUNTLET_* into every
// sandbox) and Osmosis's (_OSMOSIS_*, DAYTONA_*, SKYPILOT_*), so that a
// config valid here is valid there. Neither a secret record nor a literal
// env var may take such a name: it would shadow what the runner sets.
var ReservedPrefixes = []string{"GAUNTLET_", "_OSMOSIS_", "DAYTONA_", "SKYPILOT_"}

// CheckName says why name cannot name a new secret record (nil when it
// can): its shape, or a reserved prefix. The API and the CLI give the same
// answer, the CLI before it asks for the value.
func CheckName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("secret name %q must be an environment variable name (%s, at most 128 bytes)", name, NamePattern)
	}
	if p := ReservedPrefix(name); p != "" {
		return fmt.Errorf("secret name %q is reserved: names starting with %s are set by the platform's runner (reserved: %s)", name, p, strings.Join(ReservedPrefixes, "*, ")+"*")
	}
	return nil
}

// ReservedPrefix returns the reserved prefix name starts with, or "".
func ReservedPrefix(name string) string {
	for _, p := range ReservedPrefixes {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}

// Ref addresses one record. Owner is the user id for Personal records and
// empty for Workspace ones.
type Ref struct {
	Workspace string
	Scope     Scope
	Owner     string
	Name      string
}

// Validate checks the reference's shape.
func (r Ref) Validate() error {
	switch {
	case r.Workspace == "":
		return errors.New("secret ref: workspace is empty")
	case r.Scope != Workspace && r.Scope != Personal:
		return fmt.Errorf("secret ref: scope %q is not workspace or personal", r.Scope)
	case r.Scope == Personal && r.Owner == "":
		return errors.New("secret ref: personal record without owner")
	case !ValidStoredName(r.Name):
		return fmt.Errorf("secret ref: name %q must match %s", r.Name, NamePattern)
	}
	return nil
}

// Value is a secret value. It never prints: fmt and slog show [redacted].
type Value string

// String implements fmt.Stringer.
func (Value) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer.
func (Value) GoString() string { return "[redacted]" }

// LogValue implements slog.LogValuer.
func (Value) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Reveal returns the plain value, for handing to a sandbox environment.
func (v Value) Reveal() string { return string(v) }

// Store is the secret-value port.
type Store interface {
	Put(ctx context.Context, ref Ref, value Value) error
	// Get returns the value or ErrNotFound.
	Get(ctx context.Context, ref Ref) (Value, error)
	// Delete removes the record; a missing record is not an error.
	Delete(ctx context.Context, ref Ref) error
}
