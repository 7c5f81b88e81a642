package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Platform administration: the /v1/admin routes a platform operator uses to
// provision workspaces, their billing and their users. An operator is a
// caller whose Identity.Admin is set (a JWT whose group claim lists the
// admin group, or a local API token of a records.Admin); everyone else gets
// 403 on these routes. Every admin action is logged with who did what,
// never with a token.

// Bounds of admin inputs.
const (
	maxWorkspaceName = 128
	maxEmail         = 254
)

var (
	// workspaceIDPattern is the shape of a workspace id (as jwtauth accepts
	// it in a token's workspace claim).
	workspaceIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)
	// userIDPattern is the shape of a user id (a token's "sub").
	userIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@|+-]{0,255}$`)
	planPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
)

// adminOnly lets only platform operators through; it runs after
// authenticated.
func (h *Handler) adminOnly(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !identity(r.Context()).Admin {
			return errorf(http.StatusForbidden, v1.CodeForbidden, "%s %s is for platform operators; the caller is not in the admin group", r.Method, r.URL.Path)
		}
		return next(w, r)
	}
}

// logAdmin records an admin action: who (the operator's user and
// workspace), what, and on which workspace.
func (h *workspacesAPI) logAdmin(ctx context.Context, action, ws string, attrs ...any) {
	id := identity(ctx)
	h.log.InfoContext(ctx, "admin action", append([]any{"action", action, "by_user", id.User, "by_workspace", id.Workspace,
		"workspace", ws, "request_id", requestID(ctx)}, attrs...)...)
}

func (h *workspacesAPI) adminCreateWorkspace(w http.ResponseWriter, r *http.Request) error {
	var req v1.CreateWorkspaceRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if err := checkWorkspaceName(name); err != nil {
		return err
	}
	if req.ID != "" && !workspaceIDPattern.MatchString(req.ID) {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "id %q must be 1 to 128 of A-Z, a-z, 0-9, '.', '_', ':', '@', '-', starting with a letter or digit", req.ID)
	}
	key := r.Header.Get("Idempotency-Key")
	if key != "" && !records.ValidIdempotencyKey(key) {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "Idempotency-Key must be 1 to 128 printable ASCII characters without spaces")
	}
	ctx := r.Context()
	id := req.ID
	if id == "" {
		id = workspaceID(identity(ctx).User, key, name)
	}
	ws := records.Workspace{ID: id, Name: name, CreatedAt: h.now().UTC()}
	stored, created, err := h.recs.CreateWorkspace(ctx, ws)
	if err != nil {
		return err
	}
	h.logAdmin(ctx, "workspace.create", stored.ID, "name", stored.Name, "created", created)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, adminWorkspaceView(stored))
}

// workspaceID derives a workspace id from what a retried request repeats:
// the operator's Idempotency-Key, else the name. A retry therefore maps to
// the workspace the first attempt created; nothing random is drawn.
func workspaceID(operator, key, name string) string {
	src := "name\x00" + name
	if key != "" {
		src = "key\x00" + operator + "\x00" + key
	}
	sum := sha256.Sum256([]byte(src))
	return "w-" + hex.EncodeToString(sum[:8])
}

func checkWorkspaceName(name string) error {
	switch {
	case name == "":
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "name is required: send {\"name\": \"…\"}")
	case len(name) > maxWorkspaceName:
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "name is longer than %d bytes", maxWorkspaceName)
	case !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "name must be UTF-8 text without control characters")
	}
	return nil
}

func adminWorkspaceView(w records.Workspace) v1.AdminWorkspaceView {
	return v1.AdminWorkspaceView{ID: w.ID, Name: w.Name, CreatedAt: w.CreatedAt}
}

func (h *workspacesAPI) adminListWorkspaces(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, next, err := h.recs.Workspaces(r.Context(), cursor, limit)
	if err != nil {
		return err
	}
	out := v1.AdminWorkspaceList{Workspaces: make([]v1.AdminWorkspaceView, len(page)), NextCursor: next}
	for i, ws := range page {
		out.Workspaces[i] = adminWorkspaceView(ws)
	}
	return writeJSON(w, http.StatusOK, out)
}

// adminWorkspace returns the workspace the path's {id} names: 400 for a
// malformed id, 404 when there is none.
func (h *workspacesAPI) adminWorkspace(r *http.Request) (records.Workspace, error) {
	id := r.PathValue("id")
	if !workspaceIDPattern.MatchString(id) {
		return records.Workspace{}, errorf(http.StatusBadRequest, v1.CodeBadRequest, "%q is not a workspace id", id)
	}
	ws, err := h.recs.Workspace(r.Context(), id)
	if errors.Is(err, records.ErrNotFound) {
		return records.Workspace{}, notFound("workspace", id)
	}
	return ws, err
}

func (h *workspacesAPI) adminSetBilling(w http.ResponseWriter, r *http.Request) error {
	var req v1.SetBillingRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	status := records.BillingStatus(req.Status)
	switch status {
	case records.BillingActive, records.BillingTrialing, records.BillingPastDue, records.BillingCanceled:
	default:
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "status %q must be one of active, trialing, past_due, canceled", req.Status)
	}
	if req.Plan != "" && !planPattern.MatchString(req.Plan) {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "plan %q must be 1 to 64 of a-z, 0-9, '.', '_', '-', starting with a letter or digit", req.Plan)
	}
	ws, err := h.adminWorkspace(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	b := records.Billing{Status: status, Plan: req.Plan, UpdatedAt: h.now().UTC()}
	if b.Plan == "" {
		old, err := h.recs.Billing(ctx, ws.ID)
		if err != nil {
			return fmt.Errorf("load billing of %s: %w", ws.ID, err)
		}
		b.Plan = old.Plan
	}
	if err := h.recs.PutBilling(ctx, ws.ID, b); err != nil {
		return fmt.Errorf("set billing of %s: %w", ws.ID, err)
	}
	h.logAdmin(ctx, "billing.set", ws.ID, "status", string(b.Status), "plan", b.Plan)
	return writeJSON(w, http.StatusOK, v1.AdminBillingView{Workspace: ws.ID, Status: string(b.Status), Plan: b.Plan,
		UpdatedAt: b.UpdatedAt, CanSubmit: b.Check() == nil})
}

func (h *workspacesAPI) adminAddUser(w http.ResponseWriter, r *http.Request) error {
	var req v1.AddUserRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if !userIDPattern.MatchString(req.User) {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "user %q must be the identity provider's user id (sub): 1 to 256 of A-Z, a-z, 0-9, '.', '_', ':', '@', '|', '+', '-'", req.User)
	}
	if req.Email != "" && !validEmail(req.Email) {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "email %q is not a plain address like name@example.com", req.Email)
	}
	ws, err := h.adminWorkspace(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	status := http.StatusCreated
	if _, err := h.recs.User(ctx, ws.ID, req.User); err == nil {
		status = http.StatusOK
	} else if !errors.Is(err, records.ErrNotFound) {
		return fmt.Errorf("look up user %s of %s: %w", req.User, ws.ID, err)
	}
	u := records.User{ID: req.User, Workspace: ws.ID, Name: first(req.Email, req.User), CreatedAt: h.now().UTC()}
	if err := h.recs.PutUser(ctx, u); err != nil {
		return fmt.Errorf("add user %s to %s: %w", u.ID, ws.ID, err)
	}
	view := v1.AdminUserView{Workspace: ws.ID, User: u.ID, Name: u.Name, CreatedAt: u.CreatedAt}
	if h.mintsTokens {
		if view.Token, err = h.mintToken(ctx, u); err != nil {
			return err
		}
	}
	h.logAdmin(ctx, "user.add", ws.ID, "user", u.ID, "token_issued", view.Token != "")
	return writeJSON(w, status, view)
}

// mintToken issues a new API token for the user and stores only its hash.
// Every call issues another token; earlier ones stay valid.
func (h *workspacesAPI) mintToken(ctx context.Context, u records.User) (string, error) {
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	rec := records.Token{Hash: HashToken(token), Workspace: u.Workspace, User: u.ID, CreatedAt: u.CreatedAt}
	if err := h.recs.PutToken(ctx, rec); err != nil {
		return "", fmt.Errorf("store token of %s in %s: %w", u.ID, u.Workspace, err)
	}
	return token, nil
}

func validEmail(s string) bool {
	if len(s) > maxEmail {
		return false
	}
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Address == s && addr.Name == ""
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
