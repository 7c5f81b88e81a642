package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// oneTaskConfig runs the oracle once on one task: the cheapest submission.
const oneTaskConfig = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_names = ["csv-summary"]

[[agents]]
harness = "oracle"
`

// adminJSON is an admin request with a JSON body: a string is sent as is,
// anything else encoded.
func adminJSON(t *testing.T, method, path string, body any, header map[string]string) request {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case string:
		b = []byte(v)
	default:
		b = jsonBody(t, v)
	}
	return request{method: method, path: path, body: b, contentType: "application/json", header: header}
}

// TestAdminRoutesNeedAnOperator: a workspace's ordinary user gets 403 on
// every admin route, a caller without a token 401.
func TestAdminRoutesNeedAnOperator(t *testing.T) {
	routes := []request{
		adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "sneaky"}, nil),
		adminJSON(t, "GET", "/v1/admin/workspaces", nil, nil),
		adminJSON(t, "PUT", "/v1/admin/workspaces/"+tenantB.Workspace+"/billing", v1.SetBillingRequest{Status: "active"}, nil),
		adminJSON(t, "POST", "/v1/admin/workspaces/"+tenantB.Workspace+"/users", v1.AddUserRequest{User: "mallory"}, nil),
	}
	for _, rq := range routes {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			wantError(t, bob(), rq, http.StatusForbidden, v1.CodeForbidden)
			wantError(t, anon, rq, http.StatusUnauthorized, v1.CodeUnauthorized)
		})
	}
	// Nothing was written: bob's workspace has no user "mallory".
	var list v1.AdminWorkspaceList
	alice().get(t, "/v1/admin/workspaces?limit=500", http.StatusOK, &list)
	for _, ws := range list.Workspaces {
		if ws.Name == "sneaky" {
			t.Errorf("a non-admin created workspace %+v", ws)
		}
	}
}

// TestAdminProvisionsAWorkspace walks the cloud's first-workspace flow on
// `gauntlet local`: the operator creates a workspace, adds its first user
// (who gets a token), and billing decides whether that user may submit.
func TestAdminProvisionsAWorkspace(t *testing.T) {
	key := map[string]string{"Idempotency-Key": "provision-acme-1"}
	var ws v1.AdminWorkspaceView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: " Acme Corp "}, key), http.StatusCreated, &ws)
	if !strings.HasPrefix(ws.ID, "w-") || ws.Name != "Acme Corp" || ws.CreatedAt.IsZero() {
		t.Fatalf("created workspace = %+v, want a w- id, the trimmed name and a creation time", ws)
	}
	var replay v1.AdminWorkspaceView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "Acme Corp"}, key), http.StatusOK, &replay)
	if diff := cmp.Diff(ws, replay); diff != "" {
		t.Errorf("replayed create (-first +replay):\n%s", diff)
	}
	wantError(t, alice(), adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "Other Corp"}, key), http.StatusConflict, v1.CodeConflict)
	// Without a key the id derives from the name; an explicit id wins.
	var byName, sameName, chosen v1.AdminWorkspaceView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "By Name"}, nil), http.StatusCreated, &byName)
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "By Name"}, nil), http.StatusOK, &sameName)
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "By Name", ID: "by-name.ops"}, nil), http.StatusCreated, &chosen)
	if sameName.ID != byName.ID || chosen.ID != "by-name.ops" {
		t.Errorf("by name %s, again %s, chosen %s; want the first two equal and the chosen id kept", byName.ID, sameName.ID, chosen.ID)
	}

	var user v1.AdminUserView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces/"+ws.ID+"/users", v1.AddUserRequest{User: "dana-sub-1", Email: "dana@acme.example"}, nil), http.StatusCreated, &user)
	if user.Workspace != ws.ID || user.User != "dana-sub-1" || user.Name != "dana@acme.example" || !strings.HasPrefix(user.Token, api.TokenPrefix) {
		t.Fatalf("added user = %+v, want dana in %s with a token", user, ws.ID)
	}
	dana := caller{token: user.Token}
	var mine v1.WorkspaceView
	dana.get(t, "/v1/workspace", http.StatusOK, &mine)
	if mine.ID != ws.ID || mine.User.ID != "dana-sub-1" || mine.Billing.Status != "none" || mine.Billing.CanSubmit {
		t.Fatalf("dana's workspace = %+v, want %s without billing", mine, ws.ID)
	}
	wantError(t, dana, adminJSON(t, "GET", "/v1/admin/workspaces", nil, nil), http.StatusForbidden, v1.CodeForbidden)

	readyBenchmark(t, dana, "demo-bench")
	wantError(t, dana, toml("/v1/runs", oneTaskConfig), http.StatusPaymentRequired, v1.CodeBillingRequired)

	var billing v1.AdminBillingView
	alice().call(t, adminJSON(t, "PUT", "/v1/admin/workspaces/"+ws.ID+"/billing", v1.SetBillingRequest{Status: "past_due", Plan: "team"}, nil), http.StatusOK, &billing)
	if billing.Status != "past_due" || billing.Plan != "team" || billing.CanSubmit {
		t.Fatalf("billing past_due = %+v", billing)
	}
	if e := wantError(t, dana, toml("/v1/runs", oneTaskConfig), http.StatusPaymentRequired, v1.CodeBillingRequired); !strings.Contains(e.Message, "past_due") {
		t.Errorf("402 message %q does not name the status", e.Message)
	}

	alice().call(t, adminJSON(t, "PUT", "/v1/admin/workspaces/"+ws.ID+"/billing", v1.SetBillingRequest{Status: "active"}, nil), http.StatusOK, &billing)
	if billing.Status != "active" || billing.Plan != "team" || !billing.CanSubmit {
		t.Fatalf("billing active without a plan = %+v, want the plan kept", billing)
	}
	var created v1.CreatedRun
	dana.call(t, toml("/v1/runs", oneTaskConfig), http.StatusCreated, &created)
	if d := finishedRun(t, dana, created.ID); d.Status != "finished" {
		t.Errorf("dana's run ended %s, want finished", d.Status)
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + created.ID}, http.StatusNotFound, v1.CodeNotFound)

	// Adding the same user again keeps one membership and issues another token.
	var again v1.AdminUserView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces/"+ws.ID+"/users", v1.AddUserRequest{User: "dana-sub-1"}, nil), http.StatusOK, &again)
	if again.Token == "" || again.Token == user.Token {
		t.Errorf("second add issued token %q, want a new one", again.Token)
	}
	dana.get(t, "/v1/workspace", http.StatusOK, &mine)

	logs := env.Logs()
	for _, want := range []string{"action=workspace.create", "action=billing.set", "action=user.add", "by_user=" + env.Tenant.User, "workspace=" + ws.ID} {
		if !strings.Contains(logs, want) {
			t.Errorf("server log lacks %q", want)
		}
	}
	for _, token := range []string{user.Token, again.Token} {
		if strings.Contains(logs, token) {
			t.Error("an issued API token appeared in the server log")
		}
	}
}

func TestAdminRejectsBadInput(t *testing.T) {
	var ws v1.AdminWorkspaceView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "input-checks"}, nil), http.StatusCreated, &ws)
	billing := "/v1/admin/workspaces/" + ws.ID + "/billing"
	users := "/v1/admin/workspaces/" + ws.ID + "/users"
	tests := []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"empty name", adminJSON(t, "POST", "/v1/admin/workspaces", `{"name": "  "}`, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"long name", adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: strings.Repeat("n", 129)}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"control character", adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "a\nb"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"unknown field", adminJSON(t, "POST", "/v1/admin/workspaces", `{"name": "x", "owner": "me"}`, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"bad id", adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "x", ID: "a#b"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"id of another workspace", adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "x", ID: ws.ID}, nil), http.StatusConflict, v1.CodeConflict},
		{"bad idempotency key", adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "x"}, map[string]string{"Idempotency-Key": "has space"}), http.StatusBadRequest, v1.CodeBadRequest},
		{"huge body", adminJSON(t, "POST", "/v1/admin/workspaces", `{"name": "`+strings.Repeat("x", v1.MaxSmallBody)+`"}`, nil), http.StatusRequestEntityTooLarge, v1.CodeTooLarge},
		{"bad status", adminJSON(t, "PUT", billing, v1.SetBillingRequest{Status: "free"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"bad plan", adminJSON(t, "PUT", billing, v1.SetBillingRequest{Status: "active", Plan: "Team Plan"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"unknown workspace", adminJSON(t, "PUT", "/v1/admin/workspaces/w-0000000000000000/billing", v1.SetBillingRequest{Status: "active"}, nil), http.StatusNotFound, v1.CodeNotFound},
		{"malformed workspace id", adminJSON(t, "PUT", "/v1/admin/workspaces/w%23x/billing", v1.SetBillingRequest{Status: "active"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"bad user id", adminJSON(t, "POST", users, v1.AddUserRequest{User: "a b"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"bad email", adminJSON(t, "POST", users, v1.AddUserRequest{User: "u1", Email: "Dana <dana@x.example>"}, nil), http.StatusBadRequest, v1.CodeBadRequest},
		{"user of an unknown workspace", adminJSON(t, "POST", "/v1/admin/workspaces/w-0000000000000000/users", v1.AddUserRequest{User: "u1"}, nil), http.StatusNotFound, v1.CodeNotFound},
		{"bad limit", adminJSON(t, "GET", "/v1/admin/workspaces?limit=0", nil, nil), http.StatusBadRequest, v1.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, alice(), tt.rq, tt.status, tt.code)
		})
	}
	var mine v1.WorkspaceView
	alice().get(t, "/v1/workspace", http.StatusOK, &mine)
	if mine.Billing.Status != "active" {
		t.Errorf("alice's billing = %+v after rejected admin calls, want it untouched", mine.Billing)
	}
}

// TestAdminListPaginates: the list pages through every workspace, oldest
// first, the bootstrap workspace included, without repeats.
func TestAdminListPaginates(t *testing.T) {
	var made []string
	for _, name := range []string{"page-a", "page-b", "page-c", "page-d", "page-e"} {
		var ws v1.AdminWorkspaceView
		alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: name}, nil), http.StatusCreated, &ws)
		made = append(made, ws.ID)
	}
	var seen []string
	cursor, pages := "", 0
	for {
		var page v1.AdminWorkspaceList
		alice().get(t, "/v1/admin/workspaces?limit=2&cursor="+url.QueryEscape(cursor), http.StatusOK, &page)
		pages++
		if len(page.Workspaces) > 2 || pages > 100 {
			t.Fatalf("page %d has %d workspaces, want at most 2", pages, len(page.Workspaces))
		}
		for _, ws := range page.Workspaces {
			seen = append(seen, ws.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if pages < 4 {
		t.Errorf("listed in %d pages, want at least 4 of 2", pages)
	}
	sorted := slices.Clone(seen)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(seen) {
		t.Errorf("workspaces repeat across pages: %v", seen)
	}
	if !slices.Contains(seen, env.Tenant.Workspace) {
		t.Errorf("list %v lacks the bootstrap workspace %s", seen, env.Tenant.Workspace)
	}
	var order []string
	for _, id := range seen {
		if slices.Contains(made, id) {
			order = append(order, id)
		}
	}
	if diff := cmp.Diff(made, order); diff != "" {
		t.Errorf("created workspaces in list order (-created +listed):\n%s", diff)
	}
}
