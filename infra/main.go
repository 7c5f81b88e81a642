// Command infra is gauntlet's CDK app: it synthesizes the stateful and the
// stateless stack of one stage (context "stage", default "dev") into
// cdk.out. The CDK CLI runs it through cdk.json; it also runs directly,
// `CDK_OUTDIR=cdk.out go run ./infra [-c key=value]…`, reading the context
// defaults from cdk.json itself.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/console"
	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/stacks"
)

func main() {
	err := run(os.Args[1:])
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gauntlet infra:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, err := appContext("cdk.json", args)
	if err != nil {
		return err
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	cfg, err := config.Load(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		return err
	}
	if err := functions.CheckAssets(cfg.LambdaAssets, functions.Names); err != nil {
		return err
	}
	var site string
	if cfg.ConsoleHosting {
		if site, err = console.SiteDir(cfg.ConsoleDir); err != nil {
			return err
		}
		if site == "" && cfg.ConsoleDir != "" {
			fmt.Fprintf(os.Stderr, "gauntlet infra: no %s/ directory: the console bucket is created empty\n", cfg.ConsoleDir)
		}
	}
	if _, err := stacks.New(app, cfg, stacks.Options{Env: envFromCLI(), RunnerContext: ".", ConsoleSite: site}); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// appContext is the context of cdk.json (when present) overlaid with
// `-c key=value` arguments. The CDK CLI passes its own context through the
// environment, which the App gives precedence over these values.
func appContext(cdkJSON string, args []string) (map[string]any, error) {
	ctx, err := config.ReadCDKJSON(cdkJSON)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ctx = map[string]any{}
	case err != nil:
		return nil, err
	}
	if ctx == nil {
		ctx = map[string]any{}
	}
	for i := 0; i < len(args); i++ {
		if args[i] != "-c" && args[i] != "--context" {
			return nil, fmt.Errorf("unknown argument %q (want -c key=value)", args[i])
		}
		if i+1 == len(args) {
			return nil, fmt.Errorf("%s needs key=value", args[i])
		}
		i++
		key, value, ok := strings.Cut(args[i], "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("context argument %q: want key=value", args[i])
		}
		ctx[key] = value
	}
	return ctx, nil
}

// envFromCLI returns the account and region the CDK CLI resolved from the
// caller's credentials, or nil for environment-agnostic templates.
func envFromCLI() *awscdk.Environment {
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
}
