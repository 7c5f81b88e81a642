// Command grader is the gauntlet Lambda function that consumes the completions queue:
// each message (an EventBridge ECS Task State Change event, or a completion
// the dispatcher or watchdog sent) is graded into an attempt result
// (pipeline.Grader.Grade).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
)

func main() {
	logger := cloud.Logger(os.Stdout, os.Getenv)
	svc, err := cloud.StartGrader(context.Background(), logger)
	if err != nil {
		logger.Error("grader: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(sqsq.NewBatchHandler(cloud.Completions(svc.Grade, logger), logger).Handle)
}
