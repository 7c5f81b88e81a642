package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

func TestSecretsRoundTripThroughTheEnvironment(t *testing.T) {
	spec := sandbox.Spec{
		Secrets:         map[string]secret.Value{"OPENAI_API_KEY": "sk-1", "X": "a=b"},
		VerifierSecrets: map[string]secret.Value{"JUDGE_KEY": "j-2"},
		JudgeKey:        "sk-judge-3",
	}
	env := append(sandbox.SecretEnv(spec), "PATH=/bin", "GAUNTLET_SECRET_=ignored", "AWS_SECRET_ACCESS_KEY=platform")
	agent, verifier, judge, carriers := takeSecrets(env)
	if judge != spec.JudgeKey {
		t.Errorf("judge key = %q, want %q", judge.Reveal(), spec.JudgeKey.Reveal())
	}
	if diff := cmp.Diff(spec.Secrets, agent); diff != "" {
		t.Errorf("agent secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(spec.VerifierSecrets, verifier); diff != "" {
		t.Errorf("verifier secrets (-want +got):\n%s", diff)
	}
	slices.Sort(carriers)
	want := []string{sandbox.JudgeKeyEnv, "GAUNTLET_SECRET_OPENAI_API_KEY", "GAUNTLET_SECRET_X", "GAUNTLET_VERIFIER_SECRET_JUDGE_KEY"}
	if diff := cmp.Diff(want, carriers); diff != "" {
		t.Errorf("carriers (-want +got):\n%s", diff)
	}
}

// TestGatewayConfigFromTheEnvironment follows the Fargate task's model
// gateway config: the TOML in $GAUNTLET_MODEL_GATEWAY_CONFIG, the hosted
// key in the GAUNTLET_GATEWAY_KEY_ variable its api_key_env names, both
// taken as carriers.
func TestGatewayConfigFromTheEnvironment(t *testing.T) {
	env := []string{"PATH=/bin", "GAUNTLET_GATEWAY_KEY_HOSTED=sk-hosted-value", "GAUNTLET_GATEWAY_KEY_=ignored", "OTHER=x"}
	keys, carriers := takeGatewayKeys(env)
	if diff := cmp.Diff(map[string]string{"GAUNTLET_GATEWAY_KEY_HOSTED": "sk-hosted-value"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"GAUNTLET_GATEWAY_KEY_HOSTED"}, carriers); diff != "" {
		t.Errorf("carriers (-want +got):\n%s", diff)
	}
	for _, key := range []string{"GAUNTLET_GATEWAY_KEY_HOSTED", sandbox.GatewayConfigEnv} {
		if !sensitiveRunnerVar(key) {
			t.Errorf("sensitiveRunnerVar(%q) = false, want true: it is scrubbed before any phase", key)
		}
	}
	models, err := loadModels("", hostedByEnv, keys)
	if err != nil {
		t.Fatal(err)
	}
	route, err := models.Resolve(modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "ft"})
	if err != nil || route.Key != "sk-hosted-value" {
		t.Fatalf("hosted route: key set %v, %v; want the key from the environment", route.Key == "sk-hosted-value", err)
	}
	if _, err := loadModels("", hostedByEnv, nil); err == nil || !strings.Contains(err.Error(), "$"+sandbox.GatewayConfigEnv) {
		t.Errorf("loadModels without the key = %v, want an error naming $%s", err, sandbox.GatewayConfigEnv)
	}
	if models, err := loadModels("", "", nil); models != nil || err != nil {
		t.Errorf("loadModels with no config = %v, %v; want nil (the default table)", models, err)
	}
	file := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(file, []byte("[providers.openai]\nbase_urls = { openai-chat = \"https://llm.example.com/v1\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	models, err = loadModels(file, hostedByEnv, nil) // the file wins
	if err != nil || models.HostsModels() || models.Providers["openai"].BaseURLs[wireapi.Chat] != "https://llm.example.com/v1" {
		t.Errorf("loadModels(file, env) = %+v, %v; want the file's table", models, err)
	}
}

func TestNetworkAllowed(t *testing.T) {
	for mode, want := range map[string]bool{
		"": false, "none": false, harbor.NetworkNone: false, harbor.NetworkAllowlist: false,
		harbor.NetworkPublic: true, "bridge": false,
	} {
		if got := networkAllowed(mode); got != want {
			t.Errorf("networkAllowed(%q) = %v, want %v", mode, got, want)
		}
	}
}

func TestExtractTarGzStaysInside(t *testing.T) {
	tests := []struct {
		name    string
		entries []tar.Header
		wantErr bool
	}{
		{name: "parent escape", entries: []tar.Header{{Name: "../evil", Typeflag: tar.TypeReg}}, wantErr: true},
		{name: "absolute", entries: []tar.Header{{Name: "/etc/evil", Typeflag: tar.TypeReg}}, wantErr: true},
		{name: "through a symlink", entries: []tar.Header{
			{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/tmp"},
			{Name: "link/evil", Typeflag: tar.TypeReg},
		}, wantErr: true},
		{name: "plain", entries: []tar.Header{{Name: "a/b.txt", Typeflag: tar.TypeReg}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			err := extractTarGz(bytes.NewReader(tarGz(t, tc.entries)), dest)
			if (err != nil) != tc.wantErr {
				t.Errorf("extractTarGz error = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func tarGz(t *testing.T, entries []tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := []byte("x")
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRunCloudShape runs a trial the way the cloud driver does: the task
// arrives as a bundle URL and the outputs leave by presigned PUTs.
func TestRunCloudShape(t *testing.T) {
	requireBwrap(t)
	bundle := filepath.Join(t.TempDir(), "task.tar.gz")
	if err := writeTarGz(fixtureDir(t), bundle); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	puts := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			http.ServeFile(w, r, bundle)
		case http.MethodPut:
			body, _ := io.ReadAll(r.Body)
			if r.ContentLength != int64(len(body)) {
				http.Error(w, "content length required", http.StatusLengthRequired)
				return
			}
			mu.Lock()
			puts[r.URL.Path] = body
			mu.Unlock()
		}
	}))
	defer srv.Close()
	spec := baseSpec(t, "oracle")
	spec.Task = sandbox.TaskRef{Name: "task", BundleURL: srv.URL + "/bundle?X-Amz-Signature=abc"}
	spec.Output = sandbox.Output{ResultURL: srv.URL + "/result.json", ArtifactsURL: srv.URL + "/artifacts.tar.gz"}
	r := runTrial(t, spec, Options{})
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
	uploaded, err := harbor.DecodeTrialResult(bytes.NewReader(puts["/result.json"]))
	if err != nil {
		t.Fatalf("uploaded result.json: %v", err)
	}
	if uploaded.ID != r.result.ID {
		t.Errorf("uploaded result id %s, want %s", uploaded.ID, r.result.ID)
	}
	names := tarNames(t, puts["/artifacts.tar.gz"])
	for _, want := range []string{"runner.log", "agent/instruction.md", "verifier/reward.txt"} {
		if !slices.Contains(names, want) {
			t.Errorf("artifacts.tar.gz lacks %s; has %v", want, names)
		}
	}
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("artifacts archive: %v", err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimSuffix(h.Name, "/"))
	}
}

func TestUploadFailureIsAnError(t *testing.T) {
	requireBwrap(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied", http.StatusForbidden)
	}))
	defer srv.Close()
	dir := t.TempDir()
	spec := baseSpec(t, "nop")
	spec.Output = sandbox.Output{ResultURL: srv.URL + "/result.json?X-Amz-Signature=secret-signature"}
	_, err := Run(context.Background(), spec, Options{WorkDir: filepath.Join(dir, "w"), OutDir: filepath.Join(dir, "o")})
	if err == nil || strings.Contains(err.Error(), "secret-signature") {
		t.Errorf("Run with a failing upload: error %v, want one that does not show the presigned URL", err)
	}
}

// scrubChildEnv makes the test binary act as a process that scrubs its
// environment block and prints /proc/self/environ (TestScrubEnvironBlock).
const scrubChildEnv = "GAUNTLET_TEST_SCRUB_CHILD"

func scrubChild() {
	if n, err := scrubEnvironBlock(sensitiveRunnerVar); err != nil {
		fmt.Fprintf(os.Stderr, "scrubbed %d: %v\n", n, err)
		os.Exit(2)
	}
	data, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	_, _ = os.Stdout.Write(data)
	os.Exit(0)
}

func TestScrubEnvironBlock(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{
		scrubChildEnv + "=1", "PATH=/usr/bin",
		SpecEnv + `={"output":{"result_url":"https://put/?X-Amz-Signature=sig-in-spec"}}`,
		"GAUNTLET_SECRET_OPENAI_API_KEY=sk-agent-value", "GAUNTLET_VERIFIER_SECRET_JUDGE=judge-value",
		"GAUNTLET_SECRETS_URL=https://get/?X-Amz-Signature=sig-in-url", "GAUNTLET_SECRETS_DATA_KEY=wrapped-key-value",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/creds-uuid", "KEEP_ME=visible",
		"GAUNTLET_GATEWAY_KEY_HOSTED=hosted-key-value", sandbox.GatewayConfigEnv + `=[providers.x]
headers = { X-Gateway-Token = "gateway-token-value" }`,
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scrub child: %v", err)
	}
	got := map[string]string{}
	for _, entry := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(entry, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		scrubChildEnv: "1", "PATH": "/usr/bin", "KEEP_ME": "visible", SpecEnv: "",
		"GAUNTLET_SECRET_OPENAI_API_KEY": "", "GAUNTLET_VERIFIER_SECRET_JUDGE": "", "GAUNTLET_SECRETS_URL": "",
		"GAUNTLET_SECRETS_DATA_KEY": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"GAUNTLET_GATEWAY_KEY_HOSTED": "", sandbox.GatewayConfigEnv: "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/proc/self/environ after the scrub (-want +got):\n%s", diff)
	}
	for _, v := range []string{"sig-in-spec", "sk-agent-value", "judge-value", "sig-in-url", "wrapped-key-value", "creds-uuid", "hosted-key-value", "gateway-token-value"} {
		if strings.Contains(string(out), v) {
			t.Errorf("/proc/self/environ still holds %q", v)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := newRedactor(
		map[string]secret.Value{"API_KEY": "sk-live-12345678", "SHORT": "abc1234", "QUOTED": `pa"ss<wo>rd`},
		map[string]secret.Value{"JUDGE": "judge-secret-value", "ALIAS": "sk-live-12345678"},
	)
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "key=sk-live-12345678\n", want: "key=[redacted:API_KEY]\n"},
		{name: "twice and adjacent", in: "sk-live-12345678sk-live-12345678", want: "[redacted:API_KEY][redacted:API_KEY]"},
		{name: "verifier secret", in: "judge-secret-value!", want: "[redacted:JUDGE]!"},
		{name: "shorter than 8 bytes is kept", in: "abc1234", want: "abc1234"},
		{name: "json escaped", in: `{"v":"pa\"ss\u003cwo\u003erd"}`, want: `{"v":"[redacted:QUOTED]"}`},
		{name: "json escaped without html escaping", in: `{"v":"pa\"ss<wo>rd"}`, want: `{"v":"[redacted:QUOTED]"}`},
		{name: "raw", in: `pa"ss<wo>rd`, want: `[redacted:QUOTED]`},
		{name: "prefix only", in: "sk-live-1234567", want: "sk-live-1234567"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// oneByteReader hands out its input a byte at a time, so every value
// straddles read boundaries.
type oneByteReader struct{ data []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.data) == 0 {
		return 0, io.EOF
	}
	p[0] = o.data[0]
	o.data = o.data[1:]
	return 1, nil
}

func TestRedactorStreamsAcrossChunks(t *testing.T) {
	r := newRedactor(map[string]secret.Value{"A": "secret-value-aaaa", "B": "secret-value-aaaa-longer"})
	// A large input with values on both sides of every chunk boundary.
	var in, want strings.Builder
	filler := strings.Repeat("x", redactChunk-7)
	for range 5 {
		in.WriteString(filler + "secret-value-aaaa|" + "secret-value-aaaa-longer")
		want.WriteString(filler + "[redacted:A]|" + "[redacted:B]")
	}
	for name, src := range map[string]io.Reader{
		"chunks":      strings.NewReader(in.String()),
		"single byte": &oneByteReader{data: []byte(in.String()[:3*redactChunk])},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := r.copy(&out, src)
			if err != nil {
				t.Fatal(err)
			}
			wantOut := want.String()
			if name == "single byte" {
				// An independent oracle: the longer value first, as the
				// redactor prefers the longest match at a position.
				wantOut = strings.NewReplacer("secret-value-aaaa-longer", "[redacted:B]",
					"secret-value-aaaa", "[redacted:A]").Replace(in.String()[:3*redactChunk])
			}
			if out.String() != wantOut {
				t.Errorf("copy changed the stream wrongly (%d bytes in, %d out, want %d)", n, out.Len(), len(wantOut))
			}
			if strings.Contains(out.String(), "secret-value") {
				t.Error("a value survived")
			}
		})
	}
}

func BenchmarkRedactorCopy(b *testing.B) {
	r := newRedactor(map[string]secret.Value{"A": "sk-live-0123456789abcdef", "B": "another-secret-value"})
	data := bytes.Repeat([]byte("an ordinary log line with nothing secret in it\n"), 1<<16)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_, _ = r.copy(io.Discard, bytes.NewReader(data))
	}
}
