package harbor

import (
	"regexp"
	"strconv"
	"time"
)

// DefaultCollectTimeoutSec is Harbor's timeout of a collect hook.
const DefaultCollectTimeoutSec = 60.0

// CollectHook is one [[verifier.collect]] entry: a command run in a
// service of the task's environment once the agent is done, to snapshot
// runtime state (a database dump, an in-memory counter) into files before
// the environment ends. As in Harbor, a hook's failure is logged, never
// the trial's.
type CollectHook struct {
	Command string
	// Service is the compose service it runs in ("main" by default).
	Service    string
	TimeoutSec float64
	// User runs it as this user name or uid; "" = the service's user.
	User string
}

// Timeout bounds the hook's command.
func (h CollectHook) Timeout() time.Duration { return seconds(h.TimeoutSec) }

// composeServiceName is Harbor's compose service name rule.
var composeServiceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// collectHooks reads the collect hooks of the verifier table v, whose
// dotted name is prefix ([verifier], a step's verifier).
func (r *fieldReader) collectHooks(v map[string]any, prefix string) []CollectHook {
	raw, ok := v["collect"]
	if !ok {
		return nil
	}
	var list []map[string]any
	switch x := raw.(type) {
	case []map[string]any:
		list = x
	case []any:
		for i, item := range x {
			m, ok := item.(map[string]any)
			if !ok {
				r.fail(prefix+".collect["+strconv.Itoa(i)+"]", "must be a table with command, service, timeout_sec and user, got %s", tomlType(item))
				continue
			}
			list = append(list, m)
		}
	default:
		r.fail(prefix+".collect", "must be an array of tables ([[%s.collect]]), got %s", prefix, tomlType(raw))
		return nil
	}
	hooks := make([]CollectHook, 0, len(list))
	for i, m := range list {
		p := prefix + ".collect[" + strconv.Itoa(i) + "]"
		h := CollectHook{Service: "main", TimeoutSec: DefaultCollectTimeoutSec, User: r.user(m, p)}
		if _, present := m["command"]; !present {
			r.fail(p+".command", "is required (a shell command run in the service)")
		} else if c, ok := r.str(m, p, "command"); ok {
			if c == "" {
				r.fail(p+".command", "must not be empty")
			}
			h.Command = c
		}
		if s, ok := r.str(m, p, "service"); ok {
			if !composeServiceName.MatchString(s) {
				r.fail(p+".service", "%q is not a compose service name (a letter or digit, then letters, digits, '_', '.' and '-')", s)
			}
			h.Service = s
		}
		if t, ok := r.positive(m, p, "timeout_sec"); ok {
			h.TimeoutSec = t
		}
		hooks = append(hooks, h)
	}
	return hooks
}
