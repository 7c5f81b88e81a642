package v1

import "time"

// MaxSecretValue bounds a secret value.
const MaxSecretValue = 32 << 10

// WorkspaceView is the answer of GET /v1/workspace.
type WorkspaceView struct {
	ID      string      `json:"id"`
	Name    string      `json:"name"`
	User    UserView    `json:"user"`
	Billing BillingView `json:"billing"`
}

// UserView names the caller.
type UserView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// BillingView is a workspace's billing status.
type BillingView struct {
	Status string `json:"status"`
	Plan   string `json:"plan,omitempty"`
	// CanSubmit is false when new runs would get 402 BILLING_REQUIRED;
	// Problem then says what to do.
	CanSubmit bool   `json:"can_submit"`
	Problem   string `json:"problem,omitempty"`
}

// SecretView is the metadata of a secret record; values are never returned.
type SecretView struct {
	Name  string    `json:"name"`
	Scope string    `json:"scope"`
	SetBy string    `json:"set_by"`
	SetAt time.Time `json:"set_at"`
}

// SecretList is the answer of GET /v1/secrets.
type SecretList struct {
	Secrets []SecretView `json:"secrets"`
}

// AdminWorkspaceView is a workspace as a platform operator sees it.
type AdminWorkspaceView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// AdminWorkspaceList is one page of workspaces, oldest first.
type AdminWorkspaceList struct {
	Workspaces []AdminWorkspaceView `json:"workspaces"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

// CreateWorkspaceRequest is the body of POST /v1/admin/workspaces. ID,
// when set, is the workspace id (what users' tokens carry as their
// workspace claim); empty derives it from the Idempotency-Key, else the
// name.
type CreateWorkspaceRequest struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"`
}

// SetBillingRequest is the body of PUT /v1/admin/workspaces/{id}/billing.
// An empty Plan keeps the current plan.
type SetBillingRequest struct {
	Status string `json:"status"`
	Plan   string `json:"plan,omitempty"`
}

// AdminBillingView is a workspace's billing record after a change.
type AdminBillingView struct {
	Workspace string    `json:"workspace"`
	Status    string    `json:"status"`
	Plan      string    `json:"plan,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	CanSubmit bool      `json:"can_submit"`
}

// AddUserRequest is the body of POST /v1/admin/workspaces/{id}/users: the
// user's id (the identity provider's "sub") and, optionally, an email
// shown as the user's name.
type AddUserRequest struct {
	User  string `json:"user"`
	Email string `json:"email,omitempty"`
}

// AdminUserView is a workspace member. Token is set only when the API
// issues its own tokens (`gauntlet local`), only in the answer that minted
// it; it is never stored or shown again.
type AdminUserView struct {
	Workspace string    `json:"workspace"`
	User      string    `json:"user"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Token     string    `json:"token,omitempty"`
}

// SecretValue is the JSON body of PUT /v1/secrets/{name} (the value may
// also be sent as the raw body).
type SecretValue struct {
	Value string `json:"value"`
}
