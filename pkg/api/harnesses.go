package api

import (
	"net/http"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func (h *Handler) listHarnesses(w http.ResponseWriter, _ *http.Request) error {
	rows := harness.All()
	out := v1.HarnessList{Harnesses: make([]v1.HarnessInfo, 0, len(rows))}
	for _, row := range rows {
		out.Harnesses = append(out.Harnesses, v1.HarnessInfo{Name: row.Name, Description: row.Description, Version: row.Version,
			TakesCommand: row.Name == runconfig.CommandHarness, ModelFree: row.ModelFree, WireAPI: row.WireAPI, KeyEnv: row.KeyEnv})
	}
	return writeJSON(w, http.StatusOK, out)
}
