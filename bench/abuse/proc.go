package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// scalerProc is one scaler process on loopback ports, and a client on it.
type scalerProc struct {
	name     string
	cmd      *exec.Cmd
	grpcAddr string
	httpAddr string
	conn     *grpc.ClientConn
	client   externalscaler.ExternalScalerClient
	exited   chan struct{}
	log      *os.File
}

// buildScaler builds the real binary once, into dir.
func buildScaler(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "scaler")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/scaler")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/scaler: %w", err)
	}
	return bin, nil
}

// freeAddr returns a 127.0.0.1 port the kernel picked; the scaler binds it
// right after, so a clash is unlikely and shows as a failed start.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startScaler runs bin with loopback addresses, a one-minute idle timeout
// (the least the scaler accepts) so the "after" phase comes within the run,
// and loopback allowed as a target; env adds or overrides settings.
func startScaler(ctx context.Context, bin, name, logDir string, env ...string) (*scalerProc, error) {
	g, err := freeAddr()
	if err != nil {
		return nil, err
	}
	h, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"BAROMETER_GRPC_ADDR="+g, "BAROMETER_HTTP_ADDR="+h,
		"BAROMETER_IDLE_TIMEOUT=1m", "BAROMETER_SAMPLE_INTERVAL=1s",
		"BAROMETER_ALLOWED_TARGETS=*.svc,127.0.0.0/8", "BAROMETER_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &scalerProc{name: name, cmd: cmd, grpcAddr: g, httpAddr: h, exited: make(chan struct{}), log: logf}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitLive(ctx); err != nil {
		p.kill()
		return nil, err
	}
	p.conn, err = grpc.NewClient(g, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(8<<20)))
	if err != nil {
		p.kill()
		return nil, err
	}
	p.client = externalscaler.NewExternalScalerClient(p.conn)
	return p, nil
}

func (p *scalerProc) waitLive(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited at start; see its log %s", p.name, p.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if code, _ := p.get(ctx, "/livez"); code == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("%s not live within 30s", p.name)
}

// newConn opens another connection, so that many callers do not share one
// HTTP/2 connection's stream limit.
func (p *scalerProc) newConn() (*grpc.ClientConn, error) {
	return grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// get fetches an HTTP path and returns the status and body.
func (p *scalerProc) get(ctx context.Context, path string) (int, []byte) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.httpAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// kill ends the process at once (the suite's own cleanup).
func (p *scalerProc) kill() {
	if p.conn != nil {
		p.conn.Close()
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.log.Close()
}

// terminate sends SIGTERM and waits up to max for the exit.
func (p *scalerProc) terminate(max time.Duration) (time.Duration, bool) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return time.Since(start), true
	case <-time.After(max):
		return time.Since(start), false
	}
}

// rss is the process' resident set (VmRSS), in bytes.
func (p *scalerProc) rss() int64 { return p.status("VmRSS:") }

// peakRSS is the process' largest resident set (VmHWM), in bytes.
func (p *scalerProc) peakRSS() int64 { return p.status("VmHWM:") }

// status reads a size field of /proc/PID/status, in bytes.
func (p *scalerProc) status(field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// gauges reads the named unlabelled series from the scaler's /metrics.
func (p *scalerProc) gauges(ctx context.Context, names ...string) map[string]float64 {
	out := map[string]float64{}
	_, body := p.get(ctx, "/metrics")
	for line := range strings.SplitSeq(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				out[n], _ = strconv.ParseFloat(strings.TrimSpace(val), 64)
			}
		}
	}
	return out
}

// series returns the /metrics lines of metric whose labels contain sub.
func (p *scalerProc) series(ctx context.Context, metric, sub string) []string {
	var out []string
	_, body := p.get(ctx, "/metrics")
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, metric+"{") && strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}
