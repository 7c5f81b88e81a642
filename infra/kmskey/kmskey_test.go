package kmskey_test

import (
	"os"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/kmskey"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// TestNew: every key is rotated, carries its description and pending
// window, and is retained or deleted with the stack as asked.
func TestNew(t *testing.T) {
	tests := []struct {
		name       string
		props      kmskey.Props
		wantPolicy string
	}{
		{"destroyed", kmskey.Props{Description: "test key", PendingWindowDays: 7}, "Delete"},
		{"retained", kmskey.Props{Description: "kept key", PendingWindowDays: 30, Retain: true}, "Retain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer infratest.Recover(t)
			app := awscdk.NewApp(nil)
			stack := awscdk.NewStack(app, jsii.String("Keys"), nil)
			kmskey.New(stack, "Key", tt.props)
			tmpl := assertions.Template_FromStack(stack, nil)
			tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(1))
			tmpl.HasResource(jsii.String("AWS::KMS::Key"), map[string]any{
				"DeletionPolicy":      tt.wantPolicy,
				"UpdateReplacePolicy": tt.wantPolicy,
				"Properties": map[string]any{
					"Description":         tt.props.Description,
					"EnableKeyRotation":   true,
					"PendingWindowInDays": tt.props.PendingWindowDays,
				},
			})
		})
	}
}
