// Package kmskey creates the stacks' customer-managed KMS keys the one way
// they are all made: rotated yearly, with a deletion pending window, and
// destroyed with the stack unless retained. Who may use a key is up to the
// construct that owns it.
package kmskey

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Props configures a key.
type Props struct {
	// Description says what the key protects.
	Description string
	// PendingWindowDays is how long a deleted key can still be recovered (7 to 30).
	PendingWindowDays float64
	// Retain keeps the key when the stack is deleted.
	Retain bool
}

// New creates a rotated customer-managed key named id under scope.
func New(scope constructs.Construct, id string, props Props) awskms.Key {
	removal := awscdk.RemovalPolicy_DESTROY
	if props.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	return awskms.NewKey(scope, jsii.String(id), &awskms.KeyProps{
		Description:       jsii.String(props.Description),
		EnableKeyRotation: jsii.Bool(true),
		PendingWindow:     awscdk.Duration_Days(jsii.Number(props.PendingWindowDays)),
		RemovalPolicy:     removal,
	})
}
