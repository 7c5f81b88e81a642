// Package secrets is the Secrets Manager adapter of the secret port.
//
// It is the Secrets Manager adapter of the secret port. Each
// record is one secret named <prefix><workspace>/workspace/<NAME> or
// <prefix><workspace>/personal/<owner>/<NAME>, encrypted under the stack's
// customer-managed KMS key. Values are never logged or returned in errors.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// API is the part of the Secrets Manager client the store uses.
type API interface {
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	DeleteSecret(ctx context.Context, in *secretsmanager.DeleteSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.DeleteSecretOutput, error)
}

// Store implements secret.Store.
type Store struct {
	api    API
	prefix string
	kmsKey string
}

var _ secret.Store = (*Store)(nil)

// New returns a store naming secrets under prefix (e.g. "gauntlet/prod/")
// and encrypting new ones with kmsKey (an ARN or alias; empty = AWS managed).
func New(api API, prefix, kmsKey string) *Store {
	return &Store{api: api, prefix: prefix, kmsKey: kmsKey}
}

// Name returns the Secrets Manager name of a record. Workspace and owner ids
// are path-escaped so no id can reach into another's namespace.
func (s *Store) Name(ref secret.Ref) string {
	ws := url.PathEscape(ref.Workspace)
	if ref.Scope == secret.Personal {
		return fmt.Sprintf("%s%s/personal/%s/%s", s.prefix, ws, url.PathEscape(ref.Owner), ref.Name)
	}
	return fmt.Sprintf("%s%s/workspace/%s", s.prefix, ws, ref.Name)
}

// Put sets the value, creating the secret on first use.
func (s *Store) Put(ctx context.Context, ref secret.Ref, value secret.Value) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	name := s.Name(ref)
	_, err := s.api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: &name, SecretString: aws.String(value.Reveal())})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		in := &secretsmanager.CreateSecretInput{
			Name: &name, SecretString: aws.String(value.Reveal()),
			Description: aws.String("gauntlet secret record " + ref.Name),
			Tags: []types.Tag{
				{Key: aws.String("gauntlet:workspace"), Value: aws.String(ref.Workspace)},
				{Key: aws.String("gauntlet:scope"), Value: aws.String(string(ref.Scope))},
			},
		}
		if s.kmsKey != "" {
			in.KmsKeyId = &s.kmsKey
		}
		_, err = s.api.CreateSecret(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("put secret %s: %w", name, err)
	}
	return nil
}

// Get returns the value, or secret.ErrNotFound.
func (s *Store) Get(ctx context.Context, ref secret.Ref) (secret.Value, error) {
	if err := ref.Validate(); err != nil {
		return "", err
	}
	name := s.Name(ref)
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &name})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return "", fmt.Errorf("get secret %s: %w", name, secret.ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("get secret %s: %w", name, err)
	case out.SecretString == nil:
		return "", fmt.Errorf("get secret %s: stored as binary, want a string", name)
	}
	return secret.Value(*out.SecretString), nil
}

// Delete removes the record at once (no recovery window), so the same name
// can be set again immediately; a missing record is not an error.
func (s *Store) Delete(ctx context.Context, ref secret.Ref) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	name := s.Name(ref)
	_, err := s.api.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: &name, ForceDeleteWithoutRecovery: aws.Bool(true)})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}
