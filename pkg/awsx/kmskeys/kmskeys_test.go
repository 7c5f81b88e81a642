package kmskeys_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys/kmstest"
)

func client(url, accessKey string) *kms.Client {
	return kms.New(kms.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, "secret", ""),
	})
}

func TestDataKeyRoundTripIsBoundToTheLaunch(t *testing.T) {
	srv := kmstest.New(t)
	ctx := context.Background()
	issuer := kmskeys.New(client(srv.URL, "DISPATCHER"), kmstest.KeyARN)
	plain, wrapped, err := issuer.NewDataKey(ctx, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	opener := kmskeys.New(client(srv.URL, "TASKROLE"), "")
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
	wantContext := map[string]any{"gauntlet:launch": "launch-1"}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
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
		{name: "unknown key", keys: kmskeys.New(client(srv.URL, "DISPATCHER"), "alias/other"), launch: "l", want: "NotFoundException"},
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
