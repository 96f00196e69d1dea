package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/barometer-scaler/barometer/internal/testbin"
)

// scaler is the scaler binary running on loopback ports, and KEDA's
// generated client on its gRPC port.
type scaler struct {
	proc   *exec.Cmd
	exited chan struct{}
	http   string
	conn   *grpc.ClientConn
	client externalscaler.ExternalScalerClient
}

// buildScaler builds ./cmd/scaler into dir.
func buildScaler(dir string) (string, error) {
	bin := filepath.Join(dir, "scaler")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/scaler")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/scaler: %w", err)
	}
	return bin, nil
}

// startScaler runs bin serve, its log in logPath, loopback allowed as a
// target, every target sampling at interval, and waits until it is live.
func startScaler(bin, logPath string, interval time.Duration) (*scaler, error) {
	grpcAddr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	httpAddr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "BAROMETER_GRPC_ADDR="+grpcAddr, "BAROMETER_HTTP_ADDR="+httpAddr,
		"BAROMETER_SAMPLE_INTERVAL="+interval.String(), "BAROMETER_ALLOWED_TARGETS=127.0.0.0/8",
		"BAROMETER_IDLE_TIMEOUT=2h", "BAROMETER_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &scaler{proc: cmd, exited: make(chan struct{}), http: "http://" + httpAddr}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := s.get("/livez"); code == http.StatusOK {
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("the scaler exited at start; see %s", logPath)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("the scaler was not live within a minute; see %s", logPath)
		}
	}
	if s.conn, err = grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		s.stop()
		return nil, err
	}
	s.client = externalscaler.NewExternalScalerClient(s.conn)
	return s, nil
}

func (s *scaler) stop() {
	if s.conn != nil {
		s.conn.Close()
	}
	_ = s.proc.Process.Kill()
	<-s.exited
}

func (s *scaler) get(path string) (int, []byte) {
	resp, err := http.Get(s.http + path)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body
}

// scaledObject is one ScaledObject as KEDA would name it to the scaler.
type scaledObject struct {
	ref    *externalscaler.ScaledObjectRef
	metric string
	// asked is when KEDA first asked for it (GetMetricSpec); warm when
	// GetMetrics first answered a value (zero: never).
	asked, warm time.Time
}

// scaledObjects are n ScaledObjects of prometheus triggers on server,
// target i reading workload w<i>, or, identical, all reading w0 with the
// same queries, each with a scale-in hold of its own, so that each is a
// target (a sampler) of its own: ScaledObjects that differ only in what
// they read share one target, and nothing would be left to share.
func scaledObjects(n int, server string, identical bool) []*scaledObject {
	out := make([]*scaledObject, n)
	for i := range out {
		md := map[string]string{
			"scalerAddress": "barometer.keda.svc:6000", "source": "prometheus",
			"serverAddress": server, "selector": fmt.Sprintf(`job="w%d"`, i),
		}
		if identical {
			md["selector"], md["scaleInHold"] = `job="w0"`, fmt.Sprintf("%ds", 300+i)
		}
		out[i] = &scaledObject{ref: &externalscaler.ScaledObjectRef{
			Namespace: fmt.Sprintf("promload-%d", i/50), Name: fmt.Sprintf("so-%d", i), ScalerMetadata: md,
		}}
	}
	return out
}

// create asks GetMetricSpec for every ScaledObject, from 8 callers at
// once, as KEDA does when it finds them (or when the scaler it calls has
// just restarted).
func (s *scaler) create(ctx context.Context, sos []*scaledObject) error {
	work := make(chan *scaledObject)
	errs := make(chan error, len(sos))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for so := range work {
				so.asked = time.Now()
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				spec, err := s.client.GetMetricSpec(c, so.ref)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", so.ref.Name, err)
					continue
				}
				if len(spec.MetricSpecs) > 0 {
					so.metric = spec.MetricSpecs[0].MetricName
				}
			}
		})
	}
	for _, so := range sos {
		work <- so
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// poll calls GetMetrics on every ScaledObject not yet warm every
// period until ctx ends, and marks when each first answered a value. It
// stands for the HPA's reads through KEDA, more often than those, so
// the time to warm is measured to within period.
func (s *scaler) poll(ctx context.Context, sos []*scaledObject, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		var wg sync.WaitGroup
		for _, so := range sos {
			if !so.warm.IsZero() {
				continue
			}
			wg.Go(func() {
				c, cancel := context.WithTimeout(ctx, period)
				defer cancel()
				resp, err := s.client.GetMetrics(c, &externalscaler.GetMetricsRequest{ScaledObjectRef: so.ref, MetricName: so.metric})
				if err == nil && len(resp.MetricValues) > 0 {
					so.warm = time.Now()
				}
			})
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// forecastWaiting counts the ScaledObjects whose /scale says the
// forecast has read no history yet; -1 when the scaler does not say.
func (s *scaler) forecastWaiting(sos []*scaledObject) int {
	n := 0
	for _, so := range sos {
		_, body := s.get("/scale/" + so.ref.Namespace + "/" + so.ref.Name)
		var v map[string]any
		if json.Unmarshal(body, &v) != nil {
			continue
		}
		waiting, ok := v["forecastHistoryPending"].(bool)
		if !ok {
			return -1
		}
		if waiting {
			n++
		}
	}
	return n
}

// poolCounts reads the scaler's own counts of its query pool from
// /metrics: sent, shared and not sent (no time to answer); absent
// counters read 0.
func (s *scaler) poolCounts() (sent, shared, notSent float64) {
	_, body := s.get("/metrics")
	for line := range strings.SplitSeq(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64)
		if err != nil {
			continue
		}
		switch name {
		case "barometer_prometheus_queries_total":
			sent += v
		case "barometer_prometheus_queries_shared_total":
			shared += v
		case "barometer_prometheus_queries_not_sent_total":
			notSent += v
		}
	}
	return sent, shared, notSent
}
