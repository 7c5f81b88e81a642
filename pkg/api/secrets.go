package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func (h *workspacesAPI) workspace(w http.ResponseWriter, r *http.Request) error {
	id := identity(r.Context())
	ws, err := h.recs.Workspace(r.Context(), id.Workspace)
	if err != nil {
		return fmt.Errorf("load workspace: %w", err)
	}
	user, err := h.recs.User(r.Context(), id.Workspace, id.User)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		return fmt.Errorf("load user: %w", err)
	}
	b, err := h.recs.Billing(r.Context(), id.Workspace)
	if err != nil {
		return fmt.Errorf("load billing: %w", err)
	}
	view := v1.WorkspaceView{ID: ws.ID, Name: ws.Name, User: v1.UserView{ID: id.User, Name: user.Name},
		Billing: v1.BillingView{Status: string(b.Status), Plan: b.Plan, CanSubmit: true}}
	if view.Billing.Status == "" {
		view.Billing.Status = "none"
	}
	if err := b.Check(); err != nil {
		view.Billing.CanSubmit, view.Billing.Problem = false, err.Error()
	}
	return writeJSON(w, http.StatusOK, view)
}

func secretView(rec records.SecretRecord) v1.SecretView {
	return v1.SecretView{Name: rec.Name, Scope: string(rec.Scope), SetBy: rec.SetBy, SetAt: rec.SetAt}
}

func (h *workspacesAPI) listSecrets(w http.ResponseWriter, r *http.Request) error {
	id := identity(r.Context())
	recs, err := h.recs.SecretRecords(r.Context(), id.Workspace, id.User)
	if err != nil {
		return fmt.Errorf("list secret records: %w", err)
	}
	out := v1.SecretList{Secrets: make([]v1.SecretView, len(recs))}
	for i, rec := range recs {
		out.Secrets[i] = secretView(rec)
	}
	slices.SortFunc(out.Secrets, func(a, b v1.SecretView) int {
		return strings.Compare(a.Name+"\x00"+a.Scope, b.Name+"\x00"+b.Scope)
	})
	return writeJSON(w, http.StatusOK, out)
}

// secretRef builds the record reference of a request from its path name
// and ?scope= (default workspace).
func secretRef(r *http.Request) (secret.Ref, error) {
	return secretRefOf(r, true)
}

// existingSecretRef is secretRef for a record that may have been stored
// under an earlier, looser name rule (deleting it must stay possible).
func existingSecretRef(r *http.Request) (secret.Ref, error) {
	return secretRefOf(r, false)
}

func secretRefOf(r *http.Request, writing bool) (secret.Ref, error) {
	id := identity(r.Context())
	name := r.PathValue("name")
	if !writing && secret.ValidStoredName(name) {
		return scopedRef(r, id, name)
	}
	if err := secret.CheckName(name); err != nil {
		return secret.Ref{}, errorf(http.StatusBadRequest, v1.CodeBadRequest, "%s", err.Error())
	}
	return scopedRef(r, id, name)
}

// scopedRef is the reference to name in the request's ?scope= (default
// workspace).
func scopedRef(r *http.Request, id Identity, name string) (secret.Ref, error) {
	ref := secret.Ref{Workspace: id.Workspace, Scope: secret.Workspace, Name: name}
	switch scope := r.URL.Query().Get("scope"); scope {
	case "", string(secret.Workspace):
	case string(secret.Personal):
		ref.Scope, ref.Owner = secret.Personal, id.User
	default:
		return secret.Ref{}, errorf(http.StatusBadRequest, v1.CodeBadRequest, "scope %q must be workspace or personal", scope)
	}
	return ref, nil
}

// putSecret stores a value: the body is the value itself (any content type
// but JSON) or {"value": "…"} as application/json.
func (h *workspacesAPI) putSecret(w http.ResponseWriter, r *http.Request) error {
	ref, err := secretRef(r)
	if err != nil {
		return err
	}
	value, err := secretValue(w, r)
	if err != nil {
		return err
	}
	rec, created, err := h.secrets.Put(r.Context(), ref, value, identity(r.Context()).User)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, secretView(rec))
}

func secretValue(w http.ResponseWriter, r *http.Request) (secret.Value, error) {
	if mediaType(r) == "application/json" {
		var body v1.SecretValue
		if err := decodeJSON(w, r, &body); err != nil {
			return "", err
		}
		return checkSecretValue(body.Value)
	}
	raw, err := readBody(w, r, v1.MaxSecretValue)
	if err != nil {
		return "", err
	}
	return checkSecretValue(string(raw))
}

func checkSecretValue(v string) (secret.Value, error) {
	switch {
	case v == "":
		return "", errorf(http.StatusBadRequest, v1.CodeBadRequest, "the secret value is empty; send it as the request body")
	case len(v) > v1.MaxSecretValue:
		return "", errorf(http.StatusRequestEntityTooLarge, v1.CodeTooLarge, "the secret value is longer than %d bytes", v1.MaxSecretValue)
	case strings.ContainsRune(v, 0):
		// Secrets reach sandboxes as environment variables, which cannot
		// hold a NUL: every attempt given this one would fail in execve.
		return "", errorf(http.StatusBadRequest, v1.CodeBadRequest, "the secret value contains a NUL character (U+0000), which an environment variable cannot carry; any other byte is allowed")
	}
	return secret.Value(v), nil
}

func (h *workspacesAPI) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	ref, err := existingSecretRef(r)
	if err != nil {
		return err
	}
	if err := h.secrets.Delete(r.Context(), ref); errors.Is(err, records.ErrNotFound) {
		return notFound(string(ref.Scope)+" secret", ref.Name)
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
