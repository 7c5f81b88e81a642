package cloudtest

import (
	"fmt"
	"strconv"
)

// ECS's rules for a task definition's containers that the ECS fakes (this
// package's, and pkg/awsx/ecssandbox's tests') enforce at
// RegisterTaskDefinition (ECS answers a ClientException) and the order in
// which it starts them at RunTask, by dependsOn, as ECS's agent does:
// a container starts once every dependency's condition holds — START: the
// target started; HEALTHY: the target's healthCheck passed (the fake's
// containers are healthy once started); COMPLETE and SUCCESS: the target
// exited (the fake's non-essential containers without a healthCheck are
// init containers and exit at once, with 0).

// CheckTaskDefinition reports what ECS would refuse in def.
func CheckTaskDefinition(def map[string]any) error {
	containers, _ := def["containerDefinitions"].([]any)
	byName := map[string]map[string]any{}
	for _, c := range containers {
		c := c.(map[string]any)
		name, _ := c["name"].(string)
		if _, dup := byName[name]; dup {
			return fmt.Errorf("duplicate container name %q", name)
		}
		byName[name] = c
	}
	var cpu, mem int
	essential := 0
	for name, c := range byName {
		if c["essential"] != false {
			essential++
		}
		if v, ok := c["cpu"].(float64); ok {
			cpu += int(v)
		}
		if v, ok := c["memory"].(float64); ok {
			mem += int(v)
		}
		if hc, ok := c["healthCheck"].(map[string]any); ok {
			if err := checkHealthCheck(hc); err != nil {
				return fmt.Errorf("container %s: healthCheck: %v", name, err)
			}
		}
		deps, _ := c["dependsOn"].([]any)
		for _, d := range deps {
			d := d.(map[string]any)
			target, ok := byName[d["containerName"].(string)]
			if !ok {
				return fmt.Errorf("container %s depends on %v, which the task definition does not define", name, d["containerName"])
			}
			switch d["condition"] {
			case "START":
			case "HEALTHY":
				if _, ok := target["healthCheck"]; !ok {
					return fmt.Errorf("container %s: HEALTHY dependency on %v, which has no healthCheck", name, d["containerName"])
				}
			case "COMPLETE", "SUCCESS":
				if target["essential"] != false {
					return fmt.Errorf("container %s: %v dependency on the essential container %v", name, d["condition"], d["containerName"])
				}
			default:
				return fmt.Errorf("container %s: unknown dependsOn condition %v", name, d["condition"])
			}
		}
	}
	if essential == 0 {
		return fmt.Errorf("no essential container")
	}
	taskCPU, _ := strconv.Atoi(fmt.Sprint(def["cpu"]))
	taskMem, _ := strconv.Atoi(fmt.Sprint(def["memory"]))
	if cpu > taskCPU || mem > taskMem {
		return fmt.Errorf("containers ask for %d CPU units and %d MiB, the task has %d and %d", cpu, mem, taskCPU, taskMem)
	}
	if _, err := StartOrder(def); err != nil {
		return err
	}
	return nil
}

// checkHealthCheck applies ECS's bounds on a container health check.
func checkHealthCheck(hc map[string]any) error {
	cmd, _ := hc["command"].([]any)
	if len(cmd) < 2 || (cmd[0] != "CMD" && cmd[0] != "CMD-SHELL") {
		return fmt.Errorf("command %v: want [CMD …] or [CMD-SHELL cmd]", cmd)
	}
	for _, b := range []struct {
		key      string
		min, max float64
	}{{"interval", 5, 300}, {"timeout", 2, 60}, {"retries", 1, 10}, {"startPeriod", 0, 300}} {
		if v, ok := hc[b.key].(float64); ok && (v < b.min || v > b.max) {
			return fmt.Errorf("%s %v is outside %v..%v", b.key, v, b.min, b.max)
		}
	}
	return nil
}

// StartOrder is the order ECS starts def's containers in; a dependency
// cycle, or one never met, is an error.
func StartOrder(def map[string]any) ([]string, error) {
	containers, _ := def["containerDefinitions"].([]any)
	started, exited := map[string]bool{}, map[string]bool{}
	var order []string
	for len(order) < len(containers) {
		progressed := false
		for _, c := range containers {
			c := c.(map[string]any)
			name := c["name"].(string)
			if started[name] {
				continue
			}
			ready := true
			deps, _ := c["dependsOn"].([]any)
			for _, d := range deps {
				d := d.(map[string]any)
				target := d["containerName"].(string)
				switch d["condition"] {
				case "START", "HEALTHY":
					ready = ready && started[target]
				default:
					ready = ready && exited[target]
				}
			}
			if !ready {
				continue
			}
			started[name], progressed = true, true
			order = append(order, name)
			if _, hc := c["healthCheck"]; c["essential"] == false && !hc {
				exited[name] = true
			}
		}
		if !progressed {
			return order, fmt.Errorf("containers whose dependsOn is never met (a cycle or a missing exit): started only %v", order)
		}
	}
	return order, nil
}
