package kmskeys_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/awstest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys/kmstest"
)

func client(url, accessKey string) *kms.Client {
	return kms.New(kms.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, "secret", ""),
	})
}

// motoKey returns a client of moto's KMS and a new symmetric key there.
func motoKey(t *testing.T) (*kms.Client, string) {
	t.Helper()
	c := kms.New(kms.Options{Region: awstest.Region, BaseEndpoint: aws.String(awstest.Moto(t)), Credentials: awstest.Credentials()})
	key, err := c.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("gauntlet sandbox key test")})
	if err != nil {
		t.Fatalf("create KMS key: %v", err)
	}
	return c, aws.ToString(key.KeyMetadata.Arn)
}

// TestDataKeyRoundTripIsBoundToTheLaunch runs on moto's KMS: a data key
// drawn for one launch opens under that launch's context only.
func TestDataKeyRoundTripIsBoundToTheLaunch(t *testing.T) {
	c, keyARN := motoKey(t)
	ctx := context.Background()
	issuer := kmskeys.New(c, keyARN)
	plain, wrapped, err := issuer.NewDataKey(ctx, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != 32 {
		t.Errorf("data key of %d bytes, want 32 (AES-256)", len(plain))
	}
	opener := kmskeys.New(c, "")
	got, err := opener.OpenDataKey(ctx, wrapped, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain, got); diff != "" {
		t.Errorf("OpenDataKey (-want +got):\n%s", diff)
	}
	if _, err := opener.OpenDataKey(ctx, wrapped, "launch-2"); err == nil || !strings.Contains(err.Error(), "InvalidCiphertext") {
		t.Errorf("OpenDataKey under another launch: err %v, want InvalidCiphertextException", err)
	}
	if _, _, err := kmskeys.New(c, "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000").NewDataKey(ctx, "l"); err == nil || !strings.Contains(err.Error(), "NotFoundException") {
		t.Errorf("NewDataKey with an unknown key: err %v, want NotFoundException", err)
	}
}

// TestRequestsCarryTheLaunchContext pins what the adapter sends (the key,
// AES_256, the launch's encryption context) on the recording fake.
func TestRequestsCarryTheLaunchContext(t *testing.T) {
	srv := kmstest.New(t)
	ctx := context.Background()
	_, wrapped, err := kmskeys.New(client(srv.URL, "DISPATCHER"), kmstest.KeyARN).NewDataKey(ctx, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmskeys.New(client(srv.URL, "TASKROLE"), "").OpenDataKey(ctx, wrapped, "launch-1"); err != nil {
		t.Fatal(err)
	}
	wantContext := map[string]any{"gauntlet:launch": "launch-1"}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	for i, op := range []string{"GenerateDataKey", "Decrypt"} {
		if reqs[i].Operation != op {
			t.Errorf("request %d = %s, want %s", i, reqs[i].Operation, op)
		}
		if diff := cmp.Diff(wantContext, reqs[i].Body["EncryptionContext"]); diff != "" {
			t.Errorf("%s encryption context (-want +got):\n%s", op, diff)
		}
	}
	if reqs[0].Body["KeyId"] != kmstest.KeyARN || reqs[0].Body["KeySpec"] != "AES_256" {
		t.Errorf("GenerateDataKey = %v, want the sandbox key and AES_256", reqs[0].Body)
	}
}

// TestNewDataKeyErrors uses the fake for the refusal: moto enforces no IAM,
// so only the fake can deny an access key an operation.
func TestNewDataKeyErrors(t *testing.T) {
	srv := kmstest.New(t)
	srv.Allowed = func(accessKey, op string) bool { return !(accessKey == "TASKROLE" && op == "GenerateDataKey") }
	tests := []struct {
		name   string
		keys   *kmskeys.Keys
		launch string
		want   string
	}{
		{name: "no key configured", keys: kmskeys.New(client(srv.URL, "DISPATCHER"), ""), launch: "l", want: "GAUNTLET_SANDBOX_KMS_KEY"},
		{name: "no launch", keys: kmskeys.New(client(srv.URL, "DISPATCHER"), kmstest.KeyARN), want: "launch id is empty"},
		{name: "denied", keys: kmskeys.New(client(srv.URL, "TASKROLE"), kmstest.KeyARN), launch: "l", want: "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.keys.NewDataKey(context.Background(), tt.launch)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewDataKey() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
