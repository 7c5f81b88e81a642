package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestPublicRoutesAndAuth(t *testing.T) {
	var health map[string]string
	anon.get(t, "/healthz", http.StatusOK, &health)
	if health["status"] != "ok" {
		t.Errorf("/healthz = %v, want status ok", health)
	}
	status, hdr, body := anon.do(t, request{method: "GET", path: "/v1/openapi.json"})
	if status != http.StatusOK || !json.Valid(body) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("GET /v1/openapi.json = %d %s, want 200 JSON", status, hdr.Get("Content-Type"))
	}
	for _, tt := range []struct {
		name   string
		caller caller
		header map[string]string
	}{
		{name: "no token", caller: anon},
		{name: "unknown token", caller: caller{token: "gt_0000"}},
		{name: "wrong scheme", caller: anon, header: map[string]string{"Authorization": "Basic YTpi"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/workspace", "/v1/benchmarks", "/v1/runs", "/v1/secrets"} {
				wantError(t, tt.caller, request{method: "GET", path: path, header: tt.header}, http.StatusUnauthorized, v1.CodeUnauthorized)
			}
		})
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/nothing-here"}, http.StatusNotFound, v1.CodeNotFound)
	if status, hdr, body := anon.do(t, request{method: "GET", path: "/"}); status != http.StatusOK ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "<html") {
		t.Errorf("GET / = %d %s, want the console's index.html", status, hdr.Get("Content-Type"))
	}
}

func TestWorkspace(t *testing.T) {
	var got v1.WorkspaceView
	alice().get(t, "/v1/workspace", http.StatusOK, &got)
	want := v1.WorkspaceView{ID: env.Tenant.Workspace, Name: "local", User: v1.UserView{ID: env.Tenant.User, Name: got.User.Name},
		Billing: v1.BillingView{Status: "active", Plan: "local", CanSubmit: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/workspace (-want +got):\n%s", diff)
	}
	bob().get(t, "/v1/workspace", http.StatusOK, &got)
	if got.ID != tenantB.Workspace || got.Name != "tenant-b" || got.User.Name != "bob" {
		t.Errorf("bob's workspace = %+v, want tenant-b", got)
	}
}

// secretValue is the value every secret test stores; TestSecretValuesNeverLeak
// scans every response and log line for it.
const secretValue = "s3cr3t-value-7f1d2c9a-never-shown"

func secretNames(t *testing.T, c caller) []string {
	t.Helper()
	var list v1.SecretList
	c.get(t, "/v1/secrets", http.StatusOK, &list)
	var names []string
	for _, s := range list.Secrets {
		if s.Name != "RUN_TOKEN" { // TestRunLifecycle's
			names = append(names, s.Scope+":"+s.Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestSecrets(t *testing.T) {
	put := func(c caller, name, query, contentType string, body []byte) (int, []byte) {
		status, _, b := c.do(t, request{method: "PUT", path: "/v1/secrets/" + name + query, body: body, contentType: contentType})
		return status, b
	}
	if status, b := put(alice(), "API_KEY_ONE", "", "text/plain", []byte(secretValue)); status != http.StatusCreated {
		t.Fatalf("first PUT = %d %s, want 201", status, b)
	}
	if status, b := put(alice(), "API_KEY_ONE", "", "application/octet-stream", []byte(secretValue)); status != http.StatusOK {
		t.Fatalf("second PUT = %d %s, want 200", status, b)
	}
	if status, b := put(alice(), "API_KEY_TWO", "?scope=personal", "application/json", jsonBody(t, map[string]string{"value": secretValue})); status != http.StatusCreated {
		t.Fatalf("personal JSON PUT = %d %s, want 201", status, b)
	}
	if status, b := put(bob(), "BOB_KEY", "?scope=workspace", "", []byte(secretValue)); status != http.StatusCreated {
		t.Fatalf("bob PUT = %d %s, want 201", status, b)
	}
	var rec v1.SecretView
	if _, b := put(alice(), "API_KEY_ONE", "", "", []byte(secretValue)); json.Unmarshal(b, &rec) != nil || rec.SetBy != env.Tenant.User || rec.Scope != "workspace" {
		t.Errorf("PUT answer = %s, want the record set by %s", b, env.Tenant.User)
	}

	if diff := cmp.Diff([]string{"personal:API_KEY_TWO", "workspace:API_KEY_ONE"}, secretNames(t, alice())); diff != "" {
		t.Errorf("alice's secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"workspace:BOB_KEY"}, secretNames(t, bob())); diff != "" {
		t.Errorf("bob's secrets (-want +got):\n%s", diff)
	}

	bad := []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"lowercase name", request{method: "PUT", path: "/v1/secrets/lower", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"leading underscore", request{method: "PUT", path: "/v1/secrets/_KEY", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"reserved gauntlet name", request{method: "PUT", path: "/v1/secrets/GAUNTLET_TOKEN", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"reserved osmosis name", request{method: "PUT", path: "/v1/secrets/DAYTONA_API_KEY", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"reserved skypilot name", request{method: "PUT", path: "/v1/secrets/SKYPILOT_KEY", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"bad scope", request{method: "PUT", path: "/v1/secrets/OK_NAME?scope=team", body: []byte("x")}, 400, v1.CodeBadRequest},
		{"empty value", request{method: "PUT", path: "/v1/secrets/OK_NAME", body: nil}, 400, v1.CodeBadRequest},
		{"json unknown field", request{method: "PUT", path: "/v1/secrets/OK_NAME", body: []byte(`{"valeu":"x"}`), contentType: "application/json"}, 400, v1.CodeBadRequest},
		{"too large", request{method: "PUT", path: "/v1/secrets/OK_NAME", body: []byte(strings.Repeat("x", v1.MaxSecretValue+1))}, 413, v1.CodeTooLarge},
		{"too large json", request{method: "PUT", path: "/v1/secrets/OK_NAME", body: []byte(`{"value":"` + strings.Repeat("x", v1.MaxSmallBody) + `"}`), contentType: "application/json"}, 413, v1.CodeTooLarge},
		{"delete missing", request{method: "DELETE", path: "/v1/secrets/NOPE"}, 404, v1.CodeNotFound},
		{"delete other tenant's", request{method: "DELETE", path: "/v1/secrets/BOB_KEY"}, 404, v1.CodeNotFound},
		{"delete workspace scope of a personal record", request{method: "DELETE", path: "/v1/secrets/API_KEY_TWO"}, 404, v1.CodeNotFound},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) { wantError(t, alice(), tt.rq, tt.status, tt.code) })
	}
	wantError(t, bob(), request{method: "DELETE", path: "/v1/secrets/API_KEY_TWO?scope=personal"}, 404, v1.CodeNotFound)

	alice().call(t, request{method: "DELETE", path: "/v1/secrets/API_KEY_TWO?scope=personal"}, http.StatusNoContent, nil)
	if diff := cmp.Diff([]string{"workspace:API_KEY_ONE"}, secretNames(t, alice())); diff != "" {
		t.Errorf("alice's secrets after delete (-want +got):\n%s", diff)
	}

	// A record stored before the Osmosis name rule (a leading '_') is
	// listed and can be deleted, though no new one can be set.
	legacy := secret.Ref{Workspace: env.Tenant.Workspace, Scope: secret.Workspace, Name: "_LEGACY_KEY"}
	stored := pipeline.NewSecrets(env.Server.Platform().Secrets(), env.Server.Platform().Records().Workspaces, time.Now)
	if _, _, err := stored.Put(context.Background(), legacy, secret.Value(secretValue), env.Tenant.User); err != nil {
		t.Fatalf("store a legacy-named record: %v", err)
	}
	alice().call(t, request{method: "DELETE", path: "/v1/secrets/_LEGACY_KEY"}, http.StatusNoContent, nil)
	if diff := cmp.Diff([]string{"workspace:API_KEY_ONE"}, secretNames(t, alice())); diff != "" {
		t.Errorf("alice's secrets after deleting the legacy record (-want +got):\n%s", diff)
	}
	wantError(t, alice(), request{method: "DELETE", path: "/v1/secrets/GAUNTLET_X?scope=team"}, 400, v1.CodeBadRequest)
}
