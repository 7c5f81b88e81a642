// Package kmskeys is the AWS KMS adapter of the sealed data-key ports.
//
// It is the AWS KMS adapter of the sealed package's data-key
// ports: the dispatcher asks KMS for a fresh data key per launch
// (kms:GenerateDataKey on the sandbox key) and the sandbox-runner unwraps it
// (kms:Decrypt), both with the encryption context {"gauntlet:launch":
// <launch id>}. KMS refuses to unwrap a data key under any other context,
// and the sandbox task role's only permission is that Decrypt with the
// context present, so the wrapped key in a launch's task overrides is
// useless to anyone reading them through ecs:DescribeTasks.
package kmskeys

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

// API is the part of the KMS client the adapter uses.
type API interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Keys issues and unwraps launch data keys with one KMS key.
type Keys struct {
	api   API
	keyID string
}

var (
	_ sealed.DataKeySource = (*Keys)(nil)
	_ sealed.DataKeyOpener = (*Keys)(nil)
)

// New returns the adapter. keyID (an ARN, id or alias) is needed to issue
// data keys; unwrapping needs none, since a symmetric ciphertext names its key.
func New(api API, keyID string) *Keys {
	return &Keys{api: api, keyID: keyID}
}

// NewDataKey asks KMS for a 256-bit data key bound to the launch.
func (k *Keys) NewDataKey(ctx context.Context, launchID string) (plaintext, wrapped []byte, err error) {
	if k.keyID == "" {
		return nil, nil, errors.New("kms data key: no KMS key configured (GAUNTLET_SANDBOX_KMS_KEY)")
	}
	if launchID == "" {
		return nil, nil, errors.New("kms data key: launch id is empty")
	}
	out, err := k.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(k.keyID),
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: sealed.EncryptionContext(launchID),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kms generate data key for launch %s: %w", launchID, err)
	}
	if len(out.Plaintext) != sealed.KeySize || len(out.CiphertextBlob) == 0 {
		sealed.Wipe(out.Plaintext)
		return nil, nil, fmt.Errorf("kms generate data key for launch %s: answer without a %d-byte key and its ciphertext", launchID, sealed.KeySize)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// OpenDataKey asks KMS to unwrap a launch's data key; KMS answers only when
// the encryption context is the launch's.
func (k *Keys) OpenDataKey(ctx context.Context, wrapped []byte, launchID string) ([]byte, error) {
	if launchID == "" {
		return nil, errors.New("kms decrypt data key: launch id is empty")
	}
	in := &kms.DecryptInput{CiphertextBlob: wrapped, EncryptionContext: sealed.EncryptionContext(launchID)}
	if k.keyID != "" {
		in.KeyId = aws.String(k.keyID)
	}
	out, err := k.api.Decrypt(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("kms decrypt data key for launch %s: %w", launchID, err)
	}
	if len(out.Plaintext) != sealed.KeySize {
		sealed.Wipe(out.Plaintext)
		return nil, fmt.Errorf("kms decrypt data key for launch %s: want a %d-byte key", launchID, sealed.KeySize)
	}
	return out.Plaintext, nil
}

// FromEnvironment is a DataKeyOpener that builds its KMS client on first use
// from the default AWS configuration (in a Fargate task: the region and the
// task role's credentials from the container credentials endpoint; honours
// AWS_ENDPOINT_URL_KMS). A runner without sealed secrets never calls AWS.
func FromEnvironment() sealed.DataKeyOpener {
	return &lazyOpener{}
}

type lazyOpener struct {
	once sync.Once
	keys *Keys
	err  error
}

func (l *lazyOpener) OpenDataKey(ctx context.Context, wrapped []byte, launchID string) ([]byte, error) {
	l.once.Do(func() {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			l.err = fmt.Errorf("kms: load AWS config: %w", err)
			return
		}
		l.keys = New(kms.NewFromConfig(cfg), "")
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.keys.OpenDataKey(ctx, wrapped, launchID)
}
