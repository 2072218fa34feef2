// pause is the sandbox ("pause") container of the cluster in a box's nodes: it holds a pod's
// namespaces, reaps the children that end up reparented to it (it is PID 1 of a pod that
// shares its process namespace) and exits on SIGTERM or SIGINT. Built by build.sh --nodes;
// test/box/images.ts wraps it in an OCI image, so no registry is needed.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
