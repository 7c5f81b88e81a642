// Package hubtest runs a Harbor package registry on loopback for tests: it
// answers the PostgREST routes and RPC calls, storage downloads and API-key
// exchange Harbor's client sends (selects and filters are checked against
// the ones in Harbor's src/harbor/db/client.py, so a client that asks
// anything else gets PostgREST's 400), and is filled by publishing real
// task directories the way Harbor's publisher does (its file selection,
// archive and content hash).
package hubtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/hub"
)

// PublishableKey is the public client key the server expects.
const PublishableKey = "sb_publishable_test"

// Harbor's selects (db/client.py), whitespace removed as postgrest-py sends
// them; written out here, not shared with the client, so a drift shows.
var selects = map[string]string{
	"dataset_version_tag":  "dataset_version:dataset_version_id(*),package:package_id!inner(*,org:org_id!inner(name))",
	"dataset_version":      "*,package:package_id!inner(*,org:org_id!inner(name))",
	"dataset_version_task": "task_version_id,task_version:task_version_id(content_hash,package:package_id(name,org:org_id(name)))",
	"dataset_version_file": "path,storage_path,content_hash,size_bytes",
	"package":              "id,type,visibility,org:org_id!inner(name)",
}

type pkg struct {
	id, org, name, typ string
	private            bool
}

type taskVersion struct {
	id, hash, archive string
	pkg               *pkg
	revision          int64
}

type datasetVersion struct {
	id, hash, description string
	pkg                   *pkg
	revision              int64
	tasks                 []*taskVersion
	files                 []fileRow
	yankedReason          *string
}

type fileRow struct {
	Path        string `json:"path"`
	StoragePath string `json:"storage_path"`
	ContentHash string `json:"content_hash"`
	Size        int64  `json:"size_bytes"`
}

// Server is a package registry on loopback.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	packages map[string]*pkg // org/name
	tasks    map[string]*taskVersion
	datasets []*datasetVersion
	tags     map[string]map[string]*datasetVersion // org/name → tag
	objects  map[string][]byte
	keys     map[string][]string // API key → orgs whose private packages it reads
	tokens   map[string][]string // access token → orgs
	nextID   int

	// Downloads counts storage object downloads.
	Downloads atomic.Int64
	// Requests counts every request.
	Requests atomic.Int64
}

// New starts a Server; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{packages: map[string]*pkg{}, tasks: map[string]*taskVersion{}, tags: map[string]map[string]*datasetVersion{},
		objects: map[string][]byte{}, keys: map[string][]string{}, tokens: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// AddAPIKey makes key a valid Harbor API key that reads the private
// packages of orgs.
func (s *Server) AddAPIKey(key string, orgs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = orgs
}

func (s *Server) id() string {
	s.nextID++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID)
}

func (s *Server) pkg(org, name, typ string, private bool) *pkg {
	p, ok := s.packages[org+"/"+name]
	if !ok {
		p = &pkg{id: s.id(), org: org, name: name, typ: typ, private: private}
		s.packages[org+"/"+name] = p
	}
	return p
}

// Collect lists a task directory's files the way Harbor's
// Packager.collect_files does (task.toml, instruction.md, README.md,
// trajectory.json, and everything under environment/, tests/, solution/
// and steps/, less the default ignores), slash-separated and sorted.
func Collect(dir string) ([]string, error) {
	var rels []string
	for _, f := range []string{"task.toml", "instruction.md", "README.md", "trajectory.json"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err == nil && info.Mode().IsRegular() {
			rels = append(rels, f)
		}
	}
	for _, d := range []string{"environment", "tests", "solution", "steps"} {
		root := filepath.Join(dir, d)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			if !ignored(filepath.ToSlash(rel)) {
				rels = append(rels, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(rels)
	return rels, nil
}

// ignored applies Harbor's DEFAULT_IGNORES.
func ignored(rel string) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	return strings.Contains("/"+rel, "/__pycache__/") || strings.HasSuffix(base, ".pyc") || base == ".DS_Store" ||
		strings.HasSuffix(base, ".swp") || strings.HasSuffix(base, ".swo") || strings.HasSuffix(base, "~")
}

// Archive builds the dist.tar.gz Harbor's publisher writes: the collected
// files, mode 0644, owner 0, mtime 0.
func Archive(dir string, rels []string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Size: int64(len(data)), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatGNU}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PublishTask publishes task directory dir as package org/name (Harbor's
// publish_task: content hash, archive at packages/<org>/<name>/<hash>/dist.tar.gz)
// and returns its id in a dataset.
func (s *Server) PublishTask(t testing.TB, org, name, dir string, private bool) hub.TaskID {
	t.Helper()
	rels, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := hub.ContentHash(dir, rels)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := Archive(dir, rels)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pkg(org, name, "task", private)
	key := p.id + "@" + hash
	if _, ok := s.tasks[key]; !ok {
		path := fmt.Sprintf("packages/%s/%s/%s/dist.tar.gz", org, name, hash)
		s.objects[path] = archive
		var rev int64 = 1
		for _, tv := range s.tasks {
			if tv.pkg == p {
				rev++
			}
		}
		s.tasks[key] = &taskVersion{id: s.id(), hash: hash, archive: path, pkg: p, revision: rev}
	}
	return hub.TaskID{Org: org, Name: name, ContentHash: hash}
}

// DatasetFile is a dataset-level file to publish.
type DatasetFile struct {
	Path string
	Data []byte
}

// PublishDataset publishes a dataset version of org/name listing tasks
// (published before) and files, tagged "latest" and tags, and returns its
// revision and content hash (Harbor's DatasetManifest.compute_content_hash).
func (s *Server) PublishDataset(t testing.TB, org, name, description string, private bool, tasks []hub.TaskID, files []DatasetFile, tags ...string) (int64, string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pkg(org, name, "dataset", private)
	dv := &datasetVersion{id: s.id(), pkg: p, description: description, revision: 1}
	for _, d := range s.datasets {
		if d.pkg == p {
			dv.revision++
		}
	}
	var digests, fileParts []string
	for _, id := range tasks {
		tp, ok := s.packages[id.Package()]
		if !ok {
			t.Fatalf("publish dataset: task %s is not published", id.Package())
		}
		tv, ok := s.tasks[tp.id+"@"+id.ContentHash]
		if !ok {
			t.Fatalf("publish dataset: task %s@sha256:%s is not published", id.Package(), id.ContentHash)
		}
		dv.tasks = append(dv.tasks, tv)
		digests = append(digests, id.ContentHash)
	}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		hash := hex.EncodeToString(sum[:])
		path := fmt.Sprintf("packages/%s/%s/%s/%s", org, name, hash, filepath.Base(f.Path))
		s.objects[path] = f.Data
		dv.files = append(dv.files, fileRow{Path: f.Path, StoragePath: path, ContentHash: hash, Size: int64(len(f.Data))})
		fileParts = append(fileParts, f.Path+":"+hash)
	}
	sort.Strings(digests)
	base := strings.Join(digests, ",")
	if len(fileParts) > 0 {
		sort.Strings(fileParts)
		base += ";" + strings.Join(fileParts, ",")
	}
	sum := sha256.Sum256([]byte(base))
	dv.hash = hex.EncodeToString(sum[:])
	s.datasets = append(s.datasets, dv)
	if s.tags[org+"/"+name] == nil {
		s.tags[org+"/"+name] = map[string]*datasetVersion{}
	}
	for _, tag := range append([]string{hub.LatestTag}, tags...) {
		s.tags[org+"/"+name][tag] = dv
	}
	return dv.revision, dv.hash
}

// Yank marks revision rev of dataset org/name yanked with reason.
func (s *Server) Yank(org, name string, rev int64, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.datasets {
		if d.pkg.org == org && d.pkg.name == name && d.revision == rev {
			d.yankedReason = &reason
		}
	}
}

// Replace swaps the bytes of the storage object at path (a tampered or
// truncated archive); it returns the old bytes.
func (s *Server) Replace(path string, data []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.objects[path]
	s.objects[path] = data
	return old
}

// ArchivePath returns where task id's archive is stored.
func ArchivePath(id hub.TaskID) string {
	return fmt.Sprintf("packages/%s/%s/%s/dist.tar.gz", id.Org, id.Name, id.ContentHash)
}

// ---- HTTP ----

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func pgError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "details": nil, "hint": nil})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if r.Header.Get("apikey") != PublishableKey {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "No API key found in request"})
		return
	}
	if r.URL.Path == "/functions/v1/api-key-exchange" && r.Method == http.MethodPost {
		s.exchange(w, r)
		return
	}
	orgs, ok := s.caller(r)
	if !ok {
		pgError(w, http.StatusUnauthorized, "PGRST301", "JWT could not be decoded")
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/storage/v1/object/packages/"):
		s.download(w, r, orgs)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/rest/v1/rpc/"):
		s.rpc(w, r, orgs, strings.TrimPrefix(r.URL.Path, "/rest/v1/rpc/"))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/rest/v1/"):
		s.table(w, r, orgs, strings.TrimPrefix(r.URL.Path, "/rest/v1/"))
	default:
		pgError(w, http.StatusNotFound, "PGRST125", "Invalid path specified in request URL")
	}
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	var body struct {
		APIKey string `json:"api_key"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body)
	s.mu.Lock()
	defer s.mu.Unlock()
	orgs, ok := s.keys[body.APIKey]
	if !ok || body.APIKey == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid api key"})
		return
	}
	token := fmt.Sprintf("jwt-%d", len(s.tokens)+1)
	s.tokens[token] = orgs
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "expires_in": 900})
}

// caller returns the orgs whose private packages the request may read.
func (s *Server) caller(r *http.Request) ([]string, bool) {
	bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if bearer == PublishableKey {
		return nil, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	orgs, ok := s.tokens[bearer]
	return orgs, ok
}

func visible(p *pkg, orgs []string) bool {
	if !p.private {
		return true
	}
	for _, o := range orgs {
		if o == p.org {
			return true
		}
	}
	return false
}

// query splits PostgREST parameters: eq filters, and limit/offset/order.
type query struct {
	eq                map[string]string
	limit, offset     int
	order             string
	unknownParam, sel string
}

func parseQuery(r *http.Request, allowed ...string) query {
	q := query{eq: map[string]string{}, limit: -1}
	for k, vs := range r.URL.Query() {
		v := vs[0]
		switch k {
		case "select":
			q.sel = v
		case "limit":
			q.limit, _ = strconv.Atoi(v)
		case "offset":
			q.offset, _ = strconv.Atoi(v)
		case "order":
			q.order = v
		default:
			val, ok := strings.CutPrefix(v, "eq.")
			known := false
			for _, a := range allowed {
				known = known || a == k
			}
			if !ok || !known {
				q.unknownParam = k + "=" + v
				continue
			}
			q.eq[k] = val
		}
	}
	return q
}

func page[T any](rows []T, q query) []T {
	if q.offset > len(rows) {
		return []T{}
	}
	rows = rows[q.offset:]
	if q.limit >= 0 && q.limit < len(rows) {
		rows = rows[:q.limit]
	}
	return rows
}

func (s *Server) table(w http.ResponseWriter, r *http.Request, orgs []string, table string) {
	want, ok := selects[table]
	if !ok {
		pgError(w, http.StatusNotFound, "PGRST205", "Could not find the table 'public."+table+"' in the schema cache")
		return
	}
	allowed := map[string][]string{
		"dataset_version_tag":  {"tag", "package.name", "package.type", "package.org.name"},
		"dataset_version":      {"revision", "content_hash", "package.name", "package.type", "package.org.name"},
		"dataset_version_task": {"dataset_version_id"},
		"dataset_version_file": {"dataset_version_id"},
		"package":              {"name", "org.name"},
	}[table]
	q := parseQuery(r, allowed...)
	if q.sel != want || q.unknownParam != "" {
		pgError(w, http.StatusBadRequest, "PGRST100", fmt.Sprintf("unexpected query for %s: select=%q %s", table, q.sel, q.unknownParam))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch table {
	case "package":
		rows := []map[string]any{}
		if p, ok := s.packages[q.eq["org.name"]+"/"+q.eq["name"]]; ok && visible(p, orgs) {
			rows = append(rows, map[string]any{"id": p.id, "type": p.typ, "visibility": visibility(p), "org": map[string]string{"name": p.org}})
		}
		writeJSON(w, http.StatusOK, page(rows, q))
	case "dataset_version_tag":
		rows := []map[string]any{}
		if q.eq["package.type"] == "dataset" {
			if dv := s.tags[q.eq["package.org.name"]+"/"+q.eq["package.name"]][q.eq["tag"]]; dv != nil && visible(dv.pkg, orgs) {
				rows = append(rows, map[string]any{"dataset_version": versionJSON(dv), "package": packageJSON(dv.pkg)})
			}
		}
		writeJSON(w, http.StatusOK, page(rows, q))
	case "dataset_version":
		rows := []map[string]any{}
		for _, dv := range s.datasets {
			if q.eq["package.type"] != "dataset" || dv.pkg.org != q.eq["package.org.name"] || dv.pkg.name != q.eq["package.name"] || !visible(dv.pkg, orgs) {
				continue
			}
			if rev, ok := q.eq["revision"]; ok && rev != strconv.FormatInt(dv.revision, 10) {
				continue
			}
			if h, ok := q.eq["content_hash"]; ok && h != dv.hash {
				continue
			}
			row := versionJSON(dv)
			row["package"] = packageJSON(dv.pkg)
			rows = append(rows, row)
		}
		writeJSON(w, http.StatusOK, page(rows, q))
	case "dataset_version_task":
		rows := []map[string]any{}
		if dv := s.dataset(q.eq["dataset_version_id"], orgs); dv != nil {
			sorted := append([]*taskVersion(nil), dv.tasks...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].id < sorted[j].id })
			for _, tv := range sorted {
				var embedded any // redacted for callers who may not read the task
				if visible(tv.pkg, orgs) {
					embedded = map[string]any{"content_hash": tv.hash, "package": map[string]any{"name": tv.pkg.name, "org": map[string]string{"name": tv.pkg.org}}}
				}
				rows = append(rows, map[string]any{"task_version_id": tv.id, "task_version": embedded})
			}
		}
		writeJSON(w, http.StatusOK, page(rows, q))
	case "dataset_version_file":
		rows := []fileRow{}
		if dv := s.dataset(q.eq["dataset_version_id"], orgs); dv != nil {
			rows = append(rows, dv.files...)
		}
		writeJSON(w, http.StatusOK, page(rows, q))
	}
}

func (s *Server) dataset(id string, orgs []string) *datasetVersion {
	for _, dv := range s.datasets {
		if dv.id == id && visible(dv.pkg, orgs) {
			return dv
		}
	}
	return nil
}

func visibility(p *pkg) string {
	if p.private {
		return "private"
	}
	return "public"
}

func packageJSON(p *pkg) map[string]any {
	return map[string]any{"id": p.id, "name": p.name, "type": p.typ, "visibility": visibility(p), "org": map[string]string{"name": p.org}}
}

func versionJSON(dv *datasetVersion) map[string]any {
	row := map[string]any{"id": dv.id, "package_id": dv.pkg.id, "revision": dv.revision, "content_hash": dv.hash,
		"description": dv.description, "published_at": "2026-12-01T00:00:00+00:00", "yanked_at": nil, "yanked_reason": nil}
	if dv.yankedReason != nil {
		row["yanked_at"], row["yanked_reason"] = "2026-12-02T00:00:00+00:00", *dv.yankedReason
	}
	return row
}

func (s *Server) rpc(w http.ResponseWriter, r *http.Request, orgs []string, fn string) {
	var p map[string]string
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&p); err != nil {
		pgError(w, http.StatusBadRequest, "PGRST102", "Empty or invalid json")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch fn {
	case "resolve_task_version":
		pk, ok := s.packages[p["p_org"]+"/"+p["p_name"]]
		digest, isDigest := strings.CutPrefix(p["p_ref"], "sha256:")
		if !ok || !visible(pk, orgs) || !isDigest {
			writeJSON(w, http.StatusOK, nil)
			return
		}
		tv, ok := s.tasks[pk.id+"@"+digest]
		if !ok {
			writeJSON(w, http.StatusOK, nil)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": tv.id, "archive_path": tv.archive, "content_hash": tv.hash, "revision": tv.revision, "yanked_at": nil, "yanked_reason": nil})
	case "list_dataset_tags":
		rows := []map[string]any{}
		for tag, dv := range s.tags[p["p_org"]+"/"+p["p_name"]] {
			if visible(dv.pkg, orgs) {
				rows = append(rows, map[string]any{"tag": tag, "revision": dv.revision})
			}
		}
		writeJSON(w, http.StatusOK, rows)
	default:
		pgError(w, http.StatusNotFound, "PGRST202", "Could not find the function public."+fn)
	}
}

func (s *Server) download(w http.ResponseWriter, r *http.Request, orgs []string) {
	path := strings.TrimPrefix(r.URL.Path, "/storage/v1/object/packages/")
	s.mu.Lock()
	data, ok := s.objects[path]
	var owner *pkg
	parts := strings.SplitN(path, "/", 4)
	if len(parts) == 4 {
		owner = s.packages[parts[1]+"/"+parts[2]]
	}
	s.mu.Unlock()
	if !ok || (owner != nil && !visible(owner, orgs)) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"statusCode": "404", "error": "not_found", "message": "Object not found"})
		return
	}
	s.Downloads.Add(1)
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}
