package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func wsPK(ws string) string { return "WS#" + ws }

func jsonUnmarshal(data []byte, out any) error { return json.Unmarshal(data, out) }

// Workspace is a tenant.
type Workspace struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// PutWorkspace creates or replaces the workspace.
func (s *Workspaces) PutWorkspace(ctx context.Context, w Workspace) error {
	return s.putJSON(ctx, wsPK(w.ID), "WS", w)
}

// Workspace returns the workspace.
func (s *Workspaces) Workspace(ctx context.Context, id string) (Workspace, error) {
	var w Workspace
	return w, s.getJSON(ctx, wsPK(id), "WS", &w)
}

// BillingStatus is the state of a workspace's billing account.
type BillingStatus string

// Billing statuses. Only active and trialing accept new runs.
const (
	BillingActive   BillingStatus = "active"
	BillingTrialing BillingStatus = "trialing"
	BillingPastDue  BillingStatus = "past_due"
	BillingCanceled BillingStatus = "canceled"
)

// Billing is a workspace's billing record.
type Billing struct {
	Status BillingStatus `json:"status"`
	// Plan names the plan ("local" for the embedded platform).
	Plan      string    `json:"plan,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ErrBillingRequired reports a workspace that may not submit runs: it has no
// billing record or its billing is not active.
var ErrBillingRequired = errors.New("billing required")

// Check returns nil when the billing accepts new runs, else an error wrapping
// ErrBillingRequired that says what to do.
func (b Billing) Check() error {
	switch b.Status {
	case BillingActive, BillingTrialing:
		return nil
	case "":
		return fmt.Errorf("%w: the workspace has no billing account; set one up before submitting runs", ErrBillingRequired)
	}
	return fmt.Errorf("%w: billing status is %q; update the payment method before submitting runs", ErrBillingRequired, b.Status)
}

// PutBilling creates or replaces the workspace's billing record.
func (s *Workspaces) PutBilling(ctx context.Context, ws string, b Billing) error {
	return s.putJSON(ctx, wsPK(ws), "BILLING", b)
}

// Billing returns the workspace's billing record; a workspace without one
// gets a zero Billing (whose Check fails).
func (s *Workspaces) Billing(ctx context.Context, ws string) (Billing, error) {
	var b Billing
	err := s.getJSON(ctx, wsPK(ws), "BILLING", &b)
	if isNotFound(err) {
		return Billing{}, nil
	}
	return b, err
}

// User is a member of a workspace.
type User struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// PutUser creates or replaces the user.
func (s *Workspaces) PutUser(ctx context.Context, u User) error {
	return s.putJSON(ctx, wsPK(u.Workspace), "USER#"+u.ID, u)
}

// User returns the workspace's user.
func (s *Workspaces) User(ctx context.Context, ws, id string) (User, error) {
	var u User
	return u, s.getJSON(ctx, wsPK(ws), "USER#"+id, &u)
}

// Token is an API token record, stored under the SHA-256 of the token (the
// token itself is never stored).
type Token struct {
	Hash      string    `json:"hash"` // hex SHA-256 of the bearer token
	Workspace string    `json:"workspace"`
	User      string    `json:"user"`
	CreatedAt time.Time `json:"created_at"`
}

// PutToken stores the token record.
func (s *Workspaces) PutToken(ctx context.Context, t Token) error {
	return s.putJSON(ctx, "TOKEN#"+t.Hash, "TOKEN", t)
}

// TokenByHash returns the token record whose hash is hash.
func (s *Workspaces) TokenByHash(ctx context.Context, hash string) (Token, error) {
	var t Token
	return t, s.getJSON(ctx, "TOKEN#"+hash, "TOKEN", &t)
}

// SecretRecord is the metadata of a secret record; its value lives only in
// the secret store.
type SecretRecord struct {
	Workspace string       `json:"workspace"`
	Scope     secret.Scope `json:"scope"`
	Owner     string       `json:"owner,omitempty"` // user id, personal scope only
	Name      string       `json:"name"`
	SetBy     string       `json:"set_by"`
	SetAt     time.Time    `json:"set_at"`
}

// Ref returns the secret store reference of the record.
func (r SecretRecord) Ref() secret.Ref {
	return secret.Ref{Workspace: r.Workspace, Scope: r.Scope, Owner: r.Owner, Name: r.Name}
}

func secretSK(ref secret.Ref) string {
	if ref.Scope == secret.Personal {
		return "SECRET#personal#" + ref.Owner + "#" + ref.Name
	}
	return "SECRET#workspace#" + ref.Name
}

// PutSecretRecord creates or replaces the record's metadata.
func (s *Workspaces) PutSecretRecord(ctx context.Context, r SecretRecord) error {
	if err := r.Ref().Validate(); err != nil {
		return err
	}
	return s.putJSON(ctx, wsPK(r.Workspace), secretSK(r.Ref()), r)
}

// SecretRecord returns the metadata of one record.
func (s *Workspaces) SecretRecord(ctx context.Context, ref secret.Ref) (SecretRecord, error) {
	var r SecretRecord
	return r, s.getJSON(ctx, wsPK(ref.Workspace), secretSK(ref), &r)
}

// DeleteSecretRecord removes the record's metadata; a missing one is no error.
func (s *Workspaces) DeleteSecretRecord(ctx context.Context, ref secret.Ref) error {
	if err := s.tbl.Delete(ctx, wsPK(ref.Workspace), secretSK(ref), store.Cond{}); err != nil {
		return fmt.Errorf("delete secret record %s: %w", ref.Name, err)
	}
	return nil
}

// SecretRecords lists the workspace's records visible to user: every
// workspace record and the user's own personal ones.
func (s *Workspaces) SecretRecords(ctx context.Context, ws, user string) ([]SecretRecord, error) {
	c := codec[SecretRecord]{name: "secret record"}
	shared, err := queryAll(ctx, s.tbl, c, store.Query{PK: wsPK(ws), Prefix: "SECRET#workspace#"})
	if err != nil {
		return nil, err
	}
	if user == "" {
		return shared, nil
	}
	own, err := queryAll(ctx, s.tbl, c, store.Query{PK: wsPK(ws), Prefix: "SECRET#personal#" + user + "#"})
	if err != nil {
		return nil, err
	}
	return append(shared, own...), nil
}

// ResolveSecret finds the record a run submitted by user uses for name: the
// user's personal record wins over the workspace one. It returns ErrNotFound
// when neither exists.
func (s *Workspaces) ResolveSecret(ctx context.Context, ws, user, name string) (secret.Ref, error) {
	refs := []secret.Ref{{Workspace: ws, Scope: secret.Workspace, Name: name}}
	if user != "" {
		refs = append([]secret.Ref{{Workspace: ws, Scope: secret.Personal, Owner: user, Name: name}}, refs...)
	}
	for _, ref := range refs {
		_, err := s.tbl.Get(ctx, wsPK(ws), secretSK(ref))
		if err == nil {
			return ref, nil
		}
		if !isNotFound(err) {
			return secret.Ref{}, fmt.Errorf("look up secret record %s: %w", name, err)
		}
	}
	return secret.Ref{}, fmt.Errorf("secret record %s: %w", name, ErrNotFound)
}

// Idempotency maps a client's Idempotency-Key to the run it created.
type Idempotency struct {
	Key           string    `json:"key"`
	RunID         string    `json:"run_id"`
	RequestDigest string    `json:"request_digest"`
	CreatedAt     time.Time `json:"created_at"`
}

// IdempotencyRetention is how long an Idempotency-Key is remembered.
const IdempotencyRetention = 7 * 24 * time.Hour

// ValidIdempotencyKey reports whether k can name an idempotency record (a
// run submission's or a workspace creation's Idempotency-Key): 1 to 128
// printable ASCII characters without spaces, as it becomes part of a sort
// key.
func ValidIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 128 {
		return false
	}
	for _, c := range k {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// CreateIdempotencyOp records the key (it must not exist yet).
func CreateIdempotencyOp(ws string, i Idempotency) (store.Op, error) {
	data, err := encode(i)
	if err != nil {
		return store.Op{}, err
	}
	it := store.Item{PK: wsPK(ws), SK: "IDEM#" + i.Key, Data: data, ExpiresAt: i.CreatedAt.Add(IdempotencyRetention).Unix()}
	return store.Op{Kind: store.OpPut, Item: it, Cond: store.Cond{Kind: store.IfNotExists}}, nil
}

// Idempotency returns the record of an Idempotency-Key.
func (s *Workspaces) Idempotency(ctx context.Context, ws, key string) (Idempotency, error) {
	var i Idempotency
	return i, s.getJSON(ctx, wsPK(ws), "IDEM#"+key, &i)
}
