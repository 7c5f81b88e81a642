// Command ingester is the gauntlet Lambda function that consumes the results queue:
// each message records one graded attempt result (pipeline.Ingester.Ingest).
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
	svc, err := cloud.StartIngester(context.Background(), logger)
	if err != nil {
		logger.Error("ingester: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(sqsq.NewBatchHandler(cloud.Body(svc.HandleResult), logger).Handle)
}
