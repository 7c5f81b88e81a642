package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/awstest"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/secrets"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/secret/secrettest"
)

// newStore returns a store on moto's Secrets Manager (the emulator of
// awstest.Moto), under a prefix of its own and a KMS key created in moto.
func newStore(t *testing.T) (*secrets.Store, *secretsmanager.Client, string) {
	t.Helper()
	endpoint := awstest.Moto(t)
	ctx := context.Background()
	keys := kms.New(kms.Options{Region: awstest.Region, BaseEndpoint: aws.String(endpoint), Credentials: awstest.Credentials()})
	key, err := keys.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("gauntlet secrets test")})
	if err != nil {
		t.Fatalf("create KMS key: %v", err)
	}
	client := secretsmanager.New(secretsmanager.Options{
		Region: awstest.Region, BaseEndpoint: aws.String(endpoint), Credentials: awstest.Credentials(),
	})
	prefix := "gauntlet/" + awstest.Name("test") + "/"
	return secrets.New(client, prefix, aws.ToString(key.KeyMetadata.Arn)), client, aws.ToString(key.KeyMetadata.Arn)
}

func TestPutGetDeleteScopes(t *testing.T) {
	s, client, keyARN := newStore(t)
	ctx := context.Background()
	ws := secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "OPENAI_API_KEY"}
	mine := secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "alice", Name: "OPENAI_API_KEY"}
	theirs := secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "bob", Name: "OPENAI_API_KEY"}
	other := secret.Ref{Workspace: "ws2", Scope: secret.Workspace, Name: "OPENAI_API_KEY"}

	if err := s.Put(ctx, ws, "v-workspace"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, mine, "v-alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ws, "v-workspace-2"); err != nil { // overwrite goes through PutSecretValue
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  secret.Ref
		want secret.Value
		err  error
	}{
		{ws, "v-workspace-2", nil},
		{mine, "v-alice", nil},
		{theirs, "", secret.ErrNotFound},
		{other, "", secret.ErrNotFound},
	} {
		got, err := s.Get(ctx, tt.ref)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("Get(%+v) = %q, %v; want %q, %v", tt.ref, got.Reveal(), err, tt.want.Reveal(), tt.err)
		}
	}
	if got, want := s.Name(mine), "/ws1/personal/alice/OPENAI_API_KEY"; !strings.HasPrefix(got, "gauntlet/") || !strings.HasSuffix(got, want) {
		t.Errorf("Name = %q, want gauntlet/<prefix>%s", got, want)
	}
	desc, err := client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(s.Name(ws))})
	if err != nil || aws.ToString(desc.KmsKeyId) != keyARN {
		t.Errorf("DescribeSecret(%s) = %v, %v; want the secret under the stack's KMS key %s", s.Name(ws), desc, err, keyARN)
	}
	if err := s.Delete(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ws); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	if _, err := s.Get(ctx, ws); !errors.Is(err, secret.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	// Deleted without a recovery window: the name is free at once.
	if _, err := client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(s.Name(ws))}); err == nil {
		t.Errorf("DescribeSecret after Delete found the secret: want it deleted without recovery")
	}
	if err := s.Put(ctx, ws, "v-again"); err != nil {
		t.Errorf("Put after Delete = %v, want the name reusable", err)
	}
}

func TestValuesNeverInErrorsOrLogs(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	bad := secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "lower-case"}
	err := s.Put(ctx, bad, "sk-top-secret")
	if err == nil || strings.Contains(err.Error(), "sk-top-secret") {
		t.Fatalf("Put with a bad name = %v: want an error without the value", err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("put", "value", secret.Value("sk-top-secret"))
	if strings.Contains(buf.String(), "sk-top-secret") {
		t.Fatalf("log line %s shows the value", buf.String())
	}
}

// TestContract runs the secret-store contract suite the local adapter also
// passes, against moto's Secrets Manager.
func TestContract(t *testing.T) {
	secrettest.Run(t, func(t *testing.T) secret.Store {
		s, _, _ := newStore(t)
		return s
	})
}
