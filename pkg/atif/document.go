package atif

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ValidateJSON checks a trajectory.json document as written, against the
// rules Harbor's own models enforce, which typed values cannot show: no
// unknown keys at any level, integer token counts, agent-only fields
// (model_name, reasoning_effort, reasoning_content, tool_calls, metrics)
// only on agent steps, ISO 8601 timestamps, tool arguments that are
// objects, content parts of ATIF's types. It returns every violation,
// each naming its JSON path; nil means the document is valid.
func ValidateJSON(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return fmt.Errorf("trajectory: not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("trajectory: trailing data after the JSON object")
	}
	v := &validator{}
	v.trajectory(root)
	return errors.Join(v.errs...)
}

// acceptedVersions are the schema versions ValidateJSON accepts: ATIF only
// adds optional fields between minor versions, so older documents stay
// valid.
var acceptedVersions = []string{
	"ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
	"ATIF-v1.5", "ATIF-v1.6", SchemaVersion,
}

type validator struct{ errs []error }

func (v *validator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// object checks that x is an object whose keys are all in allowed and that
// the required ones are present; it returns the object (nil when x is not one).
func (v *validator) object(path string, x any, allowed, required []string) map[string]any {
	m, ok := x.(map[string]any)
	if !ok {
		v.fail(path, "want an object")
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			v.fail(path+"."+k, "extra field (allowed: %s)", strings.Join(allowed, ", "))
		}
	}
	for _, k := range required {
		if val, ok := m[k]; !ok || val == nil {
			v.fail(path+"."+k, "required")
		}
	}
	return m
}

func (v *validator) str(path string, m map[string]any, key string) (string, bool) {
	x, ok := m[key]
	if !ok || x == nil {
		return "", false
	}
	s, ok := x.(string)
	if !ok {
		v.fail(path+"."+key, "want a string")
	}
	return s, ok
}

func (v *validator) integer(path string, m map[string]any, key string, minimum int64) (int64, bool) {
	x, ok := m[key]
	if !ok || x == nil {
		return 0, false
	}
	i, ok := laxInt(x)
	if !ok {
		v.fail(path+"."+key, "want an int, got %v", x)
		return 0, false
	}
	if i < minimum {
		v.fail(path+"."+key, "want an int ≥ %d, got %d", minimum, i)
	}
	return i, true
}

// noMinimum is the minimum of an int field Harbor does not bound (token
// counts: Harbor's models set no ge on them).
const noMinimum = math.MinInt64

// laxInt reads an int as pydantic's lax mode does, the mode Harbor's
// validator builds its models in: an integer, a float without a fraction
// (1000.0), a string holding an integer ("1000") or a boolean.
func laxInt(x any) (int64, bool) {
	switch x := x.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(strings.ReplaceAll(x, "_", "")), 10, 64)
		return i, err == nil
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func (v *validator) number(path string, m map[string]any, key string) {
	if x, ok := m[key]; ok && x != nil {
		if _, ok := x.(json.Number); !ok {
			v.fail(path+"."+key, "want a number")
		}
	}
}

func (v *validator) optObject(path string, m map[string]any, key string) {
	if x, ok := m[key]; ok && x != nil {
		if _, ok := x.(map[string]any); !ok {
			v.fail(path+"."+key, "want an object")
		}
	}
}

func (v *validator) optArray(path string, m map[string]any, key string) []any {
	x, ok := m[key]
	if !ok || x == nil {
		return nil
	}
	a, ok := x.([]any)
	if !ok {
		v.fail(path+"."+key, "want an array")
	}
	return a
}

func (v *validator) trajectory(x any) { v.trajectoryAt("trajectory", x) }

// trajectoryAt checks one trajectory (the root or an embedded sub-agent's)
// and returns it as an object, nil when it is not one.
func (v *validator) trajectoryAt(p string, x any) map[string]any {
	m := v.object(p, x, []string{"schema_version", "session_id", "trajectory_id", "agent", "steps",
		"notes", "final_metrics", "continued_trajectory_ref", "subagent_trajectories", "extra"},
		[]string{"agent", "steps"}) // schema_version defaults to the latest
	if m == nil {
		return nil
	}
	if sv, ok := v.str(p, m, "schema_version"); ok && !slices.Contains(acceptedVersions, sv) {
		v.fail(p+".schema_version", "%q is not a known ATIF version (want one of %s)", sv, strings.Join(acceptedVersions, ", "))
	}
	v.str(p, m, "session_id")
	v.str(p, m, "trajectory_id")
	v.str(p, m, "notes")
	v.str(p, m, "continued_trajectory_ref")
	v.optObject(p, m, "extra")
	// Embedded sub-agent trajectories are trajectories in their own right,
	// each with a trajectory_id unique among its siblings (refs resolve by it).
	ids := map[string]bool{}
	for i, sub := range v.optArray(p, m, "subagent_trajectories") {
		sp := fmt.Sprintf("%s.subagent_trajectories[%d]", p, i)
		sm := v.trajectoryAt(sp, sub)
		if sm == nil {
			continue
		}
		id, ok := v.str(sp, sm, "trajectory_id")
		switch {
		case !ok:
			v.fail(sp+".trajectory_id", "required for an embedded sub-agent trajectory")
		case ids[id]:
			v.fail(sp+".trajectory_id", "%q is not unique within subagent_trajectories", id)
		}
		ids[id] = true
	}
	if a, ok := m["agent"]; ok {
		v.agent(p+".agent", a)
	}
	steps := v.optArray(p, m, "steps")
	if _, ok := m["steps"]; ok && len(steps) == 0 {
		v.fail(p+".steps", "required: at least one step")
	}
	stepsAt := "steps"
	if p != "trajectory" {
		stepsAt = p + ".steps"
	}
	for i, s := range steps {
		v.step(fmt.Sprintf("%s[%d]", stepsAt, i), s, i+1)
	}
	if fm, ok := m["final_metrics"]; ok && fm != nil {
		v.finalMetrics(p+".final_metrics", fm)
	}
	return m
}

func (v *validator) agent(p string, x any) {
	m := v.object(p, x, []string{"name", "version", "model_name", "tool_definitions", "extra"}, []string{"name", "version"})
	if m == nil {
		return
	}
	v.str(p, m, "name")
	v.str(p, m, "version")
	v.str(p, m, "model_name")
	v.optArray(p, m, "tool_definitions")
	v.optObject(p, m, "extra")
}

// agentOnly are the step fields Harbor accepts only when source is agent.
var agentOnly = []string{"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}

func (v *validator) step(p string, x any, wantID int) {
	m := v.object(p, x, []string{"step_id", "timestamp", "source", "model_name", "reasoning_effort", "message",
		"reasoning_content", "tool_calls", "observation", "metrics", "is_copied_context", "llm_call_count", "extra"},
		[]string{"step_id", "source", "message"})
	if m == nil {
		return
	}
	if id, ok := v.integer(p, m, "step_id", 1); ok && id != int64(wantID) {
		v.fail(p+".step_id", "expected %d (step ids count from 1 without gaps), got %d", wantID, id)
	}
	if ts, ok := v.str(p, m, "timestamp"); ok {
		if !isISO8601(ts) {
			v.fail(p+".timestamp", "%q is not ISO 8601", ts)
		}
	}
	source, _ := v.str(p, m, "source")
	if _, ok := m["source"]; ok && !slices.Contains([]string{SourceSystem, SourceUser, SourceAgent}, source) {
		v.fail(p+".source", "%q: want system, user or agent", source)
	}
	if source != SourceAgent {
		for _, k := range agentOnly {
			if val, ok := m[k]; ok && val != nil {
				v.fail(p+"."+k, "agent-only field on a %s step", source)
			}
		}
	}
	v.str(p, m, "model_name")
	v.str(p, m, "reasoning_content")
	if msg, ok := m["message"]; ok && msg != nil {
		switch msg := msg.(type) {
		case string:
		case []any:
			for i, part := range msg {
				v.contentPart(fmt.Sprintf("%s.message[%d]", p, i), part)
			}
		default:
			v.fail(p+".message", "want a string or an array of content parts")
		}
	}
	if b, ok := m["is_copied_context"]; ok && b != nil {
		if _, ok := b.(bool); !ok {
			v.fail(p+".is_copied_context", "want a boolean")
		}
	}
	if n, ok := v.integer(p, m, "llm_call_count", 0); ok && n == 0 && m["metrics"] != nil {
		v.fail(p+".metrics", "absent when llm_call_count is 0")
	}
	v.optObject(p, m, "extra")
	callIDs := map[string]bool{}
	for i, tc := range v.optArray(p, m, "tool_calls") {
		if id := v.toolCall(fmt.Sprintf("%s.tool_calls[%d]", p, i), tc); id != "" {
			if callIDs[id] {
				v.fail(fmt.Sprintf("%s.tool_calls[%d].tool_call_id", p, i), "%q appears twice in this step", id)
			}
			callIDs[id] = true
		}
	}
	if obs, ok := m["observation"]; ok && obs != nil {
		v.observation(p+".observation", obs, callIDs)
	}
	if mt, ok := m["metrics"]; ok && mt != nil {
		v.metrics(p+".metrics", mt)
	}
}

func (v *validator) contentPart(p string, x any) {
	m := v.object(p, x, []string{"type", "text", "source"}, []string{"type"})
	if m == nil {
		return
	}
	typ, _ := v.str(p, m, "type")
	switch typ {
	case "text":
		if _, ok := v.str(p, m, "text"); !ok {
			v.fail(p+".text", "required when type=text")
		}
		if m["source"] != nil {
			v.fail(p+".source", "not allowed when type=text")
		}
	case "image":
		if m["text"] != nil {
			v.fail(p+".text", "not allowed when type=image")
		}
		src := v.object(p+".source", m["source"], []string{"media_type", "path"}, []string{"media_type", "path"})
		if src != nil {
			mt, _ := v.str(p+".source", src, "media_type")
			if !slices.Contains([]string{"image/jpeg", "image/png", "image/gif", "image/webp"}, mt) {
				v.fail(p+".source.media_type", "%q is not an image type ATIF accepts", mt)
			}
			v.str(p+".source", src, "path")
		}
	default:
		v.fail(p+".type", "%q: want text or image", typ)
	}
}

func (v *validator) toolCall(p string, x any) string {
	m := v.object(p, x, []string{"tool_call_id", "function_name", "arguments", "extra"},
		[]string{"tool_call_id", "function_name", "arguments"})
	if m == nil {
		return ""
	}
	id, _ := v.str(p, m, "tool_call_id")
	v.str(p, m, "function_name")
	if args, ok := m["arguments"]; ok && args != nil {
		if _, ok := args.(map[string]any); !ok {
			v.fail(p+".arguments", "required dict (a JSON object)")
		}
	}
	v.optObject(p, m, "extra")
	return id
}

func (v *validator) observation(p string, x any, callIDs map[string]bool) {
	m := v.object(p, x, []string{"results"}, []string{"results"})
	if m == nil {
		return
	}
	for i, r := range v.optArray(p, m, "results") {
		rp := fmt.Sprintf("%s.results[%d]", p, i)
		rm := v.object(rp, r, []string{"source_call_id", "content", "subagent_trajectory_ref", "extra"}, nil)
		if rm == nil {
			continue
		}
		if id, ok := v.str(rp, rm, "source_call_id"); ok && !callIDs[id] {
			v.fail(rp+".source_call_id", "%s is not in this step's tool_calls", id)
		}
		switch c := rm["content"].(type) {
		case nil, string:
		case []any:
			for j, part := range c {
				v.contentPart(fmt.Sprintf("%s.content[%d]", rp, j), part)
			}
		default:
			v.fail(rp+".content", "want a string or an array of content parts")
		}
		for j, ref := range v.optArray(rp, rm, "subagent_trajectory_ref") {
			v.subagentRef(fmt.Sprintf("%s.subagent_trajectory_ref[%d]", rp, j), ref)
		}
		v.optObject(rp, rm, "extra")
	}
}

// subagentRef checks a reference to a sub-agent's trajectory: it must be
// resolvable, by trajectory_id (embedded) or trajectory_path (a file); a
// session_id alone is not (it is run-scoped).
func (v *validator) subagentRef(p string, x any) {
	m := v.object(p, x, []string{"trajectory_id", "session_id", "trajectory_path", "extra"}, nil)
	if m == nil {
		return
	}
	_, byID := v.str(p, m, "trajectory_id")
	_, byPath := v.str(p, m, "trajectory_path")
	v.str(p, m, "session_id")
	v.optObject(p, m, "extra")
	if !byID && !byPath {
		v.fail(p, "not resolvable: set trajectory_id or trajectory_path")
	}
}

func (v *validator) metrics(p string, x any) {
	m := v.object(p, x, []string{"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
		"prompt_token_ids", "completion_token_ids", "logprobs", "extra"}, nil)
	if m == nil {
		return
	}
	// Harbor bounds none of these, nor cached_tokens by prompt_tokens:
	// Validate holds gauntlet's own trajectories to that.
	v.integer(p, m, "prompt_tokens", noMinimum)
	v.integer(p, m, "completion_tokens", noMinimum)
	v.integer(p, m, "cached_tokens", noMinimum)
	v.number(p, m, "cost_usd")
	v.optArray(p, m, "prompt_token_ids")
	v.optArray(p, m, "completion_token_ids")
	v.optArray(p, m, "logprobs")
	v.optObject(p, m, "extra")
}

func (v *validator) finalMetrics(p string, x any) {
	m := v.object(p, x, []string{"total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
		"total_cost_usd", "total_steps", "extra"}, nil)
	if m == nil {
		return
	}
	// Totals may count what no step shows (a summarisation sub-call), so
	// they are not checked against the steps here; Validate does that for
	// gauntlet's own trajectories.
	v.integer(p, m, "total_prompt_tokens", noMinimum)
	v.integer(p, m, "total_completion_tokens", noMinimum)
	v.integer(p, m, "total_cached_tokens", noMinimum)
	v.integer(p, m, "total_steps", 0)
	v.number(p, m, "total_cost_usd")
	v.optObject(p, m, "extra")
}

// isoPattern is the shape Python's datetime.fromisoformat (3.11) reads,
// which Harbor's step validator calls after turning a "Z" into "+00:00": a
// date, optionally a time of hour[:minute[:second[.fraction]]] after 'T'
// or a space, optionally a UTC offset; colons may be left out.
var isoPattern = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::?(\d{2})(?::?(\d{2})(?:[.,](\d+))?)?)?` +
	`(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:\.\d+)?)?)?)?)?$`)

// isISO8601 accepts what Harbor's datetime.fromisoformat check does: with
// or without a zone, seconds, minutes, even a time (gauntlet's own
// trajectories are held to RFC 3339 by Validate).
func isISO8601(s string) bool {
	g := isoPattern.FindStringSubmatch(s)
	if g == nil {
		return false
	}
	num := func(i int) int {
		if g[i] == "" {
			return 0
		}
		n, _ := strconv.Atoi(g[i])
		return n
	}
	year, month, day, hour, minute, sec := num(1), num(2), num(3), num(4), num(5), num(6)
	if year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	// The day must exist in its month (time.Date would roll 02-30 over).
	return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Day() == day
}
