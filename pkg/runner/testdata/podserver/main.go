// Command podserver is the pod tests' background server: started by an
// agent phase, it answers every HTTP request on -listen with -body, so a
// verifier that reaches it proves the agent's process outlived its phase
// in the same network namespace.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	body := flag.String("body", "served", "what every request gets")
	flag.Parse()
	err := http.ListenAndServe(*listen, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%s pid=%d\n", *body, os.Getpid())
	}))
	fmt.Fprintln(os.Stderr, "podserver:", err)
	os.Exit(1)
}
