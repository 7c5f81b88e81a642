package benchsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/localsecret"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

const pullPassword = "ghp_benchsync-canary-42"

// withSecrets gives the env's service the real local secret store and
// sets a workspace record name = value, as `gauntlet secret set` does.
func withSecrets(t *testing.T, e *env) *localsecret.Store {
	t.Helper()
	st, err := localsecret.Open(filepath.Join(t.TempDir(), "secrets.json"))
	if err != nil {
		t.Fatal(err)
	}
	e.svc.secrets = st
	return st
}

func setSecret(t *testing.T, e *env, st *localsecret.Store, name, value string) {
	t.Helper()
	ref := secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: name}
	if err := st.Put(context.Background(), ref, secret.Value(value)); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.Workspaces.PutSecretRecord(context.Background(), records.SecretRecord{Workspace: ws, Scope: secret.Workspace, Name: name, SetBy: "u1", SetAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestAddChecksRegistryCredentials(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, writeImageTasks(t, []imageTask{{name: "pulls", environment: "docker_image = \"app:1\"\n"}}))
	st := withSecrets(t, e)
	setSecret(t, e, st, "GHCR_PULL", "bob:"+pullPassword)

	_, err := e.svc.Add(ctx, ws, "envs@1.0", benchmark.RegistryCredential{Registry: "ghcr.io", Secret: "NOT_SET"})
	var fe *benchmark.FieldError
	if !errors.As(err, &fe) || fe.Field != "registry_credentials[0].secret" || !strings.Contains(fe.Message, "NOT_SET") {
		t.Fatalf("Add(missing record) = %v, want a FieldError at registry_credentials[0].secret naming NOT_SET", err)
	}
	_, err = e.svc.Add(ctx, ws, "envs@1.0", benchmark.RegistryCredential{Registry: "https://ghcr.io", Secret: "GHCR_PULL"})
	if !errors.As(err, &fe) || fe.Field != "registry_credentials[0].registry" {
		t.Fatalf("Add(scheme) = %v, want a FieldError at registry_credentials[0].registry", err)
	}
	if list, err := e.rec.Benchmarks.Benchmarks(ctx, ws); err != nil || len(list) != 0 {
		t.Fatalf("benchmarks after refused adds: %+v, %v; want none", list, err)
	}

	b, err := e.svc.Add(ctx, ws, "envs@1.0", benchmark.RegistryCredential{Registry: "GHCR.io", Secret: "GHCR_PULL"})
	if err != nil {
		t.Fatal(err)
	}
	want := []benchmark.RegistryCredential{{Registry: "ghcr.io", Secret: "GHCR_PULL"}}
	if stored := e.benchmark(t, b.Key); fmt.Sprint(stored.RegistryCredentials) != fmt.Sprint(want) {
		t.Errorf("stored credentials %v, want %v", stored.RegistryCredentials, want)
	}
	if _, err := e.svc.Add(ctx, ws, "envs@1.0", want...); err != nil {
		t.Errorf("Add again with the same credentials = %v, want the stored record", err)
	}
	if _, err := e.svc.Add(ctx, ws, "envs@1.0"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "ghcr.io=GHCR_PULL") {
		t.Errorf("Add again without them = %v, want a conflict naming the stored ones", err)
	}
}

// credsResolver records the credentials each resolve is given and pins
// through the test registry.
type credsResolver struct {
	*testRegistry
	seen []PullCredential
}

func (c *credsResolver) Resolve(ctx context.Context, ref string, creds []PullCredential) (string, error) {
	c.seen = append(c.seen, creds...)
	return c.testRegistry.Resolve(ctx, ref, creds)
}

func TestSyncReadsRegistryCredentials(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	e := newEnv(t, writeImageTasks(t, []imageTask{{name: "pulls", environment: "docker_image = \"app:1\"\n"}}))
	var logs bytes.Buffer
	e.svc.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res := &credsResolver{testRegistry: reg}
	e.svc.envs = &Environments{Resolver: res}
	st := withSecrets(t, e)
	setSecret(t, e, st, "PULL", "bob:"+pullPassword)
	cred := benchmark.RegistryCredential{Registry: reg.host, Secret: "PULL"}

	b, err := e.svc.Add(ctx, ws, "envs@1.0", cred)
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady {
		t.Fatalf("sync: %s %q, want ready", got.Status, got.SyncError)
	}
	if len(res.seen) == 0 || res.seen[0].Registry != reg.host || res.seen[0].Username != "bob" || res.seen[0].Password.Reveal() != pullPassword {
		t.Errorf("resolver saw %v, want bob's login for %s", res.seen, reg.host)
	}
	if s := fmt.Sprintf("%v %+v %#v", res.seen, res.seen, res.seen); strings.Contains(s, pullPassword) {
		t.Errorf("a PullCredential prints its password: %s", s)
	}

	// A malformed value, then a deleted record: the sync fails naming the
	// registry and the record, never the value.
	for _, tc := range []struct {
		name, spec string
		change     func()
		want       string
	}{
		{"malformed", "envs@1.0", func() { setSecret(t, e, st, "PULL", "no-colon-"+pullPassword) }, "secret record PULL: the value is not username:password"},
		{"deleted", "envs@1.0", func() { st.Delete(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "PULL"}) }, "the workspace has no secret record PULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.svc.Delete(ctx, ws, b.Key); err != nil {
				t.Fatal(err)
			}
			setSecret(t, e, st, "PULL", "bob:"+pullPassword)
			if _, err := e.svc.Add(ctx, ws, tc.spec, cred); err != nil {
				t.Fatal(err)
			}
			tc.change()
			e.sync(t, b.Key)
			got := e.benchmark(t, b.Key)
			if got.Status != records.SyncFailed || !strings.Contains(got.SyncError, tc.want) || !strings.Contains(got.SyncError, reg.host) {
				t.Errorf("sync: %s %q, want failed saying %q and naming %s", got.Status, got.SyncError, tc.want, reg.host)
			}
			if strings.Contains(got.SyncError, pullPassword) {
				t.Errorf("the sync error shows the value: %q", got.SyncError)
			}
		})
	}
	if strings.Contains(logs.String(), pullPassword) {
		t.Error("the sync's log shows the password")
	}
	if !strings.Contains(logs.String(), "benchmark added") {
		t.Error("the sync's log was not captured")
	}
}
