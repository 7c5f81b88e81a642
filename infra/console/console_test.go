package console_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/console"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func TestSiteDir(t *testing.T) {
	root := t.TempDir()
	withDist := filepath.Join(root, "built")
	plain := filepath.Join(root, "plain")
	for _, d := range []string{filepath.Join(withDist, "dist"), plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ dir, want string }{
		{withDist, filepath.Join(withDist, "dist")},
		{plain, plain},
		{filepath.Join(root, "absent"), ""},
	}
	for _, tt := range tests {
		got, err := console.SiteDir(tt.dir)
		if err != nil || got != tt.want {
			t.Errorf("SiteDir(%q) = %q, %v, want %q", tt.dir, got, err, tt.want)
		}
	}
}

// TestConsoleWithSite deploys a built site: the upload, the distribution
// with origin access control, and cdk-nag with the upload handler included.
func TestConsoleWithSite(t *testing.T) {
	defer infratest.Recover(t)
	site := t.TempDir()
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte("<!doctype html><title>gauntlet</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	infratest.AddNag(app)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	console.New(stack, "Console", console.Props{SiteDir: site})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("Custom::CDKBucketDeployment"), jsii.Number(1))
	tmpl.ResourceCountIs(jsii.String("AWS::CloudFront::OriginAccessControl"), jsii.Number(1))
	tmpl.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"DefaultRootObject": "index.html"}),
	})
	// Only CloudFront (through origin access control) may read the site bucket.
	tmpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    "s3:GetObject",
			"Principal": map[string]any{"Service": "cloudfront.amazonaws.com"},
			"Condition": map[string]any{"StringEquals": map[string]any{"AWS:SourceArn": assertions.Match_AnyValue()}},
		})})},
	})
	for _, f := range infratest.NagFindings(stack) {
		t.Errorf("unsuppressed cdk-nag finding %s", f)
	}
}
