// Command registrysync is the gauntlet Lambda function that syncs benchmark
// task lists from their registries: it consumes the sync queue
// (benchsync.Service.Sync) and, invoked hourly by EventBridge Scheduler,
// enqueues a refresh of every benchmark whose last sync is older than
// GAUNTLET_SYNC_REFRESH_AFTER (benchsync.Service.Refresh).
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
	h, err := p.SyncHandler()
	if err != nil {
		logger.Error("registrysync: cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
