package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestCLIAdmin drives `gauntlet admin` (the built binary) against a real
// `gauntlet local`, whose first user is the platform operator: create a
// workspace, add a user, and let billing decide whether that user submits.
func TestCLIAdmin(t *testing.T) {
	srv, err := servertest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	home := t.TempDir()
	op := cliRun{t: t, env: []string{"GAUNTLET_URL=" + srv.URL, "GAUNTLET_TOKEN=" + srv.Tenant.Token, "XDG_CONFIG_HOME=" + home}}

	var ws, replay v1.AdminWorkspaceView
	decode(t, op.ok("", "admin", "workspace", "create", "CLI Corp", "--idempotency-key", "cli-1", "--json"), &ws)
	decode(t, op.ok("", "admin", "workspace", "create", "--json", "CLI Corp", "--idempotency-key", "cli-1"), &replay)
	if ws.ID == "" || ws.Name != "CLI Corp" || replay.ID != ws.ID {
		t.Fatalf("workspace create = %+v, replay %+v; want one id", ws, replay)
	}
	if out := op.ok("", "admin", "workspace", "create", "Second Corp", "--id", "second"); !strings.Contains(out, "gauntlet admin billing set second active") {
		t.Errorf("workspace create text output:\n%s", out)
	}
	var list v1.AdminWorkspaceList
	decode(t, op.ok("", "admin", "workspace", "list", "--limit", "1", "--all", "--json"), &list)
	var names []string
	for _, w := range list.Workspaces {
		names = append(names, w.Name)
	}
	if len(list.Workspaces) != 3 || list.NextCursor != "" || names[1] != "CLI Corp" || names[2] != "Second Corp" {
		t.Errorf("workspace list --all = %v (cursor %q), want local, CLI Corp, Second Corp", names, list.NextCursor)
	}
	if _, stderr, code := op.run("", "admin", "workspace", "list", "--limit", "1"); code != exitOK || !strings.Contains(stderr, "more: gauntlet admin workspace list --cursor") {
		t.Errorf("workspace list --limit 1 = exit %d, stderr %q; want a hint for the next page", code, stderr)
	}

	var user v1.AdminUserView
	decode(t, op.ok("", "admin", "user", "add", ws.ID, "erin-sub", "--email", "erin@cli.example", "--json"), &user)
	if user.Token == "" || user.Name != "erin@cli.example" {
		t.Fatalf("user add --json = %+v, want a token and the email as name", user)
	}
	erin := cliRun{t: t, env: []string{"GAUNTLET_URL=" + srv.URL, "GAUNTLET_TOKEN=" + user.Token, "XDG_CONFIG_HOME=" + home}}
	erin.ok("", "benchmark", "info", "demo-bench", "--wait")
	cfg := filepath.Join(t.TempDir(), "run.toml")
	if err := os.WriteFile(cfg, []byte(cliRunConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := erin.run("", "submit", cfg, "--yes"); code != exitFailure || !strings.Contains(stderr, "billing required") {
		t.Errorf("submit without billing = exit %d, stderr %q; want 1 with billing required", code, stderr)
	}
	var b v1.AdminBillingView
	decode(t, op.ok("", "admin", "billing", "set", ws.ID, "past_due", "--plan", "team", "--json"), &b)
	if b.Status != "past_due" || b.Plan != "team" || b.CanSubmit {
		t.Errorf("billing set past_due = %+v", b)
	}
	if _, stderr, code := erin.run("", "submit", cfg, "--yes"); code != exitFailure || !strings.Contains(stderr, "past_due") {
		t.Errorf("submit while past_due = exit %d, stderr %q; want 1 naming past_due", code, stderr)
	}
	if out := op.ok("", "admin", "billing", "set", ws.ID, "active"); !strings.Contains(out, "billing active (plan team); can submit runs: true") {
		t.Errorf("billing set active:\n%s", out)
	}
	if out := erin.ok("", "submit", cfg, "--yes"); !strings.Contains(out, "8 tasks") {
		t.Errorf("submit with active billing:\n%s", out)
	}

	failures := []struct {
		name   string
		run    cliRun
		args   []string
		code   int
		stderr string
	}{
		{"not an operator", erin, []string{"admin", "workspace", "list"}, exitFailure, "403 FORBIDDEN"},
		{"no group", op, []string{"admin"}, exitUsage, "usage: gauntlet admin"},
		{"unknown group", op, []string{"admin", "frob"}, exitUsage, `unknown subcommand "frob"`},
		{"unknown subcommand", op, []string{"admin", "workspace", "delete"}, exitUsage, `unknown subcommand "delete"`},
		{"bad status", op, []string{"admin", "billing", "set", ws.ID, "free"}, exitUsage, `status "free"`},
		{"missing user", op, []string{"admin", "user", "add", ws.ID}, exitUsage, "want a workspace id and a user id"},
		{"two names", op, []string{"admin", "workspace", "create", "a", "b"}, exitUsage, "want one workspace name"},
		{"bad limit", op, []string{"admin", "workspace", "list", "--limit", "0"}, exitUsage, "--limit 0"},
		{"unknown workspace", op, []string{"admin", "billing", "set", "w-0000000000000000", "active"}, exitFailure, "404 NOT_FOUND"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := tt.run.run("", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("gauntlet %v = exit %d, stderr %q; want %d with %q", tt.args, code, stderr, tt.code, tt.stderr)
			}
		})
	}
	if strings.Contains(srv.Logs(), user.Token) {
		t.Error("the issued API token appeared in the server log")
	}
}

func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
}
