// Command registrysync is the gauntlet Lambda function that syncs benchmark
// task lists from their registries: it consumes the sync queue
// (benchsync.Service.Sync) and is invoked hourly by EventBridge Scheduler.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
)

func main() {
	logger := cloud.Logger(os.Stdout, os.Getenv)
	p, err := cloud.Start(context.Background(), cloud.RegistrySync, logger)
	if err != nil {
		logger.Error("registrysync: cold start failed", "err", err)
		os.Exit(1)
	}
	svc, err := p.BenchSync()
	if err != nil {
		logger.Error("registrysync: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(cloud.NewSyncHandler(svc, logger).Handle)
}
