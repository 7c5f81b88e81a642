package secrets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/secrets"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/secret/secrettest"
)

// smServer speaks Secrets Manager's JSON 1.1 protocol to the real SDK client:
// enough of CreateSecret, PutSecretValue, GetSecretValue and DeleteSecret to
// hold values by name, answering missing names as AWS does.
type smServer struct {
	mu       sync.Mutex
	values   map[string]string
	requests []map[string]any
	ops      []string
}

func (s *smServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	s.ops = append(s.ops, op)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	notFound := func() {
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
	}
	id, _ := req["SecretId"].(string)
	switch op {
	case "CreateSecret":
		name := req["Name"].(string)
		if _, ok := s.values[name]; ok {
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"__type":"ResourceExistsException","message":"exists"}`)
			return
		}
		s.values[name] = req["SecretString"].(string)
		_, _ = io.WriteString(w, `{"ARN":"arn:aws:secretsmanager:us-east-1:111122223333:secret:`+name+`","Name":"`+name+`"}`)
	case "PutSecretValue":
		if _, ok := s.values[id]; !ok {
			notFound()
			return
		}
		s.values[id] = req["SecretString"].(string)
		_, _ = io.WriteString(w, `{"Name":"`+id+`"}`)
	case "GetSecretValue":
		v, ok := s.values[id]
		if !ok {
			notFound()
			return
		}
		out, _ := json.Marshal(map[string]string{"Name": id, "SecretString": v})
		_, _ = w.Write(out)
	case "DeleteSecret":
		if _, ok := s.values[id]; !ok {
			notFound()
			return
		}
		delete(s.values, id)
		_, _ = io.WriteString(w, `{"Name":"`+id+`"}`)
	default:
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"__type":"InvalidRequestException"}`)
	}
}

func newStore(t *testing.T) (*secrets.Store, *smServer) {
	t.Helper()
	srv := &smServer{values: map[string]string{}}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	client := secretsmanager.New(secretsmanager.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	return secrets.New(client, "gauntlet/test/", "arn:aws:kms:us-east-1:111122223333:key/k1"), srv
}

func TestPutGetDeleteScopes(t *testing.T) {
	s, srv := newStore(t)
	ctx := context.Background()
	ws := secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "OPENAI_API_KEY"}
	mine := secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "alice", Name: "OPENAI_API_KEY"}
	theirs := secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "bob", Name: "OPENAI_API_KEY"}
	other := secret.Ref{Workspace: "ws2", Scope: secret.Workspace, Name: "OPENAI_API_KEY"}

	if err := s.Put(ctx, ws, "v-workspace"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, mine, "v-alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ws, "v-workspace-2"); err != nil { // overwrite goes through PutSecretValue
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  secret.Ref
		want secret.Value
		err  error
	}{
		{ws, "v-workspace-2", nil},
		{mine, "v-alice", nil},
		{theirs, "", secret.ErrNotFound},
		{other, "", secret.ErrNotFound},
	} {
		got, err := s.Get(ctx, tt.ref)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("Get(%+v) = %q, %v; want %q, %v", tt.ref, got.Reveal(), err, tt.want.Reveal(), tt.err)
		}
	}
	if got, want := s.Name(mine), "gauntlet/test/ws1/personal/alice/OPENAI_API_KEY"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	create := srv.requests[1] // first Put: PutSecretValue (not found) then CreateSecret
	if srv.ops[1] != "CreateSecret" || create["KmsKeyId"] != "arn:aws:kms:us-east-1:111122223333:key/k1" {
		t.Errorf("create request %s %v: want CreateSecret under the stack's KMS key", srv.ops[1], create)
	}
	if err := s.Delete(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ws); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	if _, err := s.Get(ctx, ws); !errors.Is(err, secret.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	last := srv.requests[len(srv.requests)-2]
	if last["ForceDeleteWithoutRecovery"] != true {
		t.Errorf("DeleteSecret = %v, want ForceDeleteWithoutRecovery", last)
	}
}

func TestValuesNeverInErrorsOrLogs(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	bad := secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "lower-case"}
	err := s.Put(ctx, bad, "sk-top-secret")
	if err == nil || strings.Contains(err.Error(), "sk-top-secret") {
		t.Fatalf("Put with a bad name = %v: want an error without the value", err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("put", "value", secret.Value("sk-top-secret"))
	if strings.Contains(buf.String(), "sk-top-secret") {
		t.Fatalf("log line %s shows the value", buf.String())
	}
}

// TestContract runs the secret-store contract suite the local adapter also
// passes, against the JSON-protocol server above.
func TestContract(t *testing.T) {
	secrettest.Run(t, func(t *testing.T) secret.Store {
		s, _ := newStore(t)
		return s
	})
}
