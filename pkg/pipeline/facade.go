package pipeline

import (
	"context"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// The pipeline's entry points on a Service: each hands its call to the
// stage that owns it (see that stage's method for what it does).

// Records returns the data model the stages write (for read paths such as
// the API).
func (s *Service) Records() *records.Store { return s.core.Records() }

// Offers is Submitter.Offers.
func (s *Service) Offers() Offers { return s.Submitter.Offers() }

// Validate is Submitter.Validate.
func (s *Service) Validate(ctx context.Context, req SubmitRequest) (Validation, error) {
	return s.Submitter.Validate(ctx, req)
}

// Submit is Submitter.Submit.
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	return s.Submitter.Submit(ctx, req)
}

// StartCheck is Submitter.StartCheck.
func (s *Service) StartCheck(ctx context.Context, ws, user, ref string) (records.EnvCheck, error) {
	return s.Submitter.StartCheck(ctx, ws, user, ref)
}

// Check is Submitter.Check.
func (s *Service) Check(ctx context.Context, ws, key, version string) (records.EnvCheck, error) {
	return s.Submitter.Check(ctx, ws, key, version)
}

// Plan is Planner.Plan.
func (s *Service) Plan(ctx context.Context, m PlanMessage) error { return s.Planner.Plan(ctx, m) }

// HandlePlan is Planner.HandlePlan.
func (s *Service) HandlePlan(ctx context.Context, body []byte) error {
	return s.Planner.HandlePlan(ctx, body)
}

// Stop is Stopper.Stop.
func (s *Service) Stop(ctx context.Context, runID, by string) (run.Run, error) {
	return s.Stopper.Stop(ctx, runID, by)
}

// Dispatch is Dispatcher.Dispatch.
func (s *Service) Dispatch(ctx context.Context, m SlotMessage) error {
	return s.Dispatcher.Dispatch(ctx, m)
}

// HandleSlot is Dispatcher.HandleSlot.
func (s *Service) HandleSlot(ctx context.Context, body []byte) error {
	return s.Dispatcher.HandleSlot(ctx, body)
}

// Grade is Grader.Grade.
func (s *Service) Grade(ctx context.Context, c sandbox.Completion) error {
	return s.Grader.Grade(ctx, c)
}

// HandleCompletion is Grader.HandleCompletion.
func (s *Service) HandleCompletion(ctx context.Context, body []byte) error {
	return s.Grader.HandleCompletion(ctx, body)
}

// Ingest is Ingester.Ingest.
func (s *Service) Ingest(ctx context.Context, m ResultMessage) error {
	return s.Ingester.Ingest(ctx, m)
}

// HandleResult is Ingester.HandleResult.
func (s *Service) HandleResult(ctx context.Context, body []byte) error {
	return s.Ingester.HandleResult(ctx, body)
}

// Recompute is Recomputer.Recompute.
func (s *Service) Recompute(ctx context.Context, changes []store.Change) error {
	return s.Recomputer.Recompute(ctx, changes)
}

// RecomputeRun is Recomputer.RecomputeRun.
func (s *Service) RecomputeRun(ctx context.Context, runID string) error {
	return s.Recomputer.RecomputeRun(ctx, runID)
}

// RecomputeLeaderboard is Recomputer.RecomputeLeaderboard.
func (s *Service) RecomputeLeaderboard(ctx context.Context, ws, key string) error {
	return s.Recomputer.RecomputeLeaderboard(ctx, ws, key)
}

// Watch is Watchdog.Watch.
func (s *Service) Watch(ctx context.Context) error { return s.Watchdog.Watch(ctx) }

// Reconcile is Reconciler.Reconcile.
func (s *Service) Reconcile(ctx context.Context) (Reconciled, error) {
	return s.Reconciler.Reconcile(ctx)
}
