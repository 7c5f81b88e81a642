package sandbox

import "testing"

func TestECRReference(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		ref                                  string
		account, region, repository, version string
		ok                                   bool
	}{
		{"123456789012.dkr.ecr.us-east-1.amazonaws.com/gauntlet-runner:local", "123456789012", "us-east-1", "gauntlet-runner", "local", true},
		{"123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/agents", "123456789012", "eu-west-1", "team/agents", "latest", true},
		{"123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/runner:v1@" + digest, "123456789012", "cn-north-1", "runner", digest, true},
		{"ghcr.io/acme/runner:v1", "", "", "", "", false},
		{"public.ecr.aws/acme/runner:v1", "", "", "", "", false},
	} {
		account, region, repository, version, ok := ECRReference(tt.ref)
		if account != tt.account || region != tt.region || repository != tt.repository || version != tt.version || ok != tt.ok {
			t.Errorf("ECRReference(%q) = %q %q %q %q %v, want %q %q %q %q %v", tt.ref, account, region, repository, version, ok,
				tt.account, tt.region, tt.repository, tt.version, tt.ok)
		}
	}
}
