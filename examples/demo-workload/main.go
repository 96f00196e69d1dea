// Command demo-workload runs one or more replicas of a workload that exposes
// the Barometer pressure exposition contract (docs/exposition.md), with
// pressure that follows the request rate it is given.
//
//	go run ./examples/demo-workload -listen 127.0.0.1:9100 -replicas 3 -rps 60
//	curl -s 127.0.0.1:9100/metrics | grep barometer_
//	curl -s -X POST '127.0.0.1:9101/load?rps=95'    # push one replica to saturation
//	curl -s -X POST '127.0.0.1:9102/splits?n=2'     # hold scale-in
//
// With -queue every replica also exposes the work-queue series, driven by
// the same load (see package demo):
//
//	go run ./examples/demo-workload -replicas 2 -rps 60 -queue -service-time 50ms
//	curl -s -X POST '127.0.0.1:9100/load?rps=150'           # past capacity: ready work piles up
//	curl -s -X POST '127.0.0.1:9100/queue/retrying?n=4'
//	curl -s -X POST '127.0.0.1:9100/queue/reservation?id=nightly&start=1767225600&end=1767229200&slots=3'
//
// Replica i listens on the -listen port + i.
//
// With -otlp-endpoint every replica also pushes the same contract over OTLP
// with the OTel Go SDK, to the scaler's receiver (source: otlp), every
// -otlp-interval (keep it under the trigger's maxAge):
//
//	go run ./examples/demo-workload -otlp-endpoint 127.0.0.1:4317 -otlp-token-file token
//
// The resource is OTEL_RESOURCE_ATTRIBUTES (k8s.namespace.name,
// k8s.pod.name, k8s.deployment.name, ...) and -otlp-attributes, with
// service.name demo-workload unless they name another;
// each replica's service.instance.id is its address, and with -replicas > 1
// a k8s.pod.name gets the replica's index as a suffix.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demo-workload:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	d := demo.DefaultConfig()
	fs := flag.NewFlagSet("demo-workload", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9100", "address of replica 0; replica i listens on port+i")
	replicas := fs.Int("replicas", 1, "replicas to run")
	rps := fs.Float64("rps", 0, "request rate given to every replica at start")
	splits := fs.Float64("splits", 0, "splits in flight on every replica at start")
	fs.Float64Var(&d.Capacity, "capacity", d.Capacity, "request rate one replica serves at full CPU")
	fs.Float64Var(&d.CPULimitCores, "cpu-limit", d.CPULimitCores, "CPU limit in cores")
	fs.Float64Var(&d.MemoryLimitBytes, "memory-limit", d.MemoryLimitBytes, "memory limit in bytes")
	fs.Float64Var(&d.WorkingSetAtCapacity, "working-set-at-capacity", d.WorkingSetAtCapacity, "activations when the rate equals capacity")
	fs.StringVar(&d.Tree, "tree", d.Tree, "storage tree name")
	accounts := fs.String("accounts", strings.Join(d.Accounts, ","), "storage accounts of the tree's partitions, in partition order")
	fs.IntVar(&d.PaddingSeries, "padding", 0, "extra unrelated series to expose")
	fs.BoolVar(&d.Queue, "queue", false, "also expose the work-queue series")
	fs.DurationVar(&d.ServiceTime, "service-time", d.ServiceTime, "queue mode: how long one run takes")
	fs.StringVar(&d.QueueClass, "queue-class", d.QueueClass, "queue mode: the class label of the backlog")
	var push pushConfig
	fs.StringVar(&push.endpoint, "otlp-endpoint", "", "push over OTLP to this host:port as well (empty: scrape only)")
	fs.StringVar(&push.protocol, "otlp-protocol", "grpc", "OTLP transport: grpc or http")
	fs.StringVar(&push.tokenFile, "otlp-token-file", "", "file of the bearer token sent with every push")
	fs.BoolVar(&push.insecure, "otlp-insecure", true, "push without TLS")
	fs.DurationVar(&push.interval, "otlp-interval", time.Second, "export interval")
	fs.StringVar(&push.attributes, "otlp-attributes", "", "resource attributes added to OTEL_RESOURCE_ATTRIBUTES, as k=v pairs separated by ','")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d.Accounts = strings.Split(*accounts, ",")
	host, portText, err := net.SplitHostPort(*listen)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || *replicas < 1 {
		return errors.New("-listen needs a numeric port and -replicas at least 1")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, *replicas)
	for i := range *replicas {
		w := demo.New(d)
		w.SetLoad(*rps)
		w.SetSplits(*splits)
		addr := net.JoinHostPort(host, strconv.Itoa(port+i))
		if push.endpoint != "" {
			shutdown, err := push.start(ctx, w, addr, i, *replicas)
			if err != nil {
				return err
			}
			defer shutdown()
		}
		srv := &http.Server{Addr: addr, Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		slog.Info("replica listening", "addr", ln.Addr().String())
		wg.Go(func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		})
		wg.Go(func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
		stop()
	}
	wg.Wait()
	return err
}
