package api

import (
	"archive/zip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Download parts (?type=).
const (
	DownloadSummary   = "summary"
	DownloadResults   = "results"
	DownloadArtifacts = "artifacts"
	DownloadLogs      = "logs"
	DownloadAll       = "all"
)

// download is one zip export of a run, as a snapshot of what is stored.
type download struct {
	h       *runsAPI
	run     run.Run
	agents  []run.Agent
	results []run.Result // final results, in slot order
	retries int          // results a retry replaced
}

func (h *runsAPI) download(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rn, err := h.scope.ownRun(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	kind := r.URL.Query().Get("type")
	if kind == "" {
		kind = DownloadAll
	}
	switch kind {
	case DownloadSummary, DownloadResults, DownloadArtifacts, DownloadLogs, DownloadAll:
	default:
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "type %q must be summary, results, artifacts, logs or all", kind)
	}
	format := r.URL.Query().Get("format")
	switch format {
	case "", FormatGauntlet:
		format = FormatGauntlet
	case FormatHarbor:
		if kind != DownloadAll {
			return errorf(http.StatusBadRequest, v1.CodeBadRequest, "format harbor is a whole job directory: it takes type all, not %q", kind)
		}
	default:
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "format %q must be gauntlet or harbor", format)
	}
	if rn.Status == run.Pending || rn.Status == run.Queued {
		return errorf(http.StatusConflict, v1.CodeConflict, "run %s is %s: nothing has run yet; download once it is running", rn.ID, rn.Status)
	}
	d := download{h: h, run: rn}
	if d.agents, err = h.recs.Agents(ctx, rn.ID); err != nil {
		return fmt.Errorf("load agents of run %s: %w", rn.ID, err)
	}
	all, err := h.recs.AllResults(ctx, rn.ID)
	if err != nil {
		return fmt.Errorf("load results of run %s: %w", rn.ID, err)
	}
	for _, res := range all {
		if res.Final() {
			d.results = append(d.results, res)
		} else {
			d.retries++
		}
	}
	w.Header().Set("Content-Type", "application/zip")
	file := safeFileName(rn.Name) + "-" + kind + ".zip"
	write := func() error { return d.write(ctx, zip.NewWriter(w), kind) }
	if format == FormatHarbor {
		file = safeFileName(rn.Name) + "-harbor.zip"
		write = func() error {
			zw := zip.NewWriter(w)
			if err := d.harborJob(ctx, zw); err != nil {
				return err
			}
			return zw.Close()
		}
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", file))
	w.WriteHeader(http.StatusOK)
	if err := write(); err != nil {
		h.log.WarnContext(ctx, "download cut short", "request_id", requestID(ctx), "run_id", rn.ID, "err", err)
	}
	return nil
}

func (d *download) write(ctx context.Context, zw *zip.Writer, kind string) error {
	parts := []struct {
		name  string
		write func(context.Context, *zip.Writer) error
	}{
		{DownloadSummary, d.summary},
		{DownloadResults, d.resultsCSV},
		{DownloadLogs, d.logs},
		{DownloadArtifacts, d.artifacts},
	}
	for _, p := range parts {
		if kind != DownloadAll && kind != p.name {
			continue
		}
		if err := p.write(ctx, zw); err != nil {
			return err
		}
	}
	return zw.Close()
}

func create(zw *zip.Writer, name string) (io.Writer, error) {
	return zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now().UTC()})
}

// The usage_source column of the CSVs: the model gateway metered the
// tokens and cost, or the agent reported them itself (its usage.json);
// empty when there were none.
const (
	usageMetered      = "metered"
	usageSelfReported = "self_reported"
)

func (d *download) summary(ctx context.Context, zw *zip.Writer) error {
	summaries, _, err := d.h.runSummaries(ctx, d.run, d.agents)
	if err != nil {
		return err
	}
	f, err := create(zw, "summary.csv")
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	_ = cw.Write([]string{"run_id", "run_name", "agent", "agent_label", "harness", "model", "status", "tasks", "scored_attempts",
		"passes", "pass1", "pass1_ci_low", "pass1_ci_high", "pass_at_k_k", "pass_at_k", "cost_per_task_usd",
		"time_per_task_sec", "tokens_per_task", "usage_source"})
	for i, a := range d.agents {
		s := summaries[i]
		at, err := d.h.recs.AgentTally(ctx, d.run.ID, a.Index)
		if err != nil {
			return fmt.Errorf("load tally of run %s agent %d: %w", d.run.ID, a.Index, err)
		}
		usage := ""
		switch {
		case at.UsageSelfReported > 0:
			usage = usageSelfReported
		case at.InputTokens > 0 || at.OutputTokens > 0 || at.CostMicroUSD > 0:
			usage = usageMetered
		}
		m := metricsOf(s)
		k, passK := "", ""
		if m.PassAtK != nil {
			k, passK = strconv.Itoa(m.PassAtK.K), num(m.PassAtK.Value)
		}
		row := []string{d.run.ID, d.run.Name, strconv.Itoa(a.Index), a.Label(), a.Harness, a.Model, string(a.Status),
			strconv.Itoa(s.Tasks), strconv.Itoa(s.ScoredAttempts), strconv.Itoa(s.Passes)}
		row = append(row, estimateCells(m.Pass1)...)
		row = append(row, k, passK, estimateValue(m.CostPerTask), estimateValue(m.TimePerTask), estimateValue(m.TokensPerTask), usage)
		if err := cw.Write(cells(row)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (d *download) resultsCSV(ctx context.Context, zw *zip.Writer) error {
	f, err := create(zw, "results.csv")
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	_ = cw.Write([]string{"result_id", "agent", "agent_label", "task", "attempt", "generation", "outcome", "error_class",
		"reward", "input_tokens", "cache_tokens", "output_tokens", "cost_usd", "duration_sec", "message",
		"judge_model", "judge_calls", "judge_input_tokens", "judge_cache_tokens", "judge_output_tokens", "judge_cost_usd", "usage_source"})
	for _, res := range d.results {
		v := resultView(res, d.agents)
		reward := ""
		if res.Reward != nil {
			reward = num(*res.Reward)
		}
		row := []string{v.ID, strconv.Itoa(v.Agent), v.AgentLabel, v.Task, strconv.Itoa(v.Attempt), strconv.Itoa(v.Generation),
			v.Outcome, v.ErrorClass, reward, strconv.FormatInt(v.Tokens.Input, 10), strconv.FormatInt(v.Tokens.Cache, 10),
			strconv.FormatInt(v.Tokens.Output, 10), num(v.CostUSD), num(v.DurationSec), v.Message}
		// The judge's use has columns of its own: never the agent's tokens or cost.
		if j := v.Judge; j != nil {
			row = append(row, j.Model, strconv.FormatInt(j.Calls, 10), strconv.FormatInt(j.Tokens.Input, 10),
				strconv.FormatInt(j.Tokens.Cache, 10), strconv.FormatInt(j.Tokens.Output, 10), num(j.CostUSD))
		} else {
			row = append(row, "", "", "", "", "", "")
		}
		switch {
		case res.UsageSelfReported:
			row = append(row, usageSelfReported)
		case res.UsageReported || res.CostReported:
			row = append(row, usageMetered)
		default:
			row = append(row, "")
		}
		if err := cw.Write(cells(row)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (d *download) logs(ctx context.Context, zw *zip.Writer) error {
	f, err := create(zw, "logs.txt")
	if err != nil {
		return err
	}
	cursor := ""
	for {
		lines, next, err := d.h.recs.Logs(ctx, d.run.ID, cursor, maxLimit)
		if err != nil {
			return fmt.Errorf("list logs of run %s: %w", d.run.ID, err)
		}
		for _, l := range lines {
			if _, err := io.WriteString(f, v1.FormatLogLine(l.At, l.Level, l.Step, l.Slot, l.Message)+"\n"); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// FormatLogLine renders a run log line as logs.txt and `gauntlet runs logs`
// show it.
func FormatLogLine(at time.Time, level, step, slot, msg string) string {
	s := at.UTC().Format(time.RFC3339Nano) + " " + strings.ToUpper(level) + " " + step
	if slot != "" {
		s += " [" + slot + "]"
	}
	return s + " " + msg
}

func (d *download) artifacts(ctx context.Context, zw *zip.Writer) error {
	for _, res := range d.results {
		if res.ArtifactsPrefix == "" {
			continue
		}
		infos, err := d.h.blobs.List(ctx, res.ArtifactsPrefix)
		if err != nil {
			return fmt.Errorf("list artifacts of %s: %w", res.SlotID, err)
		}
		// One directory per attempt: a task named "org/name" is the one
		// segment "org~name" (benchmark.TaskSegment), not two directories.
		dir := "artifacts/" + v1.ResultID(res.Agent, res.Attempt, benchmark.TaskSegment(res.Task)) + "/"
		for _, info := range infos {
			if err := d.copyBlob(ctx, zw, info.Key, dir+strings.TrimPrefix(info.Key, res.ArtifactsPrefix)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *download) copyBlob(ctx context.Context, zw *zip.Writer, key, name string) error {
	rc, err := d.h.blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("open artifact %s: %w", key, err)
	}
	defer rc.Close()
	f, err := create(zw, name)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	return err
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 10, 64) }

func estimateCells(e *v1.Estimate) []string {
	if e == nil {
		return []string{"", "", ""}
	}
	lo, hi := "", ""
	if e.CILow != nil {
		lo, hi = num(*e.CILow), num(*e.CIHigh)
	}
	return []string{num(e.Value), lo, hi}
}

func estimateValue(e *v1.Estimate) string {
	if e == nil {
		return ""
	}
	return num(e.Value)
}

// cells neutralizes spreadsheet formulas: a text cell starting with = + -
// @ gets a leading apostrophe (numbers are left alone).
func cells(row []string) []string {
	for i, c := range row {
		if c == "" || !strings.ContainsAny(c[:1], "=+-@\t\r") {
			continue
		}
		if _, err := strconv.ParseFloat(c, 64); err == nil {
			continue
		}
		row[i] = "'" + c
	}
	return row
}

func safeFileName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}
