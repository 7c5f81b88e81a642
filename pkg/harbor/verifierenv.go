package harbor

// Verifier environment modes ([verifier].environment_mode).
const (
	// VerifierShared runs the verifier in the agent's environment (the
	// default).
	VerifierShared = "shared"
	// VerifierSeparate runs it in an environment of its own, built from
	// the task's tests/ directory, with only the artifacts copied in.
	VerifierSeparate = "separate"
)

// Separate reports whether the verifier runs in an environment of its
// own, by Harbor's rules: environment_mode = "separate", or
// [verifier.environment] present without a mode.
func (v VerifierConfig) Separate() bool {
	return v.EnvironmentMode == VerifierSeparate || (v.EnvironmentMode == "" && v.Environment != nil)
}

// VerifierEnvironment is the environment a separate verifier runs in:
// [verifier.environment], else (environment_mode = "separate" alone) a
// fresh copy of the top-level [environment], as Harbor resolves it.
func (c TaskConfig) VerifierEnvironment() EnvironmentConfig {
	if c.Verifier.Environment != nil {
		return *c.Verifier.Environment
	}
	e := c.Environment
	e.Env = cloneMap(e.Env)
	e.AllowedHosts = append([]string(nil), e.AllowedHosts...)
	return e
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// verifierMode reads [verifier].environment_mode and
// [verifier.environment] into v; a mode that contradicts the table is an
// error, as in Harbor.
func (r *fieldReader) verifierMode(t map[string]any, v *VerifierConfig) {
	mode, hasMode := r.str(t, "verifier", "environment_mode")
	if hasMode {
		switch mode {
		case VerifierShared, VerifierSeparate:
			v.EnvironmentMode = mode
		default:
			r.fail("verifier.environment_mode", "must be %q or %q, got %q", VerifierShared, VerifierSeparate, mode)
		}
	}
	if _, ok := t["environment"]; !ok {
		return
	}
	if mode == VerifierShared {
		r.fail("verifier.environment_mode", "%q is incompatible with [verifier.environment]; omit the environment or set %q", VerifierShared, VerifierSeparate)
		return
	}
	e := r.environmentTable(r.table(t, "verifier", "environment"), "verifier.environment")
	v.Environment = &e
}

// unsupportedArtifacts names what of the task's separate verifier
// gauntlet does not run: a separate verifier environment that asks for
// GPUs, TPUs or Windows.
func (r *fieldReader) unsupportedArtifacts(doc map[string]any) []string {
	var out []string
	v, _ := doc["verifier"].(map[string]any)
	e, _ := v["environment"].(map[string]any)
	if osName, _ := e["os"].(string); osName == "windows" || osName == "Windows" || osName == "WINDOWS" {
		out = append(out, `[verifier.environment].os = "windows" (this platform runs Linux containers only)`)
	}
	if g, ok := e["gpus"].(int64); ok && g > 0 {
		out = append(out, "[verifier.environment].gpus > 0 (this platform has no GPUs)")
	}
	if _, ok := e["tpu"]; ok {
		out = append(out, "[verifier.environment.tpu] (this platform has no TPUs)")
	}
	if m, ok := e["mcp_servers"]; ok && nonEmpty(m) {
		out = append(out, "[[verifier.environment.mcp_servers]] (MCP servers)")
	}
	return out
}
