// Command cri-clean stops and removes every pod sandbox (and so every
// container) of a CRI runtime, the way the kubelet would: the runtime tears
// down each pod's network through CNI (IP release, iptables rules, network
// namespace) before it removes the pod. deploy/k8s/cluster.sh runs it on
// `down`, after the kubelet has stopped and before containerd stops.
//
//	cri-clean -endpoint unix:///var/lib/primer-k8s/containerd/containerd.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "", "CRI socket, unix:///path")
	timeout := flag.Duration("timeout", 60*time.Second, "overall deadline")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "cri-clean: -endpoint is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cri-clean:", err)
		os.Exit(1)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cri-clean: list pods:", err)
		os.Exit(1)
	}
	failed := 0
	for _, p := range pods.Items {
		name := p.GetMetadata().GetNamespace() + "/" + p.GetMetadata().GetName()
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "cri-clean: stop %s: %v\n", name, err)
			failed++
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "cri-clean: remove %s: %v\n", name, err)
			failed++
			continue
		}
	}
	fmt.Fprintf(os.Stderr, "cri-clean: removed %d of %d pod sandboxes\n", len(pods.Items)-failed, len(pods.Items))
	if failed > 0 {
		os.Exit(1)
	}
}
