// Command mockmodel serves pkg/modelmock with a script file on a loopback
// address, for the end-to-end test that runs it inside the agent sandbox
// beside terminus-2 (the sandbox cannot reach the host's loopback).
package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mockmodel ADDR SCRIPT.json")
		os.Exit(2)
	}
	script, err := modelmock.LoadScript(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := http.ListenAndServe(os.Args[1], modelmock.NewHandler(script)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
