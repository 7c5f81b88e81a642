// Command deploycheck checks a deployed stage from the AWS APIs' own
// describe calls: both stacks and every one of their resources complete
// (as many as the synthesized templates in cdk.out hold), the table and its
// stream, each work queue with its dead-letter queue, every function's
// environment (the variables of its template, each value pointing at
// something that exists), the event-source mappings (the leaderboard's with
// its stream filter and failure queue) and the sandbox task definition.
// scripts/deploy-local.sh runs it against moto_server; it honours the SDK's
// AWS_ENDPOINT_URL and credentials, so it checks a real account the same way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
)

func main() {
	var o options
	flag.StringVar(&o.stage, "stage", "dev", "stage to check")
	flag.StringVar(&o.cdkOut, "cdk-out", "cdk.out", "cloud assembly the stage was deployed from")
	flag.StringVar(&o.runnerImage, "runner-image", "", "the runner image the stage was deployed with (context runnerImage; empty: not checked)")
	flag.StringVar(&o.agentsImage, "agents-image", "", "the agents image the stage was deployed with (context agentsImage; empty: not checked)")
	flag.StringVar(&o.consoleOrigin, "console-origin", "", "context consoleOrigin (empty: not checked)")
	flag.StringVar(&o.jwtIssuer, "jwt-issuer", "", "context jwtIssuer (empty: not checked)")
	flag.StringVar(&o.jwtAudience, "jwt-audience", "", "context jwtAudience (empty: not checked)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploycheck: AWS config:", err)
		os.Exit(1)
	}
	c := newChecker(cfg, o)
	c.run(ctx)
	if c.failed > 0 {
		fmt.Fprintf(os.Stderr, "deploycheck: %d of %d checks failed\n", c.failed, c.total)
		os.Exit(1)
	}
	fmt.Printf("deploycheck: all %d checks passed (%d notes: what the API did not show)\n", c.total, c.notes)
}
