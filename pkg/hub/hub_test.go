package hub_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/hub/hubtest"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in         string
		want       hub.Ref
		wantErr    string // the field named, "" = valid
		wantPinned bool
	}{
		{in: "terminal-bench/terminal-bench-2-1", want: hub.Ref{Org: "terminal-bench", Name: "terminal-bench-2-1", Version: "latest", Kind: hub.Tag}},
		{in: "org/name@stable", want: hub.Ref{Org: "org", Name: "name", Version: "stable", Kind: hub.Tag}},
		{in: "org/name@2.1", want: hub.Ref{Org: "org", Name: "name", Version: "2.1", Kind: hub.Tag}},
		{in: "org/name@3", want: hub.Ref{Org: "org", Name: "name", Version: "3", Kind: hub.Revision}, wantPinned: true},
		{in: "org/name@sha256:" + strings.Repeat("AB", 32), want: hub.Ref{Org: "org", Name: "name", Version: "sha256:" + strings.Repeat("ab", 32), Kind: hub.Digest}, wantPinned: true},
		{in: "name-only", wantErr: "name"},
		{in: "a/b/c", wantErr: "name"},
		{in: "org/../x", wantErr: "name"},
		{in: "org/a..b", wantErr: "name"},
		{in: ".org/x", wantErr: "name"},
		{in: "org/x$", wantErr: "name"},
		{in: "org/name@", wantErr: "ref"},
		{in: "org/name@Latest", wantErr: "ref"},
		{in: "org/name@a_b", wantErr: "ref"},
		{in: "org/name@sha256:abc", wantErr: "ref"},
		{in: "org/name@99999999999", wantErr: "ref"},
		{in: "org/name@-x", wantErr: "ref"},
	} {
		got, err := hub.ParseRef(tc.in)
		if tc.wantErr != "" {
			var re *hub.RefError
			if !errors.As(err, &re) || re.Field != tc.wantErr || !errors.Is(err, hub.ErrBadRef) {
				t.Errorf("ParseRef(%q) = %v, %v; want a RefError on %s", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want || got.Pinned() != tc.wantPinned {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v (pinned %v)", tc.in, got, err, tc.want, tc.wantPinned)
		}
	}
	if !hub.IsPackageSpec("org/name@3") || hub.IsPackageSpec("terminal-bench@2.0") || hub.IsPackageSpec("terminal-bench") {
		t.Error("IsPackageSpec: want a '/' in the name to mean a package, as in Harbor's CLI")
	}
}

// The content hash equals Harbor's Packager.compute_content_hash for the
// same files; the golden value was computed with Harbor's formula in Python
// (hashlib over sorted "rel\0sha256\n" records) on exactly these files.
func TestContentHashIsHarbors(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"task.toml":              "[task]\nname = \"acme/ünïcode\"\n",
		"instruction.md":         "Do it.\n",
		"tests/test.sh":          "#!/bin/sh\nexit 0\n",
		"environment/Dockerfile": "FROM debian\n",
		"solution/solve.sh":      "echo ok\n",
		"tests/Zeta.txt":         "z",
		"tests/a b.txt":          "a",
	}
	for rel, data := range files {
		writeFile(t, filepath.Join(dir, rel), data)
	}
	const want = "896d2cd5e07a24d08887ebdc9adbb9ccdbb3f195e66190e4f9e0651d388cfbcb"
	got, err := hub.TreeHash(dir)
	if err != nil || got != want {
		t.Errorf("TreeHash = %s, %v; want %s", got, err, want)
	}
	// Harbor's collection leaves out its default ignores and files outside
	// the task's parts; the hash of what it publishes is unchanged.
	writeFile(t, filepath.Join(dir, "environment/__pycache__/x.pyc"), "bytecode")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not published")
	rels, err := hubtest.Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := hub.ContentHash(dir, rels); err != nil || got != want {
		t.Errorf("ContentHash(Collect) = %s, %v; want %s", got, err, want)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

const demo = "../../examples/demo-bench/"

// registry publishes two demo tasks and a dataset with a metric.py.
type registry struct {
	srv   *hubtest.Server
	tasks []hub.TaskID
	rev   int64
	hash  string
}

func newRegistry(t *testing.T) *registry {
	srv := hubtest.New(t)
	r := &registry{srv: srv}
	for _, name := range []string{"fix-median", "roman-numerals"} {
		r.tasks = append(r.tasks, srv.PublishTask(t, "demo", name, demo+name, false))
	}
	r.rev, r.hash = srv.PublishDataset(t, "demo", "bench", "two demo tasks", false, r.tasks,
		[]hubtest.DatasetFile{{Path: "metric.py", Data: []byte("def metric(r): return sum(r)/len(r)\n")}}, "v1")
	return r
}

func (r *registry) client(t *testing.T, key string) *hub.Client {
	c, err := hub.New(hub.Options{URL: r.srv.URL, PublishableKey: hubtest.PublishableKey, APIKey: key, HTTPClient: r.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustRef(t *testing.T, s string) hub.Ref {
	ref, err := hub.ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestDatasetResolvesEveryRefKindAndVerifiesTasks(t *testing.T) {
	r := newRegistry(t)
	c := r.client(t, "")
	ctx := context.Background()
	for _, spec := range []string{"demo/bench", "demo/bench@v1", "demo/bench@1", "demo/bench@sha256:" + r.hash} {
		d, err := c.Dataset(ctx, mustRef(t, spec))
		if err != nil {
			t.Fatalf("Dataset(%s) = %v", spec, err)
		}
		if d.Version.Revision != r.rev || d.Version.ContentHash != r.hash || d.Version.Description != "two demo tasks" || len(d.Tasks) != 2 || len(d.Files) != 1 {
			t.Fatalf("Dataset(%s) = %+v; want revision %d, hash %s, 2 tasks, 1 file", spec, d, r.rev, r.hash)
		}
	}
	d, _ := c.Dataset(ctx, mustRef(t, "demo/bench"))
	for _, task := range d.Tasks {
		dst := filepath.Join(t.TempDir(), "task")
		if _, err := c.FetchTask(ctx, task, dst); err != nil {
			t.Fatalf("FetchTask(%s) = %v", task.Package(), err)
		}
		if _, err := os.Stat(filepath.Join(dst, "task.toml")); err != nil {
			t.Errorf("fetched %s has no task.toml: %v", task.Package(), err)
		}
	}
	dst := filepath.Join(t.TempDir(), "metric.py")
	if err := c.DownloadFile(ctx, d.Files[0], dst); err != nil {
		t.Fatalf("DownloadFile = %v", err)
	}
}

func TestDatasetBadCases(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	anon := r.client(t, "")

	_, err := anon.Dataset(ctx, mustRef(t, "demo/nope"))
	var nf *hub.NotFoundError
	if !errors.As(err, &nf) || !nf.Package || !strings.Contains(err.Error(), "Tag 'latest' not found for dataset 'demo/nope'") {
		t.Errorf("unknown dataset: %v; want Harbor's tag-not-found naming an unknown package", err)
	}
	_, err = anon.Dataset(ctx, mustRef(t, "demo/bench@nightly"))
	if !errors.As(err, &nf) || nf.Package || len(nf.Known) != 2 || !strings.Contains(err.Error(), "Tag 'nightly' not found") {
		t.Errorf("unknown tag: %v (known %v); want tag-not-found listing latest and v1", err, nf.Known)
	}
	if _, err = anon.Dataset(ctx, mustRef(t, "demo/bench@7")); !hub.IsNotFound(err) || !strings.Contains(err.Error(), "Revision 7 not found") {
		t.Errorf("unknown revision: %v", err)
	}
	if _, err = anon.Dataset(ctx, mustRef(t, "demo/fix-median")); !errors.As(err, &nf) || !strings.Contains(err.Error(), "is a task package, not a dataset") {
		t.Errorf("a task named as a dataset: %v", err)
	}

	// Yanked: resolvable, with Harbor's warning and its reason.
	r.srv.Yank("demo", "bench", r.rev, "graders were wrong")
	d, err := anon.Dataset(ctx, mustRef(t, "demo/bench"))
	if err != nil || d.Version.Yanked(d.Ref) != "Dataset version demo/bench@latest is yanked: graders were wrong" {
		t.Errorf("yanked: %v, %q", err, d.Version.Yanked(d.Ref))
	}

	// A private task in a public dataset: Harbor's message.
	private := r.srv.PublishTask(t, "secret-org", "hidden", demo+"lru-cache", true)
	r.srv.PublishDataset(t, "demo", "mixed", "", false, []hub.TaskID{r.tasks[0], private}, nil)
	_, err = anon.Dataset(ctx, mustRef(t, "demo/mixed"))
	var ue *hub.UnavailableTasksError
	if !errors.As(err, &ue) || err.Error() != "Dataset 'demo/mixed@latest' references 1 task that is unavailable to your account" {
		t.Errorf("inaccessible task: %v; want Harbor's UnavailableDatasetTasksError", err)
	}
}

func TestFetchTaskRefusesTamperedAndTruncatedArchives(t *testing.T) {
	r := newRegistry(t)
	c := r.client(t, "")
	ctx := context.Background()
	task := r.tasks[0]

	// Another task's archive under this task's hash: it unpacks, but its
	// files hash to something else.
	good := r.srv.Replace(hubtest.ArchivePath(task), mustArchive(t, demo+"roman-numerals"))
	dst := filepath.Join(t.TempDir(), "task")
	_, err := c.FetchTask(ctx, task, dst)
	var hm *hub.HashMismatchError
	if !errors.As(err, &hm) || hm.Want != "sha256:"+task.ContentHash || hm.Got != "sha256:"+r.tasks[1].ContentHash ||
		!strings.Contains(err.Error(), hm.Want) || !strings.Contains(err.Error(), hm.Got) {
		t.Errorf("tampered archive: %v; want a mismatch naming %s and %s", err, "sha256:"+task.ContentHash, "sha256:"+r.tasks[1].ContentHash)
	}
	if _, statErr := os.Stat(dst); !os.IsNotExist(statErr) {
		t.Errorf("a refused task's files stay at %s", dst)
	}

	r.srv.Replace(hubtest.ArchivePath(task), good[:len(good)/2])
	_, err = c.FetchTask(ctx, task, filepath.Join(t.TempDir(), "task"))
	var ae *hub.ArchiveError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated archive: %v; want an ArchiveError saying truncated", err)
	}

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte("not a tar"))
	_ = zw.Close()
	r.srv.Replace(hubtest.ArchivePath(task), buf.Bytes())
	if _, err = c.FetchTask(ctx, task, filepath.Join(t.TempDir(), "task")); !errors.As(err, &ae) {
		t.Errorf("garbage archive: %v; want an ArchiveError", err)
	}
}

func mustArchive(t *testing.T, dir string) []byte {
	rels, err := hubtest.Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := hubtest.Archive(dir, rels)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPrivateDatasetsNeedAnAPIKey(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	task := r.srv.PublishTask(t, "acme", "private-task", demo+"lru-cache", true)
	r.srv.PublishDataset(t, "acme", "private-bench", "", true, []hub.TaskID{task}, nil)
	r.srv.AddAPIKey("sk-harbor-k1_good", "acme")
	r.srv.AddAPIKey("sk-harbor-k2_other", "someone-else")

	if _, err := r.client(t, "").Dataset(ctx, mustRef(t, "acme/private-bench")); !hub.IsNotFound(err) {
		t.Errorf("anonymous: %v; want not found (a private dataset is invisible)", err)
	}
	if _, err := r.client(t, "sk-harbor-k2_other").Dataset(ctx, mustRef(t, "acme/private-bench")); !hub.IsNotFound(err) {
		t.Errorf("a key of another org: %v; want not found", err)
	}
	_, err := r.client(t, "sk-harbor-k9_revoked").Dataset(ctx, mustRef(t, "acme/private-bench"))
	if !errors.Is(err, hub.ErrUnauthorized) || strings.Contains(err.Error(), "k9_revoked") {
		t.Errorf("unknown key: %v; want ErrUnauthorized without the key in the message", err)
	}
	c := r.client(t, "sk-harbor-k1_good")
	d, err := c.Dataset(ctx, mustRef(t, "acme/private-bench"))
	if err != nil || len(d.Tasks) != 1 {
		t.Fatalf("with the key: %+v, %v", d, err)
	}
	if _, err := c.FetchTask(ctx, d.Tasks[0], filepath.Join(t.TempDir(), "t")); err != nil {
		t.Errorf("private task download with the key: %v", err)
	}
	// The key goes only over TLS or to loopback, as Harbor insists.
	if _, err := hub.New(hub.Options{URL: "http://registry.example.com", APIKey: "sk-harbor-k1_good"}); err == nil {
		t.Error("an API key over plain http to a remote host was accepted")
	}
}

func TestUnreachableRegistry(t *testing.T) {
	srv := hubtest.New(t)
	url := srv.URL
	srv.Close()
	c, err := hub.New(hub.Options{URL: url, PublishableKey: hubtest.PublishableKey, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dataset(context.Background(), mustRef(t, "demo/bench")); !errors.Is(err, hub.ErrUnreachable) {
		t.Errorf("closed registry: %v; want ErrUnreachable", err)
	}
}
