package terminus

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/terminus/terminal"
)

// Limits of a command's duration, in seconds.
const (
	DefaultDuration = 1.0
	MaxDuration     = 60.0
)

// Command is one entry of a response's commands list.
type Command struct {
	Keystrokes string  `json:"keystrokes"`
	Duration   float64 `json:"duration"`
}

// Response is a model's answer in terminus-2's JSON format.
type Response struct {
	Analysis     string
	Plan         string
	Commands     []Command
	TaskComplete bool
}

// Feedback is what was wrong with a response: errors make it unusable
// (nothing is executed), warnings are reported back with the output.
type Feedback struct {
	Errors   []string
	Warnings []string
}

// knownFields are a response's top-level keys.
var knownFields = []string{"analysis", "plan", "commands", "task_complete"}

// ParseResponse reads a model's reply. It is lenient where the intent is
// clear — text around the JSON object, missing closing brackets, a
// task_complete given as a string, an over-long duration — and says so in
// warnings; it reports errors when there is no usable object.
func ParseResponse(text string) (Response, Feedback) {
	var fb Feedback
	start := strings.IndexByte(text, '{')
	if start < 0 {
		fb.Errors = append(fb.Errors, "no JSON object found in the response")
		return Response{}, fb
	}
	if strings.TrimSpace(text[:start]) != "" {
		fb.Warnings = append(fb.Warnings, "text before the JSON object was ignored")
	}
	obj, end, fixed, err := decodeObject(text[start:])
	if err != nil {
		fb.Errors = append(fb.Errors, "the JSON object could not be parsed: "+err.Error())
		return Response{}, fb
	}
	if fixed {
		fb.Warnings = append(fb.Warnings, "the JSON object was incomplete; missing closing brackets were added")
	}
	if strings.TrimSpace(text[start+end:]) != "" {
		fb.Warnings = append(fb.Warnings, "text after the JSON object was ignored")
	}

	var r Response
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(knownFields, k) {
			fb.Warnings = append(fb.Warnings, fmt.Sprintf("unknown field %q was ignored", k))
		}
	}
	if tc, ok := obj["task_complete"]; ok {
		switch v := tc.(type) {
		case bool:
			r.TaskComplete = v
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				r.TaskComplete = true
			case "false":
			default:
				fb.Errors = append(fb.Errors, fmt.Sprintf("task_complete must be true or false, not %q", v))
			}
			if len(fb.Errors) == 0 {
				fb.Warnings = append(fb.Warnings, "task_complete should be a boolean, not a string")
			}
		case nil:
		default:
			fb.Errors = append(fb.Errors, "task_complete must be true or false")
		}
	}
	for _, k := range []string{"analysis", "plan"} {
		v, ok := obj[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		s, isString := v.(string)
		if !isString {
			fb.Errors = append(fb.Errors, fmt.Sprintf("%s must be a string", k))
			continue
		}
		if k == "analysis" {
			r.Analysis = s
		} else {
			r.Plan = s
		}
	}
	cmds, ok := obj["commands"]
	switch {
	case !ok && r.TaskComplete:
		fb.Warnings = append(fb.Warnings, "commands is missing; taken as an empty list")
	case !ok:
		missing = append(missing, "commands")
	default:
		r.Commands = parseCommands(cmds, &fb)
	}
	if len(missing) > 0 {
		fb.Errors = append(fb.Errors, "missing required fields: "+strings.Join(missing, ", "))
	}
	return r, fb
}

// decodeObject decodes the JSON object at the start of s and returns it and
// the number of bytes it spans. When s ends inside the object, the missing
// closing brackets (and an open string's quote) are added once.
func decodeObject(s string) (map[string]any, int, bool, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var obj map[string]any
	err := dec.Decode(&obj)
	if err == nil {
		return obj, int(dec.InputOffset()), false, nil
	}
	completed, ok := closeBrackets(s)
	if !ok {
		return nil, 0, false, err
	}
	var fixedObj map[string]any
	if json.Unmarshal([]byte(completed), &fixedObj) != nil {
		return nil, 0, false, err
	}
	return fixedObj, len(s), true, nil
}

// closeBrackets appends what an object cut short needs to be complete: a
// closing quote when it ends inside a string, then the open brackets'
// closers. It reports false when s does not end inside an open bracket.
func closeBrackets(s string) (string, bool) {
	var stack []byte
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return "", false
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return "", false
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(s, " \t\r\n,"))
	if inString {
		b.WriteByte('"')
	}
	for i := len(stack) - 1; i >= 0; i-- {
		b.WriteByte(stack[i])
	}
	return b.String(), true
}

func parseCommands(v any, fb *Feedback) []Command {
	list, ok := v.([]any)
	if !ok {
		fb.Errors = append(fb.Errors, "commands must be a list")
		return nil
	}
	cmds := make([]Command, 0, len(list))
	for i, item := range list {
		n := i + 1
		m, ok := item.(map[string]any)
		if !ok {
			fb.Errors = append(fb.Errors, fmt.Sprintf("command %d must be an object with keystrokes and duration", n))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != "keystrokes" && k != "duration" {
				fb.Warnings = append(fb.Warnings, fmt.Sprintf("command %d: unknown field %q was ignored", n, k))
			}
		}
		keys, ok := m["keystrokes"].(string)
		if !ok {
			fb.Errors = append(fb.Errors, fmt.Sprintf("command %d: keystrokes must be a string", n))
			continue
		}
		c := Command{Keystrokes: keys, Duration: DefaultDuration}
		switch d := m["duration"].(type) {
		case nil:
		case float64:
			switch {
			case math.IsNaN(d) || d < 0:
				fb.Warnings = append(fb.Warnings, fmt.Sprintf("command %d: duration %v is not ≥ 0; %v s used", n, d, DefaultDuration))
			case d > MaxDuration:
				fb.Warnings = append(fb.Warnings, fmt.Sprintf("command %d: duration %v exceeds the %v s maximum; %v s used", n, d, MaxDuration, MaxDuration))
				c.Duration = MaxDuration
			default:
				c.Duration = d
			}
		default:
			fb.Warnings = append(fb.Warnings, fmt.Sprintf("command %d: duration must be a number of seconds; %v s used", n, DefaultDuration))
		}
		if i < len(list)-1 && !strings.HasSuffix(keys, "\n") && !terminal.IsKeyName(keys) {
			fb.Warnings = append(fb.Warnings, fmt.Sprintf("command %d does not end with a newline but another command follows: the two will be typed on the same line", n))
		}
		cmds = append(cmds, c)
	}
	return cmds
}
