package ecrauth

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

type fakeECR struct {
	calls int
	token string
	ttl   time.Duration
	err   error
	now   func() time.Time
}

func (f *fakeECR) GetAuthorizationToken(context.Context, *ecr.GetAuthorizationTokenInput, ...func(*ecr.Options)) (*ecr.GetAuthorizationTokenOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &ecr.GetAuthorizationTokenOutput{AuthorizationData: []types.AuthorizationData{{
		AuthorizationToken: aws.String(base64.StdEncoding.EncodeToString([]byte(f.token))),
		ExpiresAt:          aws.Time(f.now().Add(f.ttl)),
	}}}, nil
}

const host = "111122223333.dkr.ecr.us-east-1.amazonaws.com"

func resolve(t *testing.T, k *Keychain, registry string) (authn.Authenticator, error) {
	t.Helper()
	reg, err := name.NewRegistry(registry)
	if err != nil {
		t.Fatal(err)
	}
	return k.ResolveContext(context.Background(), reg)
}

func TestKeychainScopesAndReusesTheToken(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeECR{token: "AWS:secret-1", ttl: 12 * time.Hour, now: func() time.Time { return now }}
	k := New(f, host)
	k.now = f.now

	a, err := resolve(t, k, host)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := a.Authorization()
	if cfg.Username != "AWS" || cfg.Password != "secret-1" {
		t.Errorf("ECR host credential = %q/%q, want AWS/secret-1", cfg.Username, cfg.Password)
	}
	if a, _ := resolve(t, k, "ghcr.io"); a != authn.Anonymous {
		t.Errorf("another registry got %v, want anonymous (the token is only for ECR)", a)
	}
	if _, err := resolve(t, k, host); err != nil || f.calls != 1 {
		t.Errorf("second resolve: %v, %d token calls; want the token reused", err, f.calls)
	}
	now = now.Add(12*time.Hour - refreshBefore)
	f.token = "AWS:secret-2"
	a, _ = resolve(t, k, host)
	if cfg, _ := a.Authorization(); cfg.Password != "secret-2" || f.calls != 2 {
		t.Errorf("near expiry: password %q after %d calls, want a fresh token", cfg.Password, f.calls)
	}
}

func TestKeychainErrorsNameTheCall(t *testing.T) {
	now := func() time.Time { return time.Unix(0, 0) }
	for _, f := range []*fakeECR{{err: errors.New("AccessDenied"), now: now}, {token: "no-colon", ttl: time.Hour, now: now}} {
		if _, err := resolve(t, New(f, host), host); err == nil || !strings.Contains(err.Error(), "GetAuthorizationToken") {
			t.Errorf("error = %v, want it to name GetAuthorizationToken", err)
		}
	}
}
