package main

import (
	"fmt"
	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"strconv"
	"time"
)

// percent renders a pass rate as "v% (lo–hi)", "–" when undefined.
func percent(e *v1.Estimate) string {
	if e == nil {
		return "–"
	}
	s := fmt.Sprintf("%.1f%%", 100*e.Value)
	if e.CILow != nil && e.CIHigh != nil {
		s += fmt.Sprintf(" (%.1f–%.1f)", 100**e.CILow, 100**e.CIHigh)
	}
	return s
}

func passAtK(p *v1.PassAtKPoint) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("pass@%d %s", p.K, percent(&p.Estimate))
}

func dollars(e *v1.Estimate) string {
	switch {
	case e == nil:
		return "–"
	case e.Value < 1:
		return fmt.Sprintf("$%.4f", e.Value)
	}
	return fmt.Sprintf("$%.2f", e.Value)
}

func seconds(e *v1.Estimate) string {
	if e == nil {
		return "–"
	}
	return fmt.Sprintf("%.1fs", e.Value)
}

func count(e *v1.Estimate) string {
	if e == nil {
		return "–"
	}
	return humanCount(int64(e.Value + 0.5))
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func rank(r v1.BoardRow) string {
	switch {
	case r.Rank == 0:
		return "–"
	case r.Tied:
		return strconv.Itoa(r.Rank) + "*"
	}
	return strconv.Itoa(r.Rank)
}

func when(t *time.Time) string {
	if t == nil {
		return "–"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func span(sec float64) string {
	return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
}
