package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func lookupFrom(m map[string]any) Lookup {
	return func(key string) any { return m[key] }
}

func TestLoad(t *testing.T) {
	withDefaults := func(edit func(*Config)) Config {
		c := Defaults()
		edit(&c)
		return c
	}
	tests := []struct {
		name    string
		context map[string]any
		want    Config
		wantErr string
	}{
		{name: "empty context gives defaults", context: nil, want: Defaults()},
		{
			name: "cli strings are converted",
			context: map[string]any{
				KeyStage: "prod", KeyNATGateways: "2", KeyReservedConcurrency: "false",
				KeyJWTIssuer: "https://idp.example.com/", KeyJWTAudience: "gauntlet",
			},
			want: withDefaults(func(c *Config) {
				c.Stage, c.NATGateways, c.ReservedConcurrency = "prod", 2, false
				c.JWTIssuer, c.JWTAudience = "https://idp.example.com/", "gauntlet"
			}),
		},
		{
			name:    "cdk.json numbers and booleans are accepted",
			context: map[string]any{KeyLogRetentionDays: float64(90), KeyReservedConcurrency: false, KeyMaxSandboxes: float64(8)},
			want: withDefaults(func(c *Config) {
				c.LogRetentionDays, c.ReservedConcurrency, c.MaxSandboxes = 90, false, 8
			}),
		},
		{name: "bad stage", context: map[string]any{KeyStage: "Prod_1"}, wantErr: `context "stage"`},
		{name: "not an integer", context: map[string]any{KeyNATGateways: "one"}, wantErr: `context "natGateways": "one" is not an integer`},
		{name: "no nat gateway", context: map[string]any{KeyNATGateways: 0}, wantErr: `context "natGateways"`},
		{name: "issuer without audience", context: map[string]any{KeyJWTIssuer: "https://idp.example.com/"}, wantErr: `context "jwtIssuer": and jwtAudience must be set together`},
		{name: "plain http issuer", context: map[string]any{KeyJWTIssuer: "http://idp", KeyJWTAudience: "a"}, wantErr: `must be an https:// URL`},
		{name: "retention not offered by cloudwatch", context: map[string]any{KeyLogRetentionDays: 31}, wantErr: `context "logRetentionDays"`},
		{name: "bad schedule", context: map[string]any{KeySyncSchedule: "hourly"}, wantErr: `context "syncSchedule"`},
		{name: "dispatcher concurrency below sqs minimum", context: map[string]any{KeyDispatcherConcurrency: 1}, wantErr: `context "dispatcherConcurrency"`},
		{name: "unknown log level", context: map[string]any{KeyLogLevel: "trace"}, wantErr: `context "logLevel"`},
		{name: "unsupported type", context: map[string]any{KeyStage: []any{"a"}}, wantErr: `context "stage": unsupported value`},
		{
			name:    "a default image pinned by digest",
			context: map[string]any{KeyDefaultImage: "ghcr.io/org/env@sha256:" + strings.Repeat("ab", 32)},
			want:    withDefaults(func(c *Config) { c.DefaultImage = "ghcr.io/org/env@sha256:" + strings.Repeat("ab", 32) }),
		},
		{name: "default image not a reference", context: map[string]any{KeyDefaultImage: "Python 3"}, wantErr: `context "defaultImage": must be an image reference`},
		{name: "default image with a short digest", context: map[string]any{KeyDefaultImage: "python@sha256:abc"}, wantErr: `context "defaultImage"`},
		{name: "empty default image", context: map[string]any{KeyDefaultImage: ""}, wantErr: `context "defaultImage"`},
		{name: "not a boolean", context: map[string]any{KeyReservedConcurrency: "maybe"}, wantErr: `"maybe" is not a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(lookupFrom(tt.context))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load(%v) error = %v, want it to contain %q", tt.context, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%v) error = %v", tt.context, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load(%v) mismatch (-want +got):\n%s", tt.context, diff)
			}
		})
	}
}

// TestCDKJSONMatchesDefaults keeps the context defaults in cdk.json (what the
// CLI passes) equal to Defaults (what `go run ./infra` uses without cdk.json).
func TestCDKJSONMatchesDefaults(t *testing.T) {
	ctx, err := ReadCDKJSON("../../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(lookupFrom(ctx))
	if err != nil {
		t.Fatalf("Load(cdk.json context) error = %v", err)
	}
	if diff := cmp.Diff(Defaults(), got); diff != "" {
		t.Errorf("cdk.json context differs from Defaults (-defaults +cdk.json):\n%s", diff)
	}
	for _, key := range []string{KeyStage, KeyLambdaAssets, KeyNATGateways, KeySyncSchedule, KeyWatchdogSchedule,
		KeyJWTIssuer, KeyJWTAudience, KeyConsoleOrigin, KeyConsoleDir, KeyLogRetentionDays, KeyThrottleRate,
		KeyThrottleBurst, KeyMaxSandboxes, KeyDispatcherConcurrency, KeyReservedConcurrency, KeyLogLevel, KeyRegistry, KeyPackageRegistry, KeyPackageRegistryKey, KeyDefaultImage,
		KeyModelGatewayConfig, KeyHostedKeySecretARN, KeyRunnerImage, KeyAgentsImage, KeyRestrictDefaultSG, KeyConsoleHosting} {
		if _, ok := ctx[key]; !ok {
			t.Errorf("cdk.json context lacks %q; document every key there", key)
		}
	}
}

func TestReadCDKJSONErrors(t *testing.T) {
	if _, err := ReadCDKJSON(t.TempDir() + "/missing.json"); err == nil {
		t.Error("ReadCDKJSON(missing) error = nil, want an error")
	}
}

func TestDefaultImagePinned(t *testing.T) {
	c := Defaults()
	if c.DefaultImagePinned() {
		t.Errorf("the default %s counts as pinned", c.DefaultImage)
	}
	c.DefaultImage = "docker.io/library/python@sha256:" + strings.Repeat("0f", 32)
	if !c.DefaultImagePinned() {
		t.Errorf("%s does not count as pinned", c.DefaultImage)
	}
}

// TestLoadModelGatewayConfig: the operator's gateway config is read from its
// file at synth and checked as the cloud uses it; a bad one fails the synth
// naming the setting and the config's field.
func TestLoadModelGatewayConfig(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gauntlet/hosted-key-AbCdEf"
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const hosted = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"
	const providers = "[providers.openai]\nbase_urls = { openai-responses = \"https://llm.example.com/openai/v1\" }\nprices = \"openai\"\n"
	hostedFile, providersFile := file("hosted.toml", hosted), file("providers.toml", providers)

	got, err := Load(lookupFrom(map[string]any{KeyModelGatewayConfig: hostedFile, KeyHostedKeySecretARN: arn}))
	if err != nil {
		t.Fatal(err)
	}
	if got.ModelGatewayConfig != hosted || got.ModelGatewayConfigFile != hostedFile || got.HostedKeySecretARN != arn {
		t.Errorf("Load = config %q from %q, secret %q; want the file's content and the ARN", got.ModelGatewayConfig, got.ModelGatewayConfigFile, got.HostedKeySecretARN)
	}
	if got, err := Load(lookupFrom(map[string]any{KeyModelGatewayConfig: providersFile})); err != nil || got.ModelGatewayConfig != providers {
		t.Errorf("Load of a provider table = %q, %v; want it, no secret needed", got.ModelGatewayConfig, err)
	}
	tests := []struct {
		name    string
		context map[string]any
		wantErr string
	}{
		{"missing file", map[string]any{KeyModelGatewayConfig: filepath.Join(dir, "absent.toml")}, `context "modelGatewayConfig": open`},
		{"bad field", map[string]any{KeyModelGatewayConfig: file("bad.toml", "[providers.x]\nbase_urls = { smoke-signals = \"https://x\" }\n")},
			`context "modelGatewayConfig" (` + dir + `/bad.toml): model gateway config: providers.x.base_urls: unknown wire API "smoke-signals"`},
		{"bad field named", map[string]any{KeyModelGatewayConfig: file("bad2.toml", "[hosted]\nbase_url = \"nope\"\n")}, "hosted.base_url"},
		{"unknown field", map[string]any{KeyModelGatewayConfig: file("bad3.toml", "[hosted]\nbase_url = \"http://h/v1\"\napi_key = \"sk\"\n")}, "unknown field hosted.api_key"},
		{"key file", map[string]any{KeyModelGatewayConfig: file("keyfile.toml", "[hosted]\nbase_url = \"http://h/v1\"\napi_key_file = \"/etc/key\"\n")},
			"hosted.api_key_file: a sandbox task has no operator files"},
		{"api_key_env without the secret", map[string]any{KeyModelGatewayConfig: hostedFile}, `needs context "hostedKeySecretArn"`},
		{"secret without api_key_env", map[string]any{KeyModelGatewayConfig: providersFile, KeyHostedKeySecretARN: arn}, "names no hosted.api_key_env"},
		{"secret without a config", map[string]any{KeyHostedKeySecretARN: arn}, `context "hostedKeySecretArn": is set`},
		{"partial secret ARN", map[string]any{KeyModelGatewayConfig: hostedFile, KeyHostedKeySecretARN: "arn:aws:secretsmanager:us-east-1:111122223333:secret:gauntlet/hosted-key"},
			"not a complete Secrets Manager secret ARN"},
		{"too large", map[string]any{KeyModelGatewayConfig: file("big.toml", providers+"#"+strings.Repeat("x", MaxModelGatewayConfig)+"\n")}, "at most 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(lookupFrom(tt.context)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load(%v) error = %v, want it to contain %q", tt.context, err, tt.wantErr)
			}
		})
	}
}

func TestPrebuiltImages(t *testing.T) {
	ok := map[string]any{KeyRunnerImage: "123456789012.dkr.ecr.us-east-1.amazonaws.com/gauntlet-runner:local", KeyAgentsImage: "ghcr.io/acme/agents@sha256:" + strings.Repeat("0f", 32)}
	c, err := Load(lookupFrom(ok))
	if err != nil {
		t.Fatalf("Load(%v) error = %v", ok, err)
	}
	if c.RunnerImage != ok[KeyRunnerImage] || c.AgentsImage != ok[KeyAgentsImage] {
		t.Errorf("Load = runner %q agents %q, want the references given", c.RunnerImage, c.AgentsImage)
	}
	for _, key := range []string{KeyRunnerImage, KeyAgentsImage} {
		if _, err := Load(lookupFrom(map[string]any{key: "Not An/Image"})); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Load(%s = bad reference) error = %v, want one naming %s", key, err, key)
		}
	}
	c, err = Load(lookupFrom(map[string]any{KeyRestrictDefaultSG: "false"}))
	if err != nil || c.RestrictDefaultSecurityGroup {
		t.Errorf("Load(%s=false) = %v, %v; want it off", KeyRestrictDefaultSG, c.RestrictDefaultSecurityGroup, err)
	}
}

func TestConsoleHostingOffNeedsAnOrigin(t *testing.T) {
	if _, err := Load(lookupFrom(map[string]any{KeyConsoleHosting: false})); err == nil || !strings.Contains(err.Error(), KeyConsoleOrigin) {
		t.Errorf("Load(consoleHosting=false, no origin) error = %v, want one naming %s", err, KeyConsoleOrigin)
	}
	c, err := Load(lookupFrom(map[string]any{KeyConsoleHosting: "false", KeyConsoleOrigin: "https://console.example.com"}))
	if err != nil || c.ConsoleHosting {
		t.Errorf("Load(consoleHosting=false with an origin) = %v, %v; want hosting off", c.ConsoleHosting, err)
	}
}
