package api

import (
	"net/http"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func (h *runsAPI) listHarnesses(w http.ResponseWriter, _ *http.Request) error {
	rows := harness.All()
	var offers pipeline.Offers
	if h.runs != nil {
		offers = h.runs.Offers()
	}
	out := v1.HarnessList{Harnesses: make([]v1.HarnessInfo, 0, len(rows)), HostedModels: offers.HostsModels}
	for _, row := range rows {
		reason, unavailable := offers.Unavailable[row.Name]
		out.Harnesses = append(out.Harnesses, v1.HarnessInfo{Name: row.Name, Description: row.Description, Version: row.Version,
			TakesCommand: row.Name == runconfig.CommandHarness, ModelFree: row.ModelFree, WireAPI: row.WireAPI, KeyEnv: row.KeyEnv, MemoryMB: row.MemoryMB,
			Available: !unavailable, Reason: reason})
	}
	return writeJSON(w, http.StatusOK, out)
}
