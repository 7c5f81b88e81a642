// Command dispatcher is the gauntlet Lambda function that consumes the slots queue:
// each message launches one slot's sandbox on ECS Fargate behind the
// concurrency gates (pipeline.Dispatcher.Dispatch).
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
	svc, err := cloud.StartDispatcher(context.Background(), logger)
	if err != nil {
		logger.Error("dispatcher: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(sqsq.NewBatchHandler(cloud.Body(svc.HandleSlot), logger).Handle)
}
