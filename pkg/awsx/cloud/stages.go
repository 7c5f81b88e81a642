package cloud

import (
	"context"
	"log/slog"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// Each pipeline function builds exactly its stage, from the ports of its
// row of the function table; a port the stage takes and the row leaves out
// fails the cold start (ErrNotWired), and TestStagePortsMatchTable keeps
// the rows and the stages' port structs equal.

func (p *Platform) options() pipeline.Options {
	// The operator's model gateway config, which the dispatcher hands the
	// sandbox tasks' runners too; submit refuses what they could not serve.
	models, err := p.Config.Models()
	if err != nil {
		// Load refused it already; a Platform built without Load falls
		// back to what the runners use without a config.
		if p.Logger != nil {
			p.Logger.Error("model gateway config", "err", err)
		}
		models = gateway.NewResolver()
	}
	return pipeline.Options{MaxSandboxes: p.Config.MaxSandboxes, Logger: p.Logger,
		CheckModel: models.CheckModel, CheckPriced: models.CheckPriced, HostsModels: models.HostsModels()}
}

// Submitter returns the submit stage (the API's runs and checks).
func (p *Platform) Submitter() (*pipeline.Submitter, error) {
	if err := wired("submitter", p.planWire()); err != nil {
		return nil, err
	}
	return pipeline.NewSubmitter(pipeline.SubmitterPorts{Table: p.Ports.Table, Plan: p.Ports.Plan}, p.options())
}

// Stopper returns the stop stage (the API's stop requests).
func (p *Platform) Stopper() (*pipeline.Stopper, error) {
	if err := wired("stopper", p.planWire()); err != nil {
		return nil, err
	}
	return pipeline.NewStopper(pipeline.StopperPorts{Table: p.Ports.Table, Plan: p.Ports.Plan}, p.options())
}

// Planner returns the plan stage (the planner function).
func (p *Platform) Planner() (*pipeline.Planner, error) {
	if err := wired("planner", p.planWire(), p.slotsWire(), p.sandboxesWire()); err != nil {
		return nil, err
	}
	return pipeline.NewPlanner(pipeline.PlannerPorts{Table: p.Ports.Table, Plan: p.Ports.Plan, Slots: p.Ports.Slots,
		Sandboxes: p.Ports.Sandboxes}, p.options())
}

// Dispatcher returns the dispatch stage (the dispatcher function).
func (p *Platform) Dispatcher() (*pipeline.Dispatcher, error) {
	if err := wired("dispatcher", p.slotsWire(), p.completionsWire(), p.resultsWire(), p.secretsWire(), p.sandboxesWire()); err != nil {
		return nil, err
	}
	return pipeline.NewDispatcher(pipeline.DispatcherPorts{Table: p.Ports.Table, Slots: p.Ports.Slots, Completions: p.Ports.Completions,
		Results: p.Ports.Results, Secrets: p.Ports.Secrets, Sandboxes: p.Ports.Sandboxes}, p.options())
}

// Grader returns the grade stage (the grader function).
func (p *Platform) Grader() (*pipeline.Grader, error) {
	if err := wired("grader", p.resultsWire(), p.blobsWire()); err != nil {
		return nil, err
	}
	return pipeline.NewGrader(pipeline.GraderPorts{Table: p.Ports.Table, Results: p.Ports.Results, Blobs: p.Ports.Blobs}, p.options())
}

// Ingester returns the ingest stage (the ingester function).
func (p *Platform) Ingester() (*pipeline.Ingester, error) {
	if err := wired("ingester", p.slotsWire()); err != nil {
		return nil, err
	}
	return pipeline.NewIngester(pipeline.IngesterPorts{Table: p.Ports.Table, Slots: p.Ports.Slots}, p.options())
}

// Recomputer returns the recompute stage (the leaderboard function).
func (p *Platform) Recomputer() (*pipeline.Recomputer, error) {
	return pipeline.NewRecomputer(pipeline.RecomputerPorts{Table: p.Ports.Table}, p.options())
}

// Watchdog returns the watchdog stage (the watchdog function).
func (p *Platform) Watchdog() (*pipeline.Watchdog, error) {
	if err := wired("watchdog", p.planWire(), p.slotsWire(), p.completionsWire(), p.sandboxesWire()); err != nil {
		return nil, err
	}
	return pipeline.NewWatchdog(pipeline.WatchdogPorts{Table: p.Ports.Table, Plan: p.Ports.Plan, Slots: p.Ports.Slots,
		Completions: p.Ports.Completions, Sandboxes: p.Ports.Sandboxes}, p.options())
}

// startStage is Start with the needs of one function, then its stage.
func startStage[S any](ctx context.Context, n Needs, logger *slog.Logger, stage func(*Platform) (S, error)) (S, error) {
	p, err := Start(ctx, n, logger)
	if err != nil {
		var zero S
		return zero, err
	}
	return stage(p)
}

// StartPlanner starts the planner function: its needs, then its stage.
func StartPlanner(ctx context.Context, logger *slog.Logger) (*pipeline.Planner, error) {
	return startStage(ctx, Planner, logger, (*Platform).Planner)
}

// StartDispatcher starts the dispatcher function: its needs, then its stage.
func StartDispatcher(ctx context.Context, logger *slog.Logger) (*pipeline.Dispatcher, error) {
	return startStage(ctx, Dispatcher, logger, (*Platform).Dispatcher)
}

// StartGrader starts the grader function: its needs, then its stage.
func StartGrader(ctx context.Context, logger *slog.Logger) (*pipeline.Grader, error) {
	return startStage(ctx, Grader, logger, (*Platform).Grader)
}

// StartIngester starts the ingester function: its needs, then its stage.
func StartIngester(ctx context.Context, logger *slog.Logger) (*pipeline.Ingester, error) {
	return startStage(ctx, Ingester, logger, (*Platform).Ingester)
}

// StartRecomputer starts the leaderboard function: its needs, then the
// recompute stage.
func StartRecomputer(ctx context.Context, logger *slog.Logger) (*pipeline.Recomputer, error) {
	return startStage(ctx, Leaderboard, logger, (*Platform).Recomputer)
}

// StartWatchdog starts the watchdog function: its needs, then its stage.
func StartWatchdog(ctx context.Context, logger *slog.Logger) (*pipeline.Watchdog, error) {
	return startStage(ctx, Watchdog, logger, (*Platform).Watchdog)
}
