package pipeline

import "context"

// SetBoardReadHook makes every leaderboard recompute call f after it read
// the runs and before it stores its board; the returned func restores the
// previous hook. Set it only while no recompute runs.
func SetBoardReadHook(f func(ws, key string, watermark int64)) (restore func()) {
	old := boardReadHook
	boardReadHook = f
	return func() { boardReadHook = old }
}

// Settle is settle, which ingest calls after recording a slot's final
// result of agent.
func (s *Service) Settle(ctx context.Context, runID string, agent int) error {
	return s.core.settle(ctx, runID, agent)
}
