package runconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/fielderr"
)

// ValidationError carries every problem found in a config, in document order.
type ValidationError struct {
	Errors []fielderr.Error `json:"errors"`
}

// Error implements error.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	return fmt.Sprintf("invalid run config (%s): %s", CountProblems(len(e.Errors)), strings.Join(parts, "; "))
}

// CountProblems says how many problems there are, in words: "1 problem",
// "3 problems".
func CountProblems(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return fmt.Sprintf("%d problems", n)
}

// problems accumulates FieldErrors.
type problems struct{ errs []fielderr.Error }

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, fielderr.Error{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err returns the accumulated problems as a *ValidationError, or nil.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: p.errs}
}

var bareKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// join appends key to a key path, quoting keys that are not bare TOML keys.
func join(path, key string) string {
	if !bareKeyRE.MatchString(key) {
		key = strconv.Quote(key)
		if path == "" {
			return "[" + key + "]"
		}
		return path + "[" + key + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// index appends an array index to a key path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }
