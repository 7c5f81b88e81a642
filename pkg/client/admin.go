package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// CreateWorkspace creates a workspace (platform operators only). Its id is
// req.ID when set, else derived from a non-empty idempotencyKey, else from
// the name; either way a retry returns the same workspace.
func (c *Client) CreateWorkspace(ctx context.Context, req v1.CreateWorkspaceRequest, idempotencyKey string) (v1.AdminWorkspaceView, error) {
	var out v1.AdminWorkspaceView
	body, err := jsonBody(req)
	if err != nil {
		return out, err
	}
	rq := request{method: http.MethodPost, path: path("v1", "admin", "workspaces"), body: body, contentType: "application/json", header: http.Header{}}
	if idempotencyKey != "" {
		rq.header.Set("Idempotency-Key", idempotencyKey)
	}
	return out, c.call(ctx, rq, &out)
}

// Workspaces returns one page of every workspace, oldest first (platform
// operators only); limit 0 takes the server's default.
func (c *Client) Workspaces(ctx context.Context, cursor string, limit int) (v1.AdminWorkspaceList, error) {
	q := url.Values{}
	setNonEmpty(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out v1.AdminWorkspaceList
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "admin", "workspaces"), query: q}, &out)
}

// SetBilling sets a workspace's billing status (active, trialing,
// past_due, canceled) and, when plan is not empty, its plan (platform
// operators only).
func (c *Client) SetBilling(ctx context.Context, workspace, status, plan string) (v1.AdminBillingView, error) {
	var out v1.AdminBillingView
	body, err := jsonBody(v1.SetBillingRequest{Status: status, Plan: plan})
	if err != nil {
		return out, err
	}
	return out, c.call(ctx, request{method: http.MethodPut, path: path("v1", "admin", "workspaces", workspace, "billing"),
		body: body, contentType: "application/json"}, &out)
}

// AddUser records user (the identity provider's sub) as a member of the
// workspace (platform operators only). Against `gauntlet local` the answer
// carries a new API token for the user, shown only this once.
func (c *Client) AddUser(ctx context.Context, workspace, user, email string) (v1.AdminUserView, error) {
	var out v1.AdminUserView
	body, err := jsonBody(v1.AddUserRequest{User: user, Email: email})
	if err != nil {
		return out, err
	}
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "admin", "workspaces", workspace, "users"),
		body: body, contentType: "application/json"}, &out)
}
