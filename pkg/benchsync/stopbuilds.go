package benchsync

import (
	"context"
	"maps"
	"slices"
)

// BuildStopper is what a builder whose builds outlive the call that starts
// them (CodeBuild) may also do: stop builds by their handles
// (BuildRunning.Handle). A removed benchmark's parked sync stops its
// builds with it when its resume arrives, instead of letting them run to
// their end for nothing.
type BuildStopper interface {
	StopBuilds(ctx context.Context, handles []string) error
}

// stopRemovedBuilds stops the builds a parked sync or refresh of a
// benchmark that is gone was waiting on (msg's resume), when the builder
// can. Best effort: a failure is logged and the message is done with (a
// build left running ends at its own timeout and pushes an image nothing
// pins).
func (s *deps) stopRemovedBuilds(ctx context.Context, msg SyncMessage) {
	builds := msg.Resume.builds()
	if len(builds) == 0 || s.envs == nil {
		return
	}
	stopper, ok := s.envs.Builder.(BuildStopper)
	if !ok {
		return
	}
	handles := slices.Sorted(maps.Values(builds))
	if err := stopper.StopBuilds(ctx, handles); err != nil {
		s.log.WarnContext(ctx, "stop the image builds of a removed benchmark", "workspace", msg.Workspace, "key", msg.Key, "builds", handles, "err", err)
		return
	}
	s.log.InfoContext(ctx, "image builds of a removed benchmark stopped", "workspace", msg.Workspace, "key", msg.Key, "builds", handles)
}
