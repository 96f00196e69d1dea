package podrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/mountns"
	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

// A container is a pod whose image Config.Images maps to a program: the
// runner runs that program with the container's args and environment, in
// a mount and UTS namespace of its own (mountns) where it sees what a
// kubelet would give it:
//
//   - its Secret, ConfigMap and projected volumes at their mountPaths
//     (written once, when the pod starts; a later change, a token's
//     renewal included, is not followed), among them the service account
//     token the ServiceAccount admission plugin adds (a TokenRequest bound
//     to the pod, the kube-root-ca.crt ConfigMap, the namespace);
//   - KUBERNETES_SERVICE_HOST and _PORT naming the apiserver itself (no
//     kube-proxy runs for the kubernetes Service);
//   - the runner's hosts file as /etc/hosts, and a resolv.conf that names
//     only 127.0.0.1, so a Service name resolves as cluster DNS would and
//     no lookup leaves the machine;
//   - its pod name as host name.
//
// It runs in this machine's network namespace, on the pod's address: an
// environment value that is a port alone (":6000", a listen address with
// no host) is given the pod's address, since in a pod's own network
// namespace it would bind nothing else. Readiness is the container's
// readinessProbe (httpGet only), probed as a kubelet probes it: from the
// start, every periodSeconds, not ready after failureThreshold failures.
// Liveness probes, resources and security contexts are not played: the
// program runs as root, unconfined.

// program is the program of the pod's first container's image, "" when
// the runner runs the demo workload for it.
func (r *Runner) program(k *corev1.Pod) string {
	if len(k.Spec.Containers) == 0 {
		return ""
	}
	return r.cfg.Images[imageName(k.Spec.Containers[0].Image)]
}

// imageName is an image reference without its tag or digest.
func imageName(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	return image
}

// portOnly is an environment value that is a listen address with no host.
var portOnly = regexp.MustCompile(`^:[0-9]+$`)

// containerSpec is how a container's program starts.
func (r *Runner) containerSpec(ctx context.Context, p *pod, k *corev1.Pod) (proc.Spec, error) {
	c := k.Spec.Containers[0]
	if len(c.Command) > 0 {
		return proc.Spec{}, errors.New("container command: not played (the runner runs the image's entrypoint with the container's args)")
	}
	env, err := containerEnv(k, p.ip)
	if err != nil {
		return proc.Spec{}, err
	}
	for i, kv := range env {
		if name, v, _ := strings.Cut(kv, "="); portOnly.MatchString(v) {
			env[i] = name + "=" + p.ip + v
		}
	}
	host, port, err := net.SplitHostPort(r.cfg.APIServer)
	if err != nil {
		return proc.Spec{}, fmt.Errorf("the apiserver's address: %w", err)
	}
	env = append([]string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + k.Name,
		"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port,
	}, env...)
	dir := filepath.Join(r.cfg.WorkDir, k.Namespace+"_"+k.Name)
	binds, err := r.volumes(ctx, k, c, dir)
	if err != nil {
		return proc.Spec{}, err
	}
	ns, err := mountns.Resolver(dir, r.cfg.HostsFile)
	if err != nil {
		return proc.Spec{}, err
	}
	ns.Binds, ns.Hostname = append(binds, ns.Binds...), k.Name
	return mountns.Wrap(proc.Spec{
		Name: "pod_" + p.namespace + "_" + p.name, Path: p.program, Args: c.Args, Env: env, Clean: true,
		LogDir: filepath.Join(r.cfg.LogDir, "pods"),
	}, ns)
}

// containerEnv is the first container's environment: its values, with
// $(NAME) references to earlier variables expanded, and the downward API's
// fieldRefs a pod's identity needs.
func containerEnv(k *corev1.Pod, ip string) ([]string, error) {
	if len(k.Spec.Containers) == 0 {
		return nil, nil
	}
	c := k.Spec.Containers[0]
	if len(c.EnvFrom) > 0 {
		return nil, errors.New("envFrom: not played")
	}
	vals := map[string]string{}
	var out []string
	for _, e := range c.Env {
		v := expand(e.Value, vals)
		if e.ValueFrom != nil {
			f := e.ValueFrom.FieldRef
			if f == nil {
				return nil, fmt.Errorf("env %s: only fieldRef is played", e.Name)
			}
			var ok bool
			if v, ok = fieldValue(k, f.FieldPath, ip); !ok {
				return nil, fmt.Errorf("env %s: fieldRef %s is not played", e.Name, f.FieldPath)
			}
		}
		vals[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// fieldValue is a downward API field of the pod; ip is its address.
func fieldValue(k *corev1.Pod, path, ip string) (string, bool) {
	switch path {
	case "metadata.name":
		return k.Name, true
	case "metadata.namespace":
		return k.Namespace, true
	case "metadata.uid":
		return string(k.UID), true
	case "status.podIP":
		return ip, ip != ""
	case "spec.nodeName":
		return k.Spec.NodeName, true
	case "spec.serviceAccountName":
		return k.Spec.ServiceAccountName, true
	}
	return "", false
}

// expand replaces $(NAME) with an earlier variable's value, as the kubelet
// does; an unknown name stays as written, and $$ is a $.
func expand(s string, vals map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if end := strings.IndexByte(s[i:], ')'); end > 0 {
				if v, ok := vals[s[i+2:i+end]]; ok {
					b.WriteString(v)
					i += end
					continue
				}
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// volumes writes the container's volumes under dir, and returns their
// binds. The service account token comes as every pod's does: the
// ServiceAccount admission plugin adds a projected volume (a token, the
// kube-root-ca.crt ConfigMap, the namespace) and its mount.
func (r *Runner) volumes(ctx context.Context, k *corev1.Pod, c corev1.Container, dir string) ([]mountns.Bind, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range k.Spec.Volumes {
		byName[v.Name] = v
	}
	var binds []mountns.Bind
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			return nil, fmt.Errorf("volume mount %s: subPath is not played", m.Name)
		}
		v, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no such volume", m.Name)
		}
		files, mode, err := r.volumeFiles(ctx, k, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		src := filepath.Join(dir, "volumes", v.Name)
		if err := writeFiles(src, files, mode); err != nil {
			return nil, err
		}
		binds = append(binds, mountns.Bind{Source: src, Target: m.MountPath})
	}
	return binds, nil
}

// volumeFiles reads a Secret, ConfigMap or projected volume: its files
// and their mode.
func (r *Runner) volumeFiles(ctx context.Context, k *corev1.Pod, v corev1.Volume) (map[string][]byte, os.FileMode, error) {
	var (
		files map[string][]byte
		mode  *int32
		err   error
	)
	switch {
	case v.Secret != nil:
		files, err = r.secretFiles(ctx, k.Namespace, v.Secret.SecretName, v.Secret.Items)
		mode = v.Secret.DefaultMode
	case v.ConfigMap != nil:
		files, err = r.configMapFiles(ctx, k.Namespace, v.ConfigMap.Name, v.ConfigMap.Items)
		mode = v.ConfigMap.DefaultMode
	case v.Projected != nil:
		files, err = r.projectedFiles(ctx, k, v.Projected.Sources)
		mode = v.Projected.DefaultMode
	default:
		err = errors.New("only secret, configMap and projected volumes are played")
	}
	m := os.FileMode(0o644)
	if mode != nil {
		m = os.FileMode(*mode)
	}
	return files, m, err
}

func (r *Runner) secretFiles(ctx context.Context, namespace, name string, items []corev1.KeyToPath) (map[string][]byte, error) {
	s, err := r.cfg.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return pick(s.Data, items)
}

func (r *Runner) configMapFiles(ctx context.Context, namespace, name string, items []corev1.KeyToPath) (map[string][]byte, error) {
	cm, err := r.cfg.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for key, s := range cm.Data {
		data[key] = []byte(s)
	}
	return pick(data, items)
}

// pick is the items listed, or every key.
func pick(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	files := map[string][]byte{}
	for _, it := range items {
		content, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("no key %s", it.Key)
		}
		files[it.Path] = content
	}
	return files, nil
}

// projectedFiles are a projected volume's sources: a service account
// token bound to the pod, ConfigMaps, Secrets, and the downward API's
// fieldRefs.
func (r *Runner) projectedFiles(ctx context.Context, k *corev1.Pod, sources []corev1.VolumeProjection) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, src := range sources {
		var part map[string][]byte
		var err error
		switch {
		case src.ServiceAccountToken != nil:
			var token string
			token, err = r.token(ctx, k, src.ServiceAccountToken)
			part = map[string][]byte{src.ServiceAccountToken.Path: []byte(token)}
		case src.ConfigMap != nil:
			part, err = r.configMapFiles(ctx, k.Namespace, src.ConfigMap.Name, src.ConfigMap.Items)
		case src.Secret != nil:
			part, err = r.secretFiles(ctx, k.Namespace, src.Secret.Name, src.Secret.Items)
		case src.DownwardAPI != nil:
			part = map[string][]byte{}
			for _, it := range src.DownwardAPI.Items {
				if it.FieldRef == nil {
					return nil, fmt.Errorf("downwardAPI %s: only fieldRef is played", it.Path)
				}
				v, ok := fieldValue(k, it.FieldRef.FieldPath, "")
				if !ok {
					return nil, fmt.Errorf("downwardAPI %s: fieldRef %s is not played", it.Path, it.FieldRef.FieldPath)
				}
				part[it.Path] = []byte(v)
			}
		default:
			err = errors.New("a projected source that is not played")
		}
		if err != nil {
			return nil, err
		}
		maps.Copy(files, part)
	}
	return files, nil
}

// token is a service account token bound to the pod, as the kubelet
// requests it for a projected volume.
func (r *Runner) token(ctx context.Context, k *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := k.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	spec := authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: k.Name, UID: k.UID},
	}
	if p.Audience != "" {
		spec.Audiences = []string{p.Audience}
	}
	tr, err := r.cfg.Client.CoreV1().ServiceAccounts(k.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("service account %s token: %w", sa, err)
	}
	return tr.Status.Token, nil
}

func writeFiles(dir string, files map[string][]byte, mode os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, mode); err != nil {
			return err
		}
	}
	return nil
}

// readinessProbe is the first container's readiness probe, nil without
// one.
func readinessProbe(k *corev1.Pod) *corev1.Probe {
	if len(k.Spec.Containers) == 0 {
		return nil
	}
	return k.Spec.Containers[0].ReadinessProbe
}

// waitProbe waits for the container's first passing readiness probe: the
// first right away (after initialDelaySeconds), then one every
// periodSeconds. A container without a readiness probe is ready once it
// runs.
func (r *Runner) waitProbe(ctx context.Context, p *pod, k *corev1.Pod, pr *proc.Proc) error {
	probe := readinessProbe(k)
	if probe == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(probe.InitialDelaySeconds) * time.Second):
	}
	tick := time.NewTicker(period(probe))
	defer tick.Stop()
	for {
		if done, err := pr.Exited(); done {
			return fmt.Errorf("exited: %v", err)
		}
		if r.probeOnce(ctx, p, probe) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// probe goes on probing a ready container and reports its readiness when
// it changes: not ready after failureThreshold failures in a row (a
// draining scaler's /readyz), ready again after one success.
func (r *Runner) probe(ctx context.Context, p *pod, k *corev1.Pod, started time.Time) {
	probe := readinessProbe(k)
	if probe == nil {
		return
	}
	threshold := max(int(probe.FailureThreshold), 1)
	ready, failures := true, 0
	tick := time.NewTicker(period(probe))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if r.probeOnce(ctx, p, probe) == nil {
			failures = 0
			if ready {
				continue
			}
		} else if failures++; !ready || failures < threshold {
			continue
		}
		ready = !ready
		r.mu.Lock()
		p.ready = ready
		r.mu.Unlock()
		r.changed(p.namespace, p.app)
		if err := r.reportReady(ctx, k, p, started, ready); err != nil && ctx.Err() == nil {
			r.cfg.Logf("podrunner: %s/%s: readiness %v: %v", p.namespace, p.name, ready, err)
		}
		r.cfg.Logf("podrunner: %s/%s: readiness probe: ready %v", p.namespace, p.name, ready)
	}
}

func period(probe *corev1.Probe) time.Duration {
	return time.Duration(max(probe.PeriodSeconds, 1)) * time.Second
}

// probeOnce runs an httpGet probe against the pod's address.
func (r *Runner) probeOnce(ctx context.Context, p *pod, probe *corev1.Probe) error {
	g := probe.HTTPGet
	if g == nil {
		return errors.New("readiness probe: only httpGet is played")
	}
	port := g.Port.IntVal
	if g.Port.StrVal != "" {
		port = p.ports[g.Port.StrVal]
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(probe.TimeoutSeconds, 1))*time.Second)
	defer cancel()
	return r.request(ctx, http.MethodGet, "http://"+net.JoinHostPort(p.ip, strconv.Itoa(int(port)))+g.Path)
}
