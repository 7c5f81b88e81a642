package runconfig

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// Render renders cfg as TOML in the documented layout, with every
// [execution] value spelled out. Parse(Render(cfg)) gives cfg back for any
// config Parse returned; Render fails when the output would not parse.
func Render(cfg Config) ([]byte, error) {
	var w tomlWriter
	renderConfig(&w, cfg)
	return w.checked()
}

// RenderResolved renders the resolved config (with its pinned manifest version
// and digest), preceded by comments summarising the resolution.
func RenderResolved(r Resolved) ([]byte, error) {
	var w tomlWriter
	w.comment(fmt.Sprintf("Resolved run config for benchmark %s.", r.Config.Experiment.Benchmark))
	w.comment(fmt.Sprintf("Manifest version %s, digest %s.", r.ManifestVersion, r.ManifestDigest))
	sel := fmt.Sprintf("%d tasks", len(r.Tasks))
	if r.TaskSet != "" {
		sel += fmt.Sprintf(" (task set %s)", r.TaskSet)
	}
	w.comment(fmt.Sprintf("%s, pass threshold %s.", sel, formatFloat(r.PassThreshold)))
	for i, name := range r.Harnesses {
		// The harness's pinned program version as of submission.
		if h, ok := harness.Lookup(name); ok && h.Version != "" {
			w.comment(fmt.Sprintf("agents[%d]: harness %s %s.", i, h.Name, h.Version))
		}
	}
	for _, warning := range r.Warnings {
		w.comment("Note: " + warning)
	}
	renderConfig(&w, r.Config)
	return w.checked()
}

func renderConfig(w *tomlWriter, cfg Config) {
	w.list("artifacts", cfg.Artifacts) // a top-level key: before any table
	w.table("experiment")
	w.str("benchmark", cfg.Experiment.Benchmark)
	w.str("manifest_version", cfg.Experiment.ManifestVersion)
	w.str("manifest_digest", cfg.Experiment.ManifestDigest)

	if t := cfg.Tasks; t.TaskSet != "" || len(t.TaskNames) > 0 || len(t.Categories) > 0 {
		w.table("tasks")
		w.str("task_set", t.TaskSet)
		w.list("task_names", t.TaskNames)
		w.list("categories", t.Categories)
	}

	e := cfg.Execution
	w.table("execution")
	w.integer("attempts_per_task", e.AttemptsPerTask)
	w.integer("max_concurrent_attempts", e.MaxConcurrentAttempts)
	w.float("timeout_multiplier", e.TimeoutMultiplier)
	w.integer("max_retries", e.MaxRetries)
	if e.MaxTokensPerAttempt > 0 {
		fmt.Fprintf(&w.b, "max_tokens_per_attempt = %d\n", e.MaxTokensPerAttempt)
	}
	if e.MaxCostUSDPerAttempt > 0 {
		w.float("max_cost_usd_per_attempt", e.MaxCostUSDPerAttempt)
	}
	if e.PassThreshold != nil {
		w.float("pass_threshold", *e.PassThreshold)
	}
	w.str("judge_model", e.JudgeModel)
	w.str("judge_api_key_secret", e.JudgeAPIKeySecret)

	w.stringTable("env", cfg.Env)
	if len(cfg.Secrets.Required) > 0 {
		w.table("secrets")
		w.list("required", cfg.Secrets.Required)
	}
	if len(cfg.Verifier.Required) > 0 || len(cfg.Verifier.Env) > 0 {
		w.table("verifier")
		w.list("required", cfg.Verifier.Required)
		w.stringTable("verifier.env", cfg.Verifier.Env)
	}
	for _, a := range cfg.Agents {
		renderAgent(w, a)
	}
}

func renderAgent(w *tomlWriter, a Agent) {
	w.arrayTable("agents")
	w.str("name", a.Name)
	w.str("harness", a.Harness)
	w.str("harness_api_key_secret", a.HarnessAPIKeySecret)
	w.str("command", a.Command)
	w.list("secrets", a.Secrets)
	if m := a.Model; m != nil {
		w.table("agents.model")
		w.str("type", string(m.Type))
		w.str("model", m.Model)
		w.str("base_model", m.BaseModel)
		w.str("lora_model_name", m.LoraModelName)
		w.str("api_key_secret", m.APIKeySecret)
		w.str("base_url", m.BaseURL)
		w.stringTable("agents.model.extra_headers", m.ExtraHeaders)
	}
	w.stringTable("agents.env", a.Env)
}

// tomlWriter writes TOML text.
type tomlWriter struct{ b bytes.Buffer }

// comment writes a comment line; line breaks in text become spaces.
func (w *tomlWriter) comment(text string) {
	text = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, text)
	w.b.WriteString("# " + text + "\n")
}

func (w *tomlWriter) header(h string) {
	if w.b.Len() > 0 {
		w.b.WriteByte('\n')
	}
	w.b.WriteString(h + "\n")
}

func (w *tomlWriter) table(name string)      { w.header("[" + name + "]") }
func (w *tomlWriter) arrayTable(name string) { w.header("[[" + name + "]]") }

// str writes key = "v", skipping empty values.
func (w *tomlWriter) str(key, v string) {
	if v != "" {
		fmt.Fprintf(&w.b, "%s = %s\n", tomlKey(key), tomlString(v))
	}
}

func (w *tomlWriter) integer(key string, v int) { fmt.Fprintf(&w.b, "%s = %d\n", key, v) }

func (w *tomlWriter) float(key string, v float64) {
	fmt.Fprintf(&w.b, "%s = %s\n", key, formatFloat(v))
}

// list writes key = ["a", …], skipping empty lists.
func (w *tomlWriter) list(key string, vs []string) {
	if len(vs) == 0 {
		return
	}
	quoted := make([]string, len(vs))
	for i, v := range vs {
		quoted[i] = tomlString(v)
	}
	fmt.Fprintf(&w.b, "%s = [%s]\n", key, strings.Join(quoted, ", "))
}

// stringTable writes [name] with its entries sorted, skipping empty maps.
func (w *tomlWriter) stringTable(name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	w.table(name)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&w.b, "%s = %s\n", tomlKey(k), tomlString(m[k]))
	}
}

// checked returns the text if it parses as a run config.
func (w *tomlWriter) checked() ([]byte, error) {
	out := w.b.Bytes()
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("render run config: %w", err)
	}
	return out, nil
}

// formatFloat renders a float as a TOML float (always with a decimal point).
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func tomlKey(k string) string {
	if bareKeyRE.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
