// Package sandboxkey provisions the sandbox KMS key: a customer-managed key
// (rotated yearly) that wraps the data key the dispatcher draws for each
// sandbox launch to seal that launch's secrets. Every use must carry the
// encryption context gauntlet:launch (the launch id): the dispatcher may
// only generate data keys under it, the sandbox task role may only decrypt
// under it, and nothing else may use the key at all.
package sandboxkey

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/kmskey"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

// Props configures the key.
type Props struct {
	// Stage names the deployment (in the key's description).
	Stage string
	// Retain keeps the key when the stack is deleted.
	Retain bool
}

// Key is the sandbox KMS key.
type Key struct {
	constructs.Construct
	Key awskms.Key
}

// New creates the key under scope.
func New(scope constructs.Construct, id string, props Props) *Key {
	c := constructs.NewConstruct(scope, jsii.String(id))
	key := kmskey.New(c, "Key", kmskey.Props{
		Description:       fmt.Sprintf("gauntlet %s: wraps the per-launch data keys that seal sandbox secrets", props.Stage),
		PendingWindowDays: 7,
		Retain:            props.Retain,
	})
	return &Key{Construct: c, Key: key}
}

// GrantGenerate lets grantee (the dispatcher) draw data keys bound to a launch.
func (k *Key) GrantGenerate(grantee awsiam.IRole) {
	k.grant(grantee, "kms:GenerateDataKey")
}

// GrantDecrypt lets grantee (the sandbox task role) unwrap data keys bound
// to a launch; its only permission.
func (k *Key) GrantDecrypt(grantee awsiam.IRole) {
	k.grant(grantee, "kms:Decrypt")
}

// grant allows action on the key only with the launch encryption context:
// its key present (Null false) and no other key in the context.
func (k *Key) grant(grantee awsiam.IRole, action string) {
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(action),
		Resources: &[]*string{k.Key.KeyArn()},
		Conditions: &map[string]any{
			"ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": []string{sealed.ContextKey}},
			"Null":                      map[string]any{"kms:EncryptionContext:" + sealed.ContextKey: "false"},
		},
	}))
}
