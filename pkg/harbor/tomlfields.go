package harbor

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// FieldError reports one invalid field of a Harbor file: which file, which
// field (dotted, as written in the file) and what is wrong with it.
type FieldError struct {
	File   string
	Field  string
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Reason)
}

// fieldReader pulls typed values out of a decoded TOML document and records
// a FieldError for every value of the wrong type, so that one pass reports
// every problem in the file at once.
type fieldReader struct {
	file string
	errs []error
}

func (r *fieldReader) fail(field, format string, args ...any) {
	r.errs = append(r.errs, &FieldError{File: r.file, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// table returns the sub-table m[key]; a missing key gives an empty table.
func (r *fieldReader) table(m map[string]any, prefix, key string) map[string]any {
	v, ok := m[key]
	if !ok {
		return map[string]any{}
	}
	t, ok := v.(map[string]any)
	if !ok {
		r.fail(joinKey(prefix, key), "must be a table, got %s", tomlType(v))
		return map[string]any{}
	}
	return t
}

func (r *fieldReader) str(m map[string]any, prefix, key string) (string, bool) {
	v, ok := m[key]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		r.fail(joinKey(prefix, key), "must be a string, got %s", tomlType(v))
		return "", false
	}
	return s, true
}

func (r *fieldReader) boolean(m map[string]any, prefix, key string) (bool, bool) {
	v, ok := m[key]
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		r.fail(joinKey(prefix, key), "must be a boolean, got %s", tomlType(v))
		return false, false
	}
	return b, true
}

// number accepts a TOML integer or float that is finite and not negative.
func (r *fieldReader) number(m map[string]any, prefix, key string) (float64, bool) {
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		r.fail(joinKey(prefix, key), "must be a number, got %s", tomlType(v))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		r.fail(joinKey(prefix, key), "must be a finite number ≥ 0, got %v", f)
		return 0, false
	}
	return f, true
}

// positive is number that must also be greater than zero (timeouts).
func (r *fieldReader) positive(m map[string]any, prefix, key string) (float64, bool) {
	f, ok := r.number(m, prefix, key)
	if ok && f == 0 {
		r.fail(joinKey(prefix, key), "must be greater than 0")
		return 0, false
	}
	return f, ok
}

// integer accepts a non-negative TOML integer, or a float with an integral value.
func (r *fieldReader) integer(m map[string]any, prefix, key string) (int, bool) {
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		if n < 0 || n > math.MaxInt32 {
			r.fail(joinKey(prefix, key), "must be an integer between 0 and %d, got %d", math.MaxInt32, n)
			return 0, false
		}
		return int(n), true
	case float64:
		if n != math.Trunc(n) || n < 0 || n > math.MaxInt32 {
			r.fail(joinKey(prefix, key), "must be a whole number between 0 and %d, got %v", math.MaxInt32, n)
			return 0, false
		}
		return int(n), true
	}
	r.fail(joinKey(prefix, key), "must be an integer, got %s", tomlType(v))
	return 0, false
}

func (r *fieldReader) strList(m map[string]any, prefix, key string) ([]string, bool) {
	v, ok := m[key]
	if !ok {
		return nil, false
	}
	items, ok := v.([]any)
	if !ok {
		r.fail(joinKey(prefix, key), "must be an array of strings, got %s", tomlType(v))
		return nil, false
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", joinKey(prefix, key), i), "must be a string, got %s", tomlType(item))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// envMap reads an environment table: string values, and only names and
// values an environment can carry. A NUL in either, or '=' in a name, makes
// execve fail, so every attempt of the task would end as an infrastructure
// error; the task is refused when it is read instead. Other characters are
// Harbor's to allow (tasks run under Harbor too), so only these are refused.
func (r *fieldReader) envMap(m map[string]any, prefix, key string) map[string]string {
	t := r.table(m, prefix, key)
	out := make(map[string]string, len(t))
	for _, k := range sortedKeys(t) {
		field := joinKey(joinKey(prefix, key), k)
		s, ok := t[k].(string)
		switch {
		case !ok:
			r.fail(field, "must be a string, got %s", tomlType(t[k]))
			continue
		case k == "" || strings.ContainsAny(k, "=\x00"):
			r.fail(joinKey(prefix, key), "variable name %q cannot be passed in an environment: it must be non-empty, without '=' or NUL", k)
			continue
		case strings.ContainsRune(s, 0):
			r.fail(field, "contains a NUL character (U+0000), which no environment variable can carry")
			continue
		}
		out[k] = s
	}
	return out
}

// user reads Harbor's `user` field, which is a user name or a numeric UID.
func (r *fieldReader) user(m map[string]any, prefix string) string {
	v, ok := m["user"]
	if !ok {
		return ""
	}
	switch u := v.(type) {
	case string:
		return u
	case int64:
		return strconv.FormatInt(u, 10)
	}
	r.fail(joinKey(prefix, "user"), "must be a user name or a numeric UID, got %s", tomlType(v))
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tomlType names the TOML type of a decoded value for error messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("a %T", v)
}
