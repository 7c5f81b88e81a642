package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// leakCanary is the secret the leak suite's agent tries to get out.
const leakCanary = "leak-canary-9Qz7+/x=Y2k4-never-stored"

// leakConfig runs a command agent that writes the canary (its
// LEAK_CANARY secret) every way it can: raw and encoded on stdout and
// stderr, in files under /logs (collected as artifacts), in /app, and
// into its usage file's neighbourhood.
const leakConfig = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_names = ["csv-summary"]

[secrets]
required = ["LEAK_CANARY"]

[[agents]]
name = "leaker"
harness = "command"
command = '''
c="$LEAK_CANARY"
printf 'raw %s\n' "$c"
printf 'stderr %s\n' "$c" >&2
printf '%s' "$c" | base64
printf 'p%s' "$c" | base64 >&2
printf 'pp%s' "$c" | base64 | tr '+/' '-_'
printf '%s' "$c" | od -An -tx1 | tr -d ' \n'; echo
printf '%s' "$c" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; echo
printf '%s' "$c" | sed 's/+/%2B/g; s#/#%2F#g; s/=/%3D/g'; echo
printf '{"note": "%s"}\n' "$c"
mkdir -p /logs/agent /logs/artifacts
printf '%s' "$c" > /logs/agent/leak.txt
printf 'xx%s' "$c" | base64 > /logs/agent/leak.b64
printf '%s' "$c" > /app/leak.txt
exit 0
'''
`

// encodedForms are the spellings of v the scan looks for: raw, base64
// (both alphabets, padded and not, at every offset: the characters that
// depend on v alone), hex both cases, URL-encoded.
func encodedForms(v string) []string {
	forms := []string{v, hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))), url.QueryEscape(v)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for off := range 3 {
			full := enc.EncodeToString(append(make([]byte, off), v...))
			start, end := (8*off+5)/6, 8*(off+len(v))/6
			forms = append(forms, full[start:end])
		}
	}
	return forms
}

// TestLeakSuite: the canary goes through every path an agent can write,
// then every response, every download (each file of the zip) and every
// stored byte of the data dir (database, blobs, logs) is searched for it
// in each encoding.
func TestLeakSuite(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	alice().call(t, request{method: "PUT", path: "/v1/secrets/LEAK_CANARY", body: []byte(leakCanary)}, http.StatusCreated, nil)
	t.Cleanup(func() { // other tests list alice's secrets
		alice().do(t, request{method: "DELETE", path: "/v1/secrets/LEAK_CANARY"})
	})
	var created v1.CreatedRun
	alice().call(t, toml("/v1/runs", leakConfig), http.StatusCreated, &created)
	d := finishedRun(t, alice(), created.ID)
	var responses []string
	get := func(path string) []byte {
		status, _, body := alice().do(t, request{method: "GET", path: path})
		if status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, status, body)
		}
		responses = append(responses, string(body))
		return body
	}
	get("/v1/runs/" + d.ID)
	get("/v1/runs/" + d.ID + "/logs")
	get("/v1/runs/" + d.ID + "/config")
	results := listResults(t, d.ID, "", 10)
	if len(results) == 0 {
		t.Fatal("the leak run has no results")
	}
	artifacts := 0
	for _, r := range results {
		var detail v1.ResultDetail
		body := get("/v1/runs/" + d.ID + "/results/" + r.ID)
		if err := json.Unmarshal(body, &detail); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(detail.AgentOutput.Stdout+detail.AgentOutput.Stderr, "[redacted:LEAK_CANARY]") {
			t.Errorf("result %s: the agent's output shows no redaction; was the canary handed to it?\n%s", r.ID, detail.AgentOutput.Stdout)
		}
		for _, a := range detail.Artifacts {
			u, _ := url.Parse(a.URL)
			get(u.RequestURI())
			artifacts++
		}
	}
	zip := get("/v1/runs/" + d.ID + "/download")
	files := unzipAll(t, zip)
	stored := 0
	err := filepath.WalkDir(env.DataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil // removed meanwhile (sandbox dirs, temp files)
		}
		stored += len(data)
		for _, form := range encodedForms(leakCanary) {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("stored file %s holds the canary as %q", strings.TrimPrefix(p, env.DataDir), form)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	searched := strings.Join(responses, "\n") + strings.Join(files, "\n") + env.Logs()
	for _, form := range encodedForms(leakCanary) {
		if strings.Contains(searched, form) {
			t.Errorf("a response, download or log line holds the canary as %q", form)
		}
	}
	t.Logf("leak suite: %d forms searched in %d responses, %d artifacts, %d zip files and %d stored bytes",
		len(encodedForms(leakCanary)), len(responses), artifacts, len(files), stored)
}

func unzipAll(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("download is not a zip: %v", err)
	}
	var out []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out = append(out, string(b))
	}
	return out
}
