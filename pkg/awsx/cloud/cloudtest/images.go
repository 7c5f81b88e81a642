package cloudtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
)

// ECR registry credentials the fake's GetAuthorizationToken hands out; the
// registry answers 401 to any request without them.
const (
	ecrUser     = "AWS"
	ecrPassword = "ecr-token-test"
)

// Images stands in for the cloud's image side: an in-process registry in
// the role of the account's ECR registry (the task-images repository and
// the pull-through prefixes, behind ECR's basic auth), and one server
// speaking the JSON 1.1 protocols of ECR (GetAuthorizationToken,
// DescribeImages) and CodeBuild (StartBuild, BatchGetBuilds, StopBuild). A
// build that succeeds pushes a fresh image tagged with its IMAGE_TAG.
type Images struct {
	Registry *localreg.Registry
	// URL is the ECR and CodeBuild endpoint.
	URL string
	// Repository is the task-images repository; Mirrors the
	// GAUNTLET_SANDBOX_MIRRORS value (docker.io → <registry>/docker-hub).
	Repository, RepositoryURI, Mirrors string
	// Python is the digest of the python:3.13-slim in the pull-through
	// prefix.
	Python string

	t      testing.TB
	mu     sync.Mutex
	ops    []string
	builds map[string]string // build id → image tag
	tags   map[string]string // tag → digest
	// FailBuilds makes every build fail with this message.
	FailBuilds string
}

// NewImages starts the registry and the fake; they stop when the test
// ends. Docker Hub's python:3.13-slim (the demo tasks' base) is in the
// pull-through prefix.
func NewImages(t testing.TB) *Images {
	t.Helper()
	reg, err := localreg.Start(localreg.Options{BlobDir: t.TempDir(), Handler: requireBasic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	i := &Images{Registry: reg, Repository: "gauntlet-test-task-images", t: t,
		builds: map[string]string{}, tags: map[string]string{}}
	i.RepositoryURI = reg.Host + "/" + i.Repository
	i.Mirrors = "docker.io=" + reg.Host + "/docker-hub"
	srv := httptest.NewServer(http.HandlerFunc(i.serve))
	t.Cleanup(srv.Close)
	i.URL = srv.URL
	i.Python = i.Push("docker-hub/library/python:3.13-slim")
	return i
}

// requireBasic answers 401 with a Basic challenge unless the request
// carries the token's credential, as ECR does.
func requireBasic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != ecrUser || p != ecrPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="ecr"`)
			http.Error(w, "no basic auth credentials", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Push pushes a fresh linux/amd64 image to repoTag in the registry and
// returns its manifest digest.
func (i *Images) Push(repoTag string) string {
	i.t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		i.t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		i.t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		i.t.Fatal(err)
	}
	if err := i.Registry.Push(context.Background(), repoTag, img, remote.WithAuth(&authn.Basic{Username: ecrUser, Password: ecrPassword})); err != nil {
		i.t.Fatalf("push %s: %v", repoTag, err)
	}
	d, err := img.Digest()
	if err != nil {
		i.t.Fatal(err)
	}
	return d.String()
}

// Digest returns the manifest digest of repoTag in the registry, read with
// the ECR token ("" when it is not there).
func (i *Images) Digest(repoTag string) string {
	i.t.Helper()
	ref, err := name.ParseReference(i.Registry.Ref(repoTag))
	if err != nil {
		i.t.Fatal(err)
	}
	d, err := remote.Head(ref, remote.WithAuth(&authn.Basic{Username: ecrUser, Password: ecrPassword}))
	if err != nil {
		return ""
	}
	return d.Digest.String()
}

// Ops lists the ECR and CodeBuild operations called, in order.
func (i *Images) Ops() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.ops...)
}

// Pushed returns the digest a build pushed under tag ("" if none did).
func (i *Images) Pushed(tag string) string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.tags[tag]
}

// Vars returns the variables a function reading the images settings gets,
// with the ECR and CodeBuild endpoints.
func (i *Images) Vars() map[string]string {
	return map[string]string{
		"GAUNTLET_IMAGE_BUILD_PROJECT":        "gauntlet-test-images",
		"GAUNTLET_TASK_IMAGES_REPOSITORY":     i.Repository,
		"GAUNTLET_TASK_IMAGES_REPOSITORY_URI": i.RepositoryURI,
		"GAUNTLET_SANDBOX_MIRRORS":            i.Mirrors,
		"AWS_ENDPOINT_URL_ECR":                i.URL,
		"AWS_ENDPOINT_URL_CODEBUILD":          i.URL,
	}
}

func (i *Images) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	var req map[string]any
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(code, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"__type": code, "message": msg})
	}
	i.mu.Lock()
	i.ops = append(i.ops, op)
	i.mu.Unlock()
	switch op {
	case "GetAuthorizationToken":
		writeJSON(w, map[string]any{"authorizationData": []any{map[string]any{
			"authorizationToken": base64.StdEncoding.EncodeToString([]byte(ecrUser + ":" + ecrPassword)),
			"expiresAt":          float64(time.Now().Add(12 * time.Hour).Unix()),
			"proxyEndpoint":      "http://" + i.Registry.Host,
		}}})
	case "DescribeImages":
		ids, _ := req["imageIds"].([]any)
		if repo, _ := req["repositoryName"].(string); repo != i.Repository || len(ids) != 1 {
			fail("RepositoryNotFoundException", "The repository with name '"+repo+"' does not exist")
			return
		}
		tag, _ := ids[0].(map[string]any)["imageTag"].(string)
		i.mu.Lock()
		d, ok := i.tags[tag]
		i.mu.Unlock()
		if !ok {
			fail("ImageNotFoundException", "The image with imageId {imageTag:'"+tag+"'} does not exist")
			return
		}
		writeJSON(w, map[string]any{"imageDetails": []any{map[string]any{"imageDigest": d, "imageTags": []string{tag}}}})
	case "StartBuild":
		token, _ := req["idempotencyToken"].(string)
		tag := ""
		vars, _ := req["environmentVariablesOverride"].([]any)
		for _, v := range vars {
			if m, _ := v.(map[string]any); m["name"] == "IMAGE_TAG" {
				tag, _ = m["value"].(string)
			}
		}
		if tag == "" || token == "" {
			fail("InvalidInputException", "IMAGE_TAG and an idempotency token are required")
			return
		}
		id := "gauntlet-test-images:" + token
		i.mu.Lock()
		i.builds[id] = tag
		i.mu.Unlock()
		writeJSON(w, map[string]any{"build": map[string]any{"id": id, "buildStatus": "IN_PROGRESS"}})
	case "BatchGetBuilds":
		ids, _ := req["ids"].([]any)
		id, _ := ids[0].(string)
		i.mu.Lock()
		tag, ok := i.builds[id]
		failMsg := i.FailBuilds
		i.mu.Unlock()
		if !ok {
			writeJSON(w, map[string]any{"builds": []any{}, "buildsNotFound": []string{id}})
			return
		}
		status := "SUCCEEDED"
		if failMsg != "" {
			status = "FAILED"
		} else {
			d := i.Push(i.Repository + ":" + tag)
			i.mu.Lock()
			i.tags[tag] = d
			i.mu.Unlock()
		}
		writeJSON(w, map[string]any{"builds": []any{map[string]any{"id": id, "buildStatus": status, "buildComplete": true,
			"phases": []any{map[string]any{"phaseType": "BUILD", "phaseStatus": status,
				"contexts": []any{map[string]any{"message": failMsg}}}}}}})
	case "StopBuild":
		writeJSON(w, map[string]any{"build": map[string]any{"id": req["id"]}})
	default:
		fail("InvalidInputException", "unsupported "+op)
	}
}
