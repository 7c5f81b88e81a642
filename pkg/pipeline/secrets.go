package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// SecretValues is the secret store as the secret use cases use it: values
// are written and removed, never read back.
type SecretValues interface {
	Put(ctx context.Context, ref secret.Ref, v secret.Value) error
	Delete(ctx context.Context, ref secret.Ref) error
}

// SecretRecords is the metadata of secret records as the secret use cases
// use it.
type SecretRecords interface {
	SecretRecord(ctx context.Context, ref secret.Ref) (records.SecretRecord, error)
	PutSecretRecord(ctx context.Context, r records.SecretRecord) error
	DeleteSecretRecord(ctx context.Context, ref secret.Ref) error
}

// Secrets stores and removes a workspace's secret values together with
// their metadata records (name, scope, who set it and when), the one place
// that keeps the two in step.
type Secrets struct {
	values SecretValues
	recs   SecretRecords
	now    func() time.Time
}

// NewSecrets returns the secret use cases on a value store and the records;
// now is the clock (nil: time.Now).
func NewSecrets(values SecretValues, recs SecretRecords, now func() time.Time) *Secrets {
	if now == nil {
		now = time.Now
	}
	return &Secrets{values: values, recs: recs, now: now}
}

// Put stores value under ref on behalf of user by, then its record; created
// reports whether no record existed before. A replay stores the same value
// again and refreshes the record.
func (s *Secrets) Put(ctx context.Context, ref secret.Ref, value secret.Value, by string) (rec records.SecretRecord, created bool, err error) {
	_, err = s.recs.SecretRecord(ctx, ref)
	created = errors.Is(err, records.ErrNotFound)
	if err != nil && !created {
		return rec, false, fmt.Errorf("look up secret record %s: %w", ref.Name, err)
	}
	if err := s.values.Put(ctx, ref, value); err != nil {
		return rec, false, fmt.Errorf("store secret %s: %w", ref.Name, err)
	}
	rec = records.SecretRecord{Workspace: ref.Workspace, Scope: ref.Scope, Owner: ref.Owner, Name: ref.Name,
		SetBy: by, SetAt: s.now().UTC()}
	if err := s.recs.PutSecretRecord(ctx, rec); err != nil {
		return rec, false, fmt.Errorf("store secret record %s: %w", ref.Name, err)
	}
	return rec, created, nil
}

// Delete removes the value and the record of ref; it returns an error
// wrapping records.ErrNotFound when there is no record.
func (s *Secrets) Delete(ctx context.Context, ref secret.Ref) error {
	if _, err := s.recs.SecretRecord(ctx, ref); err != nil {
		return fmt.Errorf("look up secret record %s: %w", ref.Name, err)
	}
	if err := s.values.Delete(ctx, ref); err != nil {
		return fmt.Errorf("delete secret %s: %w", ref.Name, err)
	}
	if err := s.recs.DeleteSecretRecord(ctx, ref); err != nil {
		return fmt.Errorf("delete secret record %s: %w", ref.Name, err)
	}
	return nil
}
