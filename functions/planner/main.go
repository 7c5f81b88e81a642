// Command planner is the gauntlet Lambda function that consumes the plan queue:
// each message fans a run out into slots (pipeline.Planner.Plan).
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
	svc, err := cloud.StartPlanner(context.Background(), logger)
	if err != nil {
		logger.Error("planner: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(sqsq.NewBatchHandler(cloud.Body(svc.HandlePlan), logger).Handle)
}
