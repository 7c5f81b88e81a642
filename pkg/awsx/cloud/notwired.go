package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// ErrNotWired reports a call to a port this function was not configured
// with: its Needs (and the CDK stack's environment and IAM grants for it)
// leave the port out. The error names the variable that would wire it.
var ErrNotWired = errors.New("port not wired into this function")

func notWired(port, env string) error {
	return fmt.Errorf("%s: %w (set %s)", port, ErrNotWired, env)
}

type notWiredQueue struct{ port, env string }

var _ queue.Queue = notWiredQueue{}

func (q notWiredQueue) Send(context.Context, ...queue.Outgoing) error { return notWired(q.port, q.env) }
func (q notWiredQueue) Receive(context.Context, int, time.Duration, time.Duration) ([]queue.Message, error) {
	return nil, notWired(q.port, q.env)
}
func (q notWiredQueue) Delete(context.Context, string) error { return notWired(q.port, q.env) }
func (q notWiredQueue) ChangeVisibility(context.Context, string, time.Duration) error {
	return notWired(q.port, q.env)
}

type notWiredBlobs struct{}

var _ blob.Store = notWiredBlobs{}

func (notWiredBlobs) Put(context.Context, string, io.Reader) error {
	return notWired("blob store", EnvBucket)
}
func (notWiredBlobs) Get(context.Context, string) (io.ReadCloser, error) {
	return nil, notWired("blob store", EnvBucket)
}
func (notWiredBlobs) List(context.Context, string) ([]blob.Info, error) {
	return nil, notWired("blob store", EnvBucket)
}
func (notWiredBlobs) Delete(context.Context, string) error { return notWired("blob store", EnvBucket) }

type notWiredSecrets struct{}

var _ secret.Store = notWiredSecrets{}

func (notWiredSecrets) Put(context.Context, secret.Ref, secret.Value) error {
	return notWired("secret store", EnvSecretsPrefix)
}
func (notWiredSecrets) Get(context.Context, secret.Ref) (secret.Value, error) {
	return "", notWired("secret store", EnvSecretsPrefix)
}
func (notWiredSecrets) Delete(context.Context, secret.Ref) error {
	return notWired("secret store", EnvSecretsPrefix)
}

type notWiredSandboxes struct{}

var _ sandbox.Driver = notWiredSandboxes{}

func (notWiredSandboxes) Launch(context.Context, sandbox.Spec) (sandbox.Handle, error) {
	return sandbox.Handle{}, notWired("sandbox driver", EnvCluster)
}
func (notWiredSandboxes) Stop(context.Context, string) error {
	return notWired("sandbox driver", EnvCluster)
}
func (notWiredSandboxes) List(context.Context, string) ([]sandbox.Handle, error) {
	return nil, notWired("sandbox driver", EnvCluster)
}
