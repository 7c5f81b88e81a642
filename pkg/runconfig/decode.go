package runconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/gauntlet-bench/gauntlet/pkg/fielderr"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/tomldoc"
)

// Parse parses and validates a TOML run config. On any problem it returns a
// *ValidationError listing all of them.
func Parse(data []byte) (Config, error) {
	if err := checkSize(data); err != nil {
		return Config{}, err
	}
	var raw map[string]any
	if _, err := tomldoc.Decode(data, &raw); err != nil {
		return Config{}, &ValidationError{Errors: []fielderr.Error{{Message: tomlSyntaxMessage(err)}}}
	}
	return fromDocument(raw)
}

// ParseJSON parses and validates the JSON form of a run config: the same
// tables and keys as the TOML form, as JSON objects; a null value counts as
// absent. It is exactly as strict as Parse.
func ParseJSON(data []byte) (Config, error) {
	if err := checkSize(data); err != nil {
		return Config{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return Config{}, &ValidationError{Errors: []fielderr.Error{{Message: jsonSyntaxMessage(err)}}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, &ValidationError{Errors: []fielderr.Error{{Message: "invalid JSON: data after the config object"}}}
	}
	doc, ok := raw.(map[string]any)
	if !ok {
		return Config{}, &ValidationError{Errors: []fielderr.Error{{Message: fmt.Sprintf("the config must be a JSON object, got %s", typeName(raw))}}}
	}
	return fromDocument(doc)
}

func checkSize(data []byte) error {
	if len(data) > MaxConfigBytes {
		return &ValidationError{Errors: []fielderr.Error{{Message: fmt.Sprintf("the config is %d bytes; at most %d are allowed", len(data), MaxConfigBytes)}}}
	}
	return nil
}

// quotedRE matches quoted input fragments that parser messages echo; they are
// cut so that a mistyped secret value never lands in an error.
var quotedRE = regexp.MustCompile(`"[^"]*"`)

func tomlSyntaxMessage(err error) string {
	var se *tomldoc.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid TOML at line %d, column %d: %s", se.Line, se.Column, quotedRE.ReplaceAllString(se.Message, `"…"`))
	}
	return "invalid TOML"
}

func jsonSyntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "invalid JSON: unexpected end of input"
	}
	return "invalid JSON"
}

func fromDocument(doc map[string]any) (Config, error) {
	d := &decoder{}
	cfg := d.config(doc)
	if err := d.err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decoder walks a decoded document (TOML or JSON), converting it to a Config
// and recording every problem.
type decoder struct {
	problems
	badAgents []int // indexes of agents that had problems of their own
}

// lookup returns m[key], treating a JSON null as absent.
func lookup(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	return v, ok && v != nil
}

// table checks that v is a table whose keys are all in allowed; what names
// the table in messages ("[execution]").
func (d *decoder) table(path string, v any, what string, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be a table, got %s", typeName(v))
		return nil, false
	}
	var unknown []string
	for k := range m {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		d.add(join(path, k), "unknown key; %s allows %s", what, strings.Join(allowed, ", "))
	}
	return m, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str converts a one-line string value of at most MaxStringBytes: no
// control character but tab (see controlProblem).
func (d *decoder) str(path string, v any) (string, bool) {
	return d.stringValue(path, v, oneLine)
}

// text converts a string value that may span lines (an env value, a
// command): no control character but tab, newline and carriage return.
func (d *decoder) text(path string, v any) (string, bool) {
	return d.stringValue(path, v, multiLine)
}

func (d *decoder) stringValue(path string, v any, allowed lineRule) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.add(path, "must be a string, got %s", typeName(v))
		return "", false
	}
	if len(s) > MaxStringBytes {
		d.add(path, "must be at most %d bytes, got %d", MaxStringBytes, len(s))
		return "", false
	}
	if msg := controlProblem(s, allowed); msg != "" {
		d.add(path, "%s", msg)
		return "", false
	}
	return s, true
}

// lineRule says which control characters a string may hold.
type lineRule bool

const (
	oneLine   lineRule = false // tab only
	multiLine lineRule = true  // tab, newline and carriage return
)

// controlProblem describes the first control character of s that rule
// does not allow, or returns "". Every string of a config reaches the
// runner's argv, environment, generated files or HTTP headers: a NUL
// cannot pass execve at all (each attempt would fail as infrastructure and
// spend its retries), a newline breaks a header or a one-line config file,
// and the others are never meant and would end in logs and terminals. The
// value itself is never echoed: it may be a secret pasted by mistake.
func controlProblem(s string, rule lineRule) string {
	for _, r := range s {
		if !unicode.IsControl(r) || r == '\t' || (rule == multiLine && (r == '\n' || r == '\r')) {
			continue
		}
		what := "a control character"
		switch r {
		case 0:
			what = "a NUL character"
		case '\n':
			what = "a newline"
		case '\r':
			what = "a carriage return"
		}
		allowed := "control characters other than tab are not allowed in this value"
		if rule == multiLine {
			allowed = "control characters other than tab, newline and carriage return are not allowed"
		}
		return fmt.Sprintf("contains %s (U+%04X); %s", what, r, allowed)
	}
	return ""
}

// nonEmpty converts a non-blank one-line string.
func (d *decoder) nonEmpty(path string, v any) (string, bool) {
	s, ok := d.str(path, v)
	return d.notBlank(path, s, ok)
}

// nonEmptyText converts a non-blank string that may span lines.
func (d *decoder) nonEmptyText(path string, v any) (string, bool) {
	s, ok := d.text(path, v)
	return d.notBlank(path, s, ok)
}

func (d *decoder) notBlank(path, s string, ok bool) (string, bool) {
	if ok && strings.TrimSpace(s) == "" {
		d.add(path, "must not be empty")
		return "", false
	}
	return s, ok
}

// secretName converts a secret record name. The value is never echoed: a
// mistake here is often a secret value pasted in place of its name.
func (d *decoder) secretName(path string, v any) (string, bool) {
	s, ok := d.str(path, v)
	if !ok {
		return "", false
	}
	if !secret.ValidName(s) {
		d.add(path, "must be a secret record NAME matching %s (at most 128 bytes), never the secret value", secret.NamePattern)
		return "", false
	}
	if p := secret.ReservedPrefix(s); p != "" {
		d.add(path, "names a reserved secret: names starting with %s are set by the platform's runner (reserved: %s)", p, reservedList())
		return "", false
	}
	return s, true
}

// integer converts an integer in [lo, hi].
func (d *decoder) integer(path string, v any, lo, hi int64) (int, bool) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case json.Number:
		i, err := x.Int64()
		switch {
		case err != nil && typeName(v) == "integer":
			d.add(path, "must be %s", describeRange(lo, hi))
			return 0, false
		case err != nil:
			d.add(path, "must be an integer, got %s", typeName(v))
			return 0, false
		}
		n = i
	default:
		d.add(path, "must be an integer, got %s", typeName(v))
		return 0, false
	}
	if n < lo || n > hi {
		d.add(path, "must be %s, got %d", describeRange(lo, hi), n)
		return 0, false
	}
	return int(n), true
}

func describeRange(lo, hi int64) string {
	return fmt.Sprintf("an integer from %d to %d", lo, hi)
}

// number converts a finite number (integer or float).
func (d *decoder) number(path string, v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			d.add(path, "must be a number, got %s", typeName(v))
			return 0, false
		}
		f = g
	default:
		d.add(path, "must be a number, got %s", typeName(v))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		d.add(path, "must be a finite number")
		return 0, false
	}
	return f, true
}

// list converts an array, calling item for each element.
func (d *decoder) list(path string, v any, limit int, item func(path string, v any) (string, bool)) []string {
	arr, ok := v.([]any)
	if !ok {
		d.add(path, "must be an array of strings, got %s", typeName(v))
		return nil
	}
	if len(arr) == 0 {
		d.add(path, "must not be empty; omit the key instead")
		return nil
	}
	if limit > 0 && len(arr) > limit {
		d.add(path, "must list at most %d names, got %d", limit, len(arr))
		return nil
	}
	out := make([]string, 0, len(arr))
	seen := make(map[string]int, len(arr))
	for i, e := range arr {
		s, ok := item(index(path, i), e)
		if !ok {
			continue
		}
		if j, dup := seen[s]; dup {
			d.add(index(path, i), "repeats %s", index(path, j))
			continue
		}
		seen[s] = i
		out = append(out, s)
	}
	return out
}

// stringMap converts a table of strings with at most MaxEnvEntries entries;
// key checks each key (and reports its own problems), value converts each
// value (str or text). Values are never echoed.
func (d *decoder) stringMap(path string, v any, key func(path, k string) bool, value func(path string, v any) (string, bool)) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be a table of strings, got %s", typeName(v))
		return nil
	}
	if len(m) > MaxEnvEntries {
		d.add(path, "must have at most %d entries, got %d", MaxEnvEntries, len(m))
		return nil
	}
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		at := join(path, k)
		if len(k) > MaxStringBytes {
			d.add(path, "keys must be at most %d bytes, got %d", MaxStringBytes, len(k))
			continue
		}
		if !key(at, k) {
			continue
		}
		if s, ok := value(at, m[k]); ok {
			out[k] = s
		}
	}
	return out
}

// envKey checks an environment variable name.
func (d *decoder) envKey(path, k string) bool {
	if !envNameRE.MatchString(k) || len(k) > 128 {
		d.add(path, "env var names must match ^[A-Z_][A-Z0-9_]*$ (at most 128 bytes)")
		return false
	}
	if p := secret.ReservedPrefix(k); p != "" {
		d.add(path, "is reserved: env vars starting with %s are set by the platform's runner (reserved: %s)", p, reservedList())
		return false
	}
	return true
}

var envNameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// reservedList renders the reserved prefixes for messages.
func reservedList() string {
	return strings.Join(secret.ReservedPrefixes, "*, ") + "*"
}

// typeName names a decoded value's type for messages.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "float"
		}
		return "integer"
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	case time.Time:
		return "datetime"
	default:
		return fmt.Sprintf("%T", v)
	}
}
