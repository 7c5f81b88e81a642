package score

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// jsonlLine is one attempt of a JSONL input. Required: harness, task,
// attempt (≥ 1), and reward or outcome. model may be empty for model-less
// harnesses such as an oracle. error_class (agent or platform) says whose
// error an errored attempt was; without it the error is the agent's.
type jsonlLine struct {
	Harness      *string  `json:"harness"`
	Model        *string  `json:"model"`
	Task         *string  `json:"task"`
	Attempt      *int     `json:"attempt"`
	Reward       *float64 `json:"reward"`
	Outcome      *string  `json:"outcome"`
	ErrorClass   *string  `json:"error_class"`
	CostUSD      *float64 `json:"cost_usd"`
	InputTokens  *int64   `json:"input_tokens"`
	OutputTokens *int64   `json:"output_tokens"`
	CacheTokens  *int64   `json:"cache_tokens"`
	DurationSec  *float64 `json:"duration_sec"`
	TaskSet      *string  `json:"task_set"`
	Version      *string  `json:"version"`
}

// Bounds of a JSONL input: a line, the whole input, and the attempt number
// (the platform's own runs go to runconfig.MaxAttemptsPerTask = 100; other
// tools' runs are allowed far more, but not any integer). A reader stops
// at a bound with an error that says it, so `gauntlet score /dev/zero`
// costs at most MaxLineBytes of memory.
const (
	MaxLineBytes  = 64 << 10
	MaxInputBytes = 1 << 30
	MaxAttempt    = 1_000_000
)

// LineError is a problem with one line of a JSONL input.
type LineError struct {
	File  string
	Line  int
	Field string // empty when the line as a whole is at fault
	Msg   string
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
}

func readJSONLFile(path string, threshold float64, c *collector) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	defer f.Close()
	return readJSONL(f, path, threshold, c)
}

// ReadJSONL reads attempts from one JSONL stream named name (used in error
// messages) and groups them like Read. Blank lines are skipped; the first bad
// line is returned as a *LineError.
func ReadJSONL(r io.Reader, name string, threshold float64) ([]leaderboard.EntrantInput, error) {
	c := newCollector()
	if err := readJSONL(r, name, threshold, c); err != nil {
		return nil, err
	}
	return c.inputs(), nil
}

func readJSONL(r io.Reader, name string, threshold float64, c *collector) error {
	lim := &io.LimitedReader{R: r, N: MaxInputBytes + 1}
	sc := bufio.NewScanner(lim)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		if line := sc.Bytes(); len(bytes.TrimSpace(line)) > 0 {
			rec, lerr := parseLine(line, threshold)
			if lerr != nil {
				lerr.File, lerr.Line = name, lineNo
				return lerr
			}
			rec.where = fmt.Sprintf("%s:%d", name, lineNo)
			if first, ok := c.add(rec); !ok {
				return &LineError{File: name, Line: lineNo, Field: "attempt", Msg: "duplicate of " + first}
			}
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return &LineError{File: name, Line: lineNo + 1, Msg: fmt.Sprintf("line longer than the %d-byte limit", MaxLineBytes)}
	case err != nil:
		return fmt.Errorf("%s:%d: read: %w", name, lineNo+1, err)
	case lim.N <= 0:
		return &LineError{File: name, Line: lineNo, Msg: fmt.Sprintf("input larger than the %d-byte limit", int64(MaxInputBytes))}
	}
	return nil
}

func parseLine(line []byte, threshold float64) (record, *LineError) {
	var l jsonlLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return record{}, decodeError(err)
	}
	if dec.More() {
		return record{}, &LineError{Msg: "more than one JSON value on the line"}
	}
	return l.record(threshold)
}

// decodeError names the field a JSON decoding error is about.
func decodeError(err error) *LineError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return &LineError{Msg: fmt.Sprintf("want a JSON object, got %s", typeErr.Value)}
		}
		return &LineError{Field: typeErr.Field, Msg: fmt.Sprintf("want %s, got %s", jsonKind(typeErr.Type), typeErr.Value)}
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ := strconv.Unquote(field)
		return &LineError{Field: name, Msg: "unknown field (want harness, model, task, attempt, reward, outcome, cost_usd, input_tokens, output_tokens, cache_tokens, duration_sec, task_set, version)"}
	}
	return &LineError{Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
}

// jsonKind names, in JSON's words, what a field of type t holds: never a
// Go type name.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	}
	return "another kind of value"
}

func (l jsonlLine) record(threshold float64) (record, *LineError) {
	required := func(field string, v *string) *LineError {
		if v == nil || strings.TrimSpace(*v) == "" {
			return &LineError{Field: field, Msg: "required"}
		}
		return nil
	}
	if err := firstErr(required("harness", l.Harness), required("task", l.Task)); err != nil {
		return record{}, err
	}
	if l.Attempt == nil {
		return record{}, &LineError{Field: "attempt", Msg: "required"}
	}
	if *l.Attempt < 1 || *l.Attempt > MaxAttempt {
		return record{}, &LineError{Field: "attempt", Msg: fmt.Sprintf("must be from 1 to %d, got %d", MaxAttempt, *l.Attempt)}
	}
	a := leaderboard.Attempt{Task: *l.Task}
	switch {
	case l.Outcome != nil:
		o := leaderboard.Outcome(*l.Outcome)
		switch o {
		case leaderboard.Passed, leaderboard.Failed, leaderboard.Errored, leaderboard.JudgeFailed, leaderboard.Cancelled:
		default:
			return record{}, &LineError{Field: "outcome", Msg: fmt.Sprintf("want passed, failed, errored, judge_failed or cancelled, got %q", *l.Outcome)}
		}
		a.Outcome = o
	case l.Reward != nil:
		a.Outcome = outcomeOf(*l.Reward, threshold)
	default:
		return record{}, &LineError{Field: "reward", Msg: "required when outcome is absent"}
	}
	if l.ErrorClass != nil {
		class := leaderboard.ErrorClass(*l.ErrorClass)
		switch {
		case a.Outcome != leaderboard.Errored:
			return record{}, &LineError{Field: "error_class", Msg: fmt.Sprintf("only an errored attempt has one, this one is %s", a.Outcome)}
		case class != leaderboard.AgentError && class != leaderboard.PlatformError:
			return record{}, &LineError{Field: "error_class", Msg: fmt.Sprintf("want agent or platform, got %q", *l.ErrorClass)}
		}
		a.ErrorClass = class
	}
	if err := l.usage(&a); err != nil {
		return record{}, err
	}
	r := record{attempt: a, identity: strconv.Itoa(*l.Attempt),
		entrant: leaderboard.Entrant{Harness: *l.Harness, Model: deref(l.Model)},
		taskSet: deref(l.TaskSet), version: deref(l.Version)}
	return r, nil
}

// usage copies the optional cost, tokens and duration, which must not be
// negative.
func (l jsonlLine) usage(a *leaderboard.Attempt) *LineError {
	if l.CostUSD != nil {
		if *l.CostUSD < 0 || math.IsInf(*l.CostUSD, 0) {
			return &LineError{Field: "cost_usd", Msg: fmt.Sprintf("must be ≥ 0, got %v", *l.CostUSD)}
		}
		a.CostUSD, a.HasCost = *l.CostUSD, true
	}
	if l.DurationSec != nil {
		if *l.DurationSec < 0 {
			return &LineError{Field: "duration_sec", Msg: fmt.Sprintf("must be ≥ 0, got %v", *l.DurationSec)}
		}
		a.DurationSec, a.HasDuration = *l.DurationSec, true
	}
	for _, tok := range []struct {
		field string
		v     *int64
		dst   *int64
	}{{"input_tokens", l.InputTokens, &a.InputTokens}, {"output_tokens", l.OutputTokens, &a.OutputTokens}, {"cache_tokens", l.CacheTokens, &a.CacheTokens}} {
		if tok.v == nil {
			continue
		}
		if *tok.v < 0 {
			return &LineError{Field: tok.field, Msg: fmt.Sprintf("must be ≥ 0, got %d", *tok.v)}
		}
		*tok.dst = *tok.v
		if tok.field != "cache_tokens" {
			a.HasTokens = true
		}
	}
	return nil
}

func firstErr(errs ...*LineError) *LineError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
