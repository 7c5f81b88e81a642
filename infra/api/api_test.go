package api_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/api"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func handler(t *testing.T, stack awscdk.Stack) awslambda.IFunction {
	t.Helper()
	root := t.TempDir()
	if err := infratest.PlaceholderAssets(root, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	return awslambda.NewFunction(stack, jsii.String("Handler"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
		Code: awslambda.Code_FromAsset(jsii.String(filepath.Join(root, "api")), nil),
	})
}

func TestNewRejects(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	fn := handler(t, stack)
	tests := []struct {
		name    string
		props   api.Props
		wantErr string
	}{
		{"no handler", api.Props{ThrottleRate: 1, ThrottleBurst: 1}, "handler function is required"},
		{"issuer without audience", api.Props{Handler: fn, JWTIssuer: "https://idp.example.com/", ThrottleRate: 1, ThrottleBurst: 1}, "must be set together"},
		{"no throttle", api.Props{Handler: fn}, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := api.New(stack, "Api", tt.props); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New(%s) error = %v, want %q", tt.name, err, tt.wantErr)
			}
		})
	}
}

// TestExternalIssuer: with an issuer from context no Cognito pool is created
// and the authorizer checks exactly that issuer and audience.
func TestExternalIssuer(t *testing.T) {
	defer infratest.Recover(t)
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	a, err := api.New(stack, "Api", api.Props{
		Handler: handler(t, stack), JWTIssuer: "https://idp.example.com/", JWTAudience: "gauntlet-cli",
		CORSOrigin: jsii.String("https://console.example.com"), ThrottleRate: 10, ThrottleBurst: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.UserPool != nil {
		t.Error("UserPool != nil with an external issuer")
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::Cognito::UserPool"), jsii.Number(0))
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
		"JwtConfiguration": map[string]any{"Issuer": "https://idp.example.com/", "Audience": []any{"gauntlet-cli"}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{
		"CorsConfiguration": assertions.Match_ObjectLike(&map[string]any{"AllowOrigins": []any{"https://console.example.com"}}),
	})
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
		"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": 10, "ThrottlingBurstLimit": 20},
	})
}
