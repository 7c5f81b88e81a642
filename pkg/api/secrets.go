package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

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

func (h *Handler) workspace(w http.ResponseWriter, r *http.Request) error {
	id := identity(r.Context())
	ws, err := h.cfg.Records.Workspace(r.Context(), id.Workspace)
	if err != nil {
		return fmt.Errorf("load workspace: %w", err)
	}
	user, err := h.cfg.Records.User(r.Context(), id.Workspace, id.User)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		return fmt.Errorf("load user: %w", err)
	}
	b, err := h.cfg.Records.Billing(r.Context(), id.Workspace)
	if err != nil {
		return fmt.Errorf("load billing: %w", err)
	}
	view := WorkspaceView{ID: ws.ID, Name: ws.Name, User: UserView{ID: id.User, Name: user.Name},
		Billing: BillingView{Status: string(b.Status), Plan: b.Plan, CanSubmit: true}}
	if view.Billing.Status == "" {
		view.Billing.Status = "none"
	}
	if err := b.Check(); err != nil {
		view.Billing.CanSubmit, view.Billing.Problem = false, err.Error()
	}
	return writeJSON(w, http.StatusOK, view)
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

func secretView(rec records.SecretRecord) SecretView {
	return SecretView{Name: rec.Name, Scope: string(rec.Scope), SetBy: rec.SetBy, SetAt: rec.SetAt}
}

func (h *Handler) listSecrets(w http.ResponseWriter, r *http.Request) error {
	id := identity(r.Context())
	recs, err := h.cfg.Records.SecretRecords(r.Context(), id.Workspace, id.User)
	if err != nil {
		return fmt.Errorf("list secret records: %w", err)
	}
	out := SecretList{Secrets: make([]SecretView, len(recs))}
	for i, rec := range recs {
		out.Secrets[i] = secretView(rec)
	}
	slices.SortFunc(out.Secrets, func(a, b SecretView) int {
		return strings.Compare(a.Name+"\x00"+a.Scope, b.Name+"\x00"+b.Scope)
	})
	return writeJSON(w, http.StatusOK, out)
}

// secretRef builds the record reference of a request from its path name
// and ?scope= (default workspace).
func secretRef(r *http.Request) (secret.Ref, error) {
	id := identity(r.Context())
	name := r.PathValue("name")
	if !secret.ValidName(name) {
		return secret.Ref{}, errorf(http.StatusBadRequest, CodeBadRequest,
			"secret name %q must be an environment variable name (^[A-Z_][A-Z0-9_]*$, at most 128 bytes)", name)
	}
	ref := secret.Ref{Workspace: id.Workspace, Scope: secret.Workspace, Name: name}
	switch scope := r.URL.Query().Get("scope"); scope {
	case "", string(secret.Workspace):
	case string(secret.Personal):
		ref.Scope, ref.Owner = secret.Personal, id.User
	default:
		return secret.Ref{}, errorf(http.StatusBadRequest, CodeBadRequest, "scope %q must be workspace or personal", scope)
	}
	return ref, nil
}

// secretBody is the JSON form of a secret value.
type secretBody struct {
	Value string `json:"value"`
}

// putSecret stores a value: the body is the value itself (any content type
// but JSON) or {"value": "…"} as application/json.
func (h *Handler) putSecret(w http.ResponseWriter, r *http.Request) error {
	ref, err := secretRef(r)
	if err != nil {
		return err
	}
	value, err := secretValue(w, r)
	if err != nil {
		return err
	}
	_, err = h.cfg.Records.SecretRecord(r.Context(), ref)
	created := errors.Is(err, records.ErrNotFound)
	if err != nil && !created {
		return fmt.Errorf("look up secret record %s: %w", ref.Name, err)
	}
	if err := h.cfg.Secrets.Put(r.Context(), ref, value); err != nil {
		return fmt.Errorf("store secret %s: %w", ref.Name, err)
	}
	rec := records.SecretRecord{Workspace: ref.Workspace, Scope: ref.Scope, Owner: ref.Owner, Name: ref.Name,
		SetBy: identity(r.Context()).User, SetAt: h.cfg.Now().UTC()}
	if err := h.cfg.Records.PutSecretRecord(r.Context(), rec); err != nil {
		return fmt.Errorf("store secret record %s: %w", ref.Name, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, secretView(rec))
}

func secretValue(w http.ResponseWriter, r *http.Request) (secret.Value, error) {
	if mediaType(r) == "application/json" {
		var body secretBody
		if err := decodeJSON(w, r, &body); err != nil {
			return "", err
		}
		return checkSecretValue(body.Value)
	}
	raw, err := readBody(w, r, MaxSecretValue)
	if err != nil {
		return "", err
	}
	return checkSecretValue(string(raw))
}

func checkSecretValue(v string) (secret.Value, error) {
	switch {
	case v == "":
		return "", errorf(http.StatusBadRequest, CodeBadRequest, "the secret value is empty; send it as the request body")
	case len(v) > MaxSecretValue:
		return "", errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "the secret value is longer than %d bytes", MaxSecretValue)
	}
	return secret.Value(v), nil
}

func (h *Handler) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	ref, err := secretRef(r)
	if err != nil {
		return err
	}
	if _, err := h.cfg.Records.SecretRecord(r.Context(), ref); errors.Is(err, records.ErrNotFound) {
		return notFound(string(ref.Scope)+" secret", ref.Name)
	} else if err != nil {
		return fmt.Errorf("look up secret record %s: %w", ref.Name, err)
	}
	if err := h.cfg.Secrets.Delete(r.Context(), ref); err != nil {
		return fmt.Errorf("delete secret %s: %w", ref.Name, err)
	}
	if err := h.cfg.Records.DeleteSecretRecord(r.Context(), ref); err != nil {
		return fmt.Errorf("delete secret record %s: %w", ref.Name, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
