package stacks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/stacks"
)

const (
	testGatewayConfig   = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"
	testHostedKeySecret = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gauntlet/dev/hosted-key-AbCdEf"
)

// The dev stage is synthesized once per test binary (a synth takes seconds)
// with cdk-nag applied; every test reads these.
var (
	stage             *stacks.Stage
	cfg               config.Config
	statefulTemplate  assertions.Template
	statelessTemplate assertions.Template
	statefulJSON      map[string]any
	statelessJSON     map[string]any
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	assets, err := os.MkdirTemp("", "gauntlet-lambda-assets-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(assets)
	if err := infratest.PlaceholderAssets(assets, functions.Names); err != nil {
		return 0, err
	}
	ctx, err := config.ReadCDKJSON("../../cdk.json")
	if err != nil {
		return 0, err
	}
	ctx[config.KeyLambdaAssets] = assets
	// The operator's model gateway config with a hosted endpoint whose key
	// is a Secrets Manager secret: its variables and its grant are pinned.
	gatewayFile := filepath.Join(assets, "model-gateway.toml")
	if err := os.WriteFile(gatewayFile, []byte(testGatewayConfig), 0o600); err != nil {
		return 0, err
	}
	ctx[config.KeyModelGatewayConfig] = gatewayFile
	ctx[config.KeyHostedKeySecretARN] = testHostedKeySecret
	outdir, err := os.MkdirTemp("", "gauntlet-cdk-out-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(outdir)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(outdir)})
	cfg, err = config.Load(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		return 0, err
	}
	stage, err = stacks.New(app, cfg, stacks.Options{RunnerContext: "../.."})
	if err != nil {
		return 0, err
	}
	infratest.AddNag(app)
	synthErr = synthesize()
	return m.Run(), nil
}

// synthErr is why synthesis failed (for instance cdk-nag errors, which fail
// validation); every test reports it through templates.
var synthErr error

func synthesize() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("synthesis failed (cdk-nag findings are printed above): %v", r)
		}
	}()
	statefulTemplate = assertions.Template_FromStack(stage.Stateful.Stack, nil)
	statelessTemplate = assertions.Template_FromStack(stage.Stateless.Stack, nil)
	statefulJSON = *statefulTemplate.ToJSON()
	statelessJSON = *statelessTemplate.ToJSON()
	return nil
}

// synthesized stops the test when the shared synthesis failed.
func synthesized(t *testing.T) {
	t.Helper()
	if synthErr != nil {
		t.Fatal(synthErr)
	}
}
