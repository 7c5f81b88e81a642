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

var namePattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ValidName reports whether name is an allowed secret record name
// (an environment variable name: ^[A-Z_][A-Z0-9_]*$, at most 128 bytes).
func ValidName(name string) bool { return len(name) <= 128 && namePattern.MatchString(name) }

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
	case !ValidName(r.Name):
		return fmt.Errorf("secret ref: name %q must match ^[A-Z_][A-Z0-9_]*$", r.Name)
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
