// Command api is the gauntlet Lambda function behind the HTTP API (API
// Gateway, payload format 2.0): it serves the same http.Handler as
// `gauntlet local`, through aws-lambda-go-api-proxy's v2 adapter, and
// checks every caller's JWT again after API Gateway's authorizer.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
)

func main() {
	logger := cloud.Logger(os.Stdout, os.Getenv)
	p, err := cloud.Start(context.Background(), cloud.API, logger)
	if err != nil {
		logger.Error("api: cold start failed", "err", err)
		os.Exit(1)
	}
	h, err := p.API()
	if err != nil {
		logger.Error("api: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
}
