// Command pause is the sandbox ("pause") container of the test cluster that
// deploy/k8s/cluster.sh runs: it holds a pod's namespaces, reaps the zombies
// it inherits as PID 1, and exits on SIGINT or SIGTERM. It is built static
// (CGO_ENABLED=0) and packed alone into a single-layer image, so the cluster
// needs no registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
