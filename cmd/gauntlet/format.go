package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func passAtK(p *v1.PassAtKPoint) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("pass@%d %s", p.K, boardview.Percent(&p.Estimate))
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

func when(t *time.Time) string {
	if t == nil {
		return "–"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func span(sec float64) string {
	return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
}
