package run

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

// HarborSandboxImportPath is the environment import_path of a gauntlet
// trial's Harbor config: gauntlet's sandbox is none of Harbor's environment
// types, and Harbor cannot import it.
const HarborSandboxImportPath = "gauntlet.sandbox:Sandbox"

// harborNamespace derives the UUIDs that name a run in Harbor's files: the
// same run always gets the same job id, in result.json and in a download.
var harborNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://gauntlet-bench.dev/harbor-job"))

// HarborJobID is the UUID a run has as a Harbor job (JobResult.id, a trial
// config's job_id).
func HarborJobID(runID string) string {
	return uuid.NewSHA1(harborNamespace, []byte(runID)).String()
}

// TrialName is the Harbor trial name of one generation of a slot: also the
// name of its directory in a Harbor job directory, so it is one path
// segment. It reads as Harbor's own ("<task>__<suffix>"): the task as one
// segment (benchmark.TaskSegment: "org/name" becomes "org~name"), then
// agent index, attempt and generation, so two slots never share a name. A
// slot id that does not parse (a trial run by hand) is used with its '/'s
// replaced by '~'.
func TrialName(slotID string, generation int) string {
	gen := "g" + strconv.Itoa(generation)
	agent, task, attempt, err := ParseSlotID(slotID)
	if err != nil {
		return strings.ReplaceAll(slotID, "/", "~") + "__" + gen
	}
	return benchmark.TaskSegment(task) + "__" + strconv.Itoa(agent) + "-" + strconv.Itoa(attempt) + "-" + gen
}
