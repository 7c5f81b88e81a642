// Package secrets provisions where workspace secret records live: a
// customer-managed KMS key (rotated yearly) that encrypts the Secrets Manager
// secrets the API creates under the stage's name prefix, and the grants that
// let a function manage those secrets without reading them, or read them.
package secrets

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/gauntlet-bench/gauntlet/infra/kmskey"
)

// Props configures the secret store.
type Props struct {
	// Stage names the deployment; secret names start with "gauntlet/<stage>/".
	Stage string
	// Retain keeps the key when the stack is deleted (deleting it makes every
	// secret encrypted with it unreadable).
	Retain bool
}

// Store is the KMS key and the secret-name prefix.
type Store struct {
	constructs.Construct
	// Key encrypts every secret under Prefix.
	Key awskms.Key
	// Prefix starts the name of every secret of this stage.
	Prefix string
}

// Prefix returns the secret-name prefix of a stage.
func Prefix(stage string) string { return fmt.Sprintf("gauntlet/%s/", stage) }

// New creates the key under scope.
func New(scope constructs.Construct, id string, props Props) *Store {
	c := constructs.NewConstruct(scope, jsii.String(id))
	key := kmskey.New(c, "Key", kmskey.Props{
		Description:       fmt.Sprintf("gauntlet %s: encrypts workspace secret values in Secrets Manager", props.Stage),
		PendingWindowDays: 30,
		Retain:            props.Retain,
	})
	return &Store{Construct: c, Key: key, Prefix: Prefix(props.Stage)}
}

// SecretsARN is the ARN pattern of every secret under the prefix (Secrets
// Manager appends a random suffix to each name).
func (s *Store) SecretsARN() *string {
	return awscdk.Stack_Of(s.Construct).FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("secretsmanager"),
		Resource:     jsii.String("secret"),
		ResourceName: jsii.String(s.Prefix + "*"),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// GrantManage lets grantee create, overwrite, describe and delete secrets
// under the prefix, encrypting with the key, but never read a value.
func (s *Store) GrantManage(grantee awsiam.IRole) {
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("secretsmanager:CreateSecret", "secretsmanager:PutSecretValue",
			"secretsmanager:DeleteSecret", "secretsmanager:DescribeSecret"),
		Resources: &[]*string{s.SecretsARN()},
	}))
	s.grantKey(grantee, "kms:GenerateDataKey", "kms:Encrypt")
	s.suppressPrefix(grantee)
}

// GrantRead lets grantee read secret values under the prefix, decrypting with the key.
func (s *Store) GrantRead(grantee awsiam.IRole) {
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: &[]*string{s.SecretsARN()},
	}))
	s.grantKey(grantee, "kms:Decrypt")
	s.suppressPrefix(grantee)
}

// suppressPrefix records why the secret ARN ends in a wildcard (cdk-nag AwsSolutions-IAM5).
func (s *Store) suppressPrefix(grantee awsiam.IRole) {
	cdknag.NagSuppressions_AddResourceSuppressions(grantee, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Workspace secrets are created at run time under the stage prefix, and Secrets Manager appends a random suffix to every name; the grant covers only that prefix."),
		AppliesTo: &[]any{fmt.Sprintf("Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:%s*", s.Prefix)},
	}}, jsii.Bool(true))
}

// grantKey allows key actions only when Secrets Manager makes the call.
func (s *Store) grantKey(grantee awsiam.IRole, actions ...string) {
	stack := awscdk.Stack_Of(s.Construct)
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{s.Key.KeyArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{
				"kms:ViaService": fmt.Sprintf("secretsmanager.%s.amazonaws.com", *stack.Region()),
			},
		},
	}))
}
