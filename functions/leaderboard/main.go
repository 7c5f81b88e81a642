// Command leaderboard is the gauntlet Lambda function on the table's
// DynamoDB stream: it recomputes run metrics and benchmark leaderboards from
// the changed items (pipeline.Recomputer.Recompute).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
)

func main() {
	logger := cloud.Logger(os.Stdout, os.Getenv)
	svc, err := cloud.StartRecomputer(context.Background(), logger)
	if err != nil {
		logger.Error("leaderboard: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(cloud.NewStreamHandler(svc.Recompute, logger).Handle)
}
