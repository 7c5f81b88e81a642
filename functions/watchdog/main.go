// Command watchdog is the gauntlet Lambda function EventBridge Scheduler
// invokes every minute: it stops sandboxes past their deadline, re-queues
// slots stuck launching and re-sends lost plan messages
// (pipeline.Watchdog.Watch).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
)

func main() {
	logger := cloud.Logger(os.Stdout, os.Getenv)
	svc, err := cloud.StartWatchdog(context.Background(), logger)
	if err != nil {
		logger.Error("watchdog: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(cloud.Scheduled(svc.Watch, logger))
}
