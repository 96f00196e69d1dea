// Package envconfig is the scaler's configuration, read from its BAROMETER_*
// environment variables. Each variable is declared once, in the tags of
// Config's field: its name and default (caarlos0/env's env and envDefault,
// which parse it), its range (min and max, written in the field's own type)
// or its values (oneof), and its meaning (doc). The errors, the range checks
// and the README's Environment table all derive from those tags.
package envconfig

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the server's configuration. Tags besides caarlos0/env's:
// min and max bound a duration or a whole number, oneof lists the values a
// string takes (any case), doc is the variable's line in the README, and
// docDefault replaces an empty default there.
type Config struct {
	GRPCAddr       string        `env:"BAROMETER_GRPC_ADDR" envDefault:":6000" doc:"gRPC listen address (ExternalScaler, SignalService, health, reflection)"`
	HTTPAddr       string        `env:"BAROMETER_HTTP_ADDR" envDefault:":8080" doc:"HTTP listen address"`
	SampleInterval time.Duration `env:"BAROMETER_SAMPLE_INTERVAL" envDefault:"5s" min:"100ms" max:"10m" doc:"sample interval of the triggers that set no sampleInterval key, in that key's range"`
	// DefaultTarget is the trigger metadata of the target served at /scale.
	DefaultTarget map[string]string `env:"BAROMETER_DEFAULT_TARGET" envSeparator:";" envKeyValSeparator:"=" docDefault:"(host source)" doc:"metadata of the target served at /scale"`
	// AllowedTargets admits the addresses trigger metadata may name (CIDRs,
	// host patterns, !CIDR denials); see pkg/allow.
	AllowedTargets string        `env:"BAROMETER_ALLOWED_TARGETS" envDefault:"*.{namespace}.svc,*.{namespace}.svc.cluster.local" doc:"addresses trigger metadata may name; {namespace} is the ScaledObject's own (see [Sources](#sources))"`
	IdleTimeout    time.Duration `env:"BAROMETER_IDLE_TIMEOUT" envDefault:"10m" min:"1m" doc:"stop a sampler nobody read for this long"`
	AuditSize      int           `env:"BAROMETER_AUDIT_SIZE" envDefault:"100" min:"1" max:"100000" doc:"decisions kept per target for /events"`
	// The limits of what callers can make the scaler hold (pkg/registry).
	MaxTargets             int           `env:"BAROMETER_MAX_TARGETS" envDefault:"1000" min:"1" max:"1000000" doc:"samplers running at once; past it a new trigger is ResourceExhausted"`
	MaxTargetsPerNamespace int           `env:"BAROMETER_MAX_TARGETS_PER_NAMESPACE" envDefault:"100" min:"1" max:"1000000" doc:"samplers the ScaledObjects of one namespace may start"`
	MaxRefsPerTarget       int           `env:"BAROMETER_MAX_REFS_PER_TARGET" envDefault:"1000" min:"1" max:"1000000" doc:"ScaledObjects one sampler keeps track of (a ScaledObject is forgotten after BAROMETER_IDLE_TIMEOUT without a call)"`
	ShutdownTimeout        time.Duration `env:"BAROMETER_SHUTDOWN_TIMEOUT" envDefault:"20s" min:"0s" doc:"how long in-flight calls may take after SIGTERM"`
	// ShutdownDelay is how long /readyz reads 503 before streams end and
	// the servers drain.
	ShutdownDelay   time.Duration `env:"BAROMETER_SHUTDOWN_DELAY" envDefault:"5s" min:"0s" max:"1m" doc:"how long /readyz (and the gRPC health service) read not-ready after SIGTERM before streams end and the servers drain"`
	TLSCertFile     string        `env:"BAROMETER_TLS_CERT_FILE" docDefault:"(plain)" doc:"serve gRPC over TLS (1.2 or later) with this certificate; set with BAROMETER_TLS_KEY_FILE"`
	TLSKeyFile      string        `env:"BAROMETER_TLS_KEY_FILE" docDefault:"(plain)" doc:"the private key of BAROMETER_TLS_CERT_FILE"`
	TLSClientCAFile string        `env:"BAROMETER_TLS_CLIENT_CA_FILE" doc:"also require client certificates signed by this CA (KEDA's caCert / tlsClientCert / tlsClientKey); needs BAROMETER_TLS_CERT_FILE"`
	// ConnectionProfiles is the path of the connection profile file
	// (pkg/pressure/connprofile), mounted from a Secret.
	ConnectionProfiles string `env:"BAROMETER_CONNECTION_PROFILES" doc:"the connection profile file (see [Connection profiles](#connection-profiles-secured-prometheus-servers-and-metrics)); a file that cannot be used stops the start"`
	// Kubeconfig is the kubeconfig file k8s:// targets reach Kubernetes
	// through when the scaler runs outside a pod (pkg/pressure/kube).
	Kubeconfig string `env:"BAROMETER_KUBECONFIG" docDefault:"(in-cluster)" doc:"the kubeconfig file k8s:// targets reach Kubernetes through outside a pod; in a pod, unset, the service account is used (docs/kubernetes.md)"`
	// VictimHints lets triggers ask for victimHints: the scaler then
	// patches the pod-deletion-cost annotation of their pods (pkg/victim).
	VictimHints bool `env:"BAROMETER_VICTIM_HINTS" envDefault:"false" doc:"let triggers ask for victimHints: the scaler patches the pod-deletion-cost of their pods (docs/kubernetes.md)"`
	// The OTLP push receiver (docs/otlp.md, pkg/pressure/otlp): off
	// unless one of its addresses is set.
	OTLPGRPCAddr                     string `env:"BAROMETER_OTLP_GRPC_ADDR" docDefault:"(off)" doc:"the OTLP push receiver's gRPC listen address (OTLP's usual :4317); with BAROMETER_OTLP_HTTP_ADDR unset too there is no receiver and the otlp source is refused (see [Push metrics with OpenTelemetry](#push-metrics-with-opentelemetry))"`
	OTLPHTTPAddr                     string `env:"BAROMETER_OTLP_HTTP_ADDR" docDefault:"(off)" doc:"the OTLP push receiver's HTTP listen address (POST /v1/metrics, protobuf or JSON; OTLP's usual :4318)"`
	OTLPCredentials                  string `env:"BAROMETER_OTLP_CREDENTIALS" doc:"the file of who may push and for which namespaces (docs/otlp.md); required when the receiver is on"`
	OTLPTLSCertFile                  string `env:"BAROMETER_OTLP_TLS_CERT_FILE" docDefault:"(plain)" doc:"serve both OTLP listeners over TLS with this certificate; set with BAROMETER_OTLP_TLS_KEY_FILE"`
	OTLPTLSKeyFile                   string `env:"BAROMETER_OTLP_TLS_KEY_FILE" docDefault:"(plain)" doc:"the private key of BAROMETER_OTLP_TLS_CERT_FILE"`
	OTLPTLSClientCAFile              string `env:"BAROMETER_OTLP_TLS_CLIENT_CA_FILE" doc:"a pusher's client certificate signed by this CA authenticates it (mTLS); needs BAROMETER_OTLP_TLS_CERT_FILE"`
	OTLPMaxSeries                    int    `env:"BAROMETER_OTLP_MAX_SERIES" envDefault:"100000" min:"1" max:"10000000" doc:"series the OTLP store holds, its last eighth kept for namespaces holding fewer than 1,000; a push past it is refused in part (partial success)"`
	OTLPMaxSeriesPerNamespace        int    `env:"BAROMETER_OTLP_MAX_SERIES_PER_NAMESPACE" envDefault:"20000" min:"1" max:"10000000" doc:"series the pushes of one namespace may hold, at most BAROMETER_OTLP_MAX_SERIES"`
	OTLPMaxMemoryBytes               int    `env:"BAROMETER_OTLP_MAX_MEMORY_BYTES" envDefault:"67108864" min:"1" max:"68719476736" doc:"estimated bytes the OTLP store may hold, its last eighth kept for namespaces holding less than 1 MiB (docs/otlp.md, \"Memory\")"`
	OTLPMaxMemoryBytesPerNamespace   int    `env:"BAROMETER_OTLP_MAX_MEMORY_BYTES_PER_NAMESPACE" envDefault:"16777216" min:"1" max:"68719476736" doc:"estimated bytes the pushes of one namespace may hold, at most BAROMETER_OTLP_MAX_MEMORY_BYTES"`
	OTLPMaxPointsPerRequest          int    `env:"BAROMETER_OTLP_MAX_POINTS_PER_REQUEST" envDefault:"10000" min:"1" max:"1000000" doc:"data points one push may carry, and resources, scopes and metrics each; counted before the push is decoded"`
	OTLPMaxRequestBytes              int    `env:"BAROMETER_OTLP_MAX_REQUEST_BYTES" envDefault:"4194304" min:"1" max:"268435456" doc:"bytes one push may take, decompressed"`
	OTLPMaxDecodedBytes              int    `env:"BAROMETER_OTLP_MAX_DECODED_BYTES" envDefault:"8388608" min:"1" max:"1073741824" doc:"bytes one push may decode into, as its wire form says before it is decoded"`
	OTLPMaxOpenRequests              int    `env:"BAROMETER_OTLP_MAX_OPEN_REQUESTS" envDefault:"8" min:"1" max:"1024" doc:"authenticated pushes in progress at once, their bodies arriving or in hand; one more is told to retry"`
	OTLPMaxOpenRequestsPerCredential int    `env:"BAROMETER_OTLP_MAX_OPEN_REQUESTS_PER_CREDENTIAL" envDefault:"2" min:"1" max:"1024" doc:"of BAROMETER_OTLP_MAX_OPEN_REQUESTS, the most one credential holds"`
	OTLPMaxConcurrentRequests        int    `env:"BAROMETER_OTLP_MAX_CONCURRENT_REQUESTS" envDefault:"2" min:"1" max:"1024" doc:"pushes decoded and stored at once, their bodies in hand; one more waits its turn, 5 s at most, then is told to retry"`
	OTLPMinBodyBytesPerSecond        int    `env:"BAROMETER_OTLP_MIN_BODY_BYTES_PER_SECOND" envDefault:"262144" min:"1" max:"1073741824" doc:"the slowest a push's body may arrive after its first 5 s; a slower one is cut off (408, or a cancelled stream)"`
	// Peering (docs/operations.md, "HA"; pkg/pressure/otlp/peer): the
	// scaler's replicas forward their OTLP pushes to each other, and one
	// that starts takes the others' store.
	PeerAddr      string `env:"BAROMETER_PEER_ADDR" docDefault:"(off)" doc:"the peer listener's address: the other replicas forward the OTLP pushes they receive to it and a replica that starts reads their store from it (docs/operations.md, HA); needs the OTLP receiver and BAROMETER_PEER_TOKEN_FILE"`
	Peers         string `env:"BAROMETER_PEERS" doc:"the other replicas' peer listeners: host:port addresses separated by ',', or k8s://SERVICE.NAMESPACE:PORT for the pods of that Service's EndpointSlices (this pod left out)"`
	PeerTokenFile string `env:"BAROMETER_PEER_TOKEN_FILE" doc:"the token the replicas authenticate each other with (the same file in every replica; re-read when it changes)"`
	// StatusPage serves the status page at /status on the HTTP port, and
	// keeps each target's recent history for it (pkg/statuspage).
	StatusPage bool   `env:"BAROMETER_STATUS_PAGE" envDefault:"true" doc:"serve the read-only status page at /status (each target's recent history drawn, its decisions and settings) and keep the history it draws"`
	LogLevel   string `env:"BAROMETER_LOG_LEVEL" envDefault:"info" oneof:"debug info warn error" doc:"the least severe log line written"`
	LogFormat  string `env:"BAROMETER_LOG_FORMAT" envDefault:"text" oneof:"text json" doc:"the log lines' format; json gives durations in seconds"`
}

// Load reads the configuration from environ (os.Environ's form) and checks
// it. An error names the variable and what it accepts.
func Load(environ []string) (Config, error) {
	vars := env.ToMap(environ)
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Environment: vars})
	if err != nil {
		return cfg, parseError(err, vars)
	}
	return cfg, cfg.validate()
}

// parseError restates caarlos0/env's errors, which name the Go field and
// type, in terms of the variable and what it accepts.
func parseError(err error, vars map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("configuration: %w", err)
	}
	var msgs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			msgs = append(msgs, e)
			continue
		}
		f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name)
		if !ok {
			msgs = append(msgs, e)
			continue
		}
		v := declare(f)
		msgs = append(msgs, fmt.Errorf("%s %q: allowed %s", v.Name, vars[v.Name], v.Allowed))
	}
	return errors.Join(msgs...)
}

// validate checks every variable against its range, then the rules that
// tie variables together.
func (c Config) validate() error {
	rv := reflect.ValueOf(c)
	for i, f := range reflect.VisibleFields(rv.Type()) {
		if err := declare(f).check(rv.Field(i)); err != nil {
			return err
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("BAROMETER_TLS_CERT_FILE and BAROMETER_TLS_KEY_FILE must be set together")
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		return fmt.Errorf("BAROMETER_TLS_CLIENT_CA_FILE needs BAROMETER_TLS_CERT_FILE and BAROMETER_TLS_KEY_FILE")
	}
	return c.validateOTLP()
}

// OTLPEnabled reports whether the OTLP push receiver is on.
func (c Config) OTLPEnabled() bool { return c.OTLPGRPCAddr != "" || c.OTLPHTTPAddr != "" }

func (c Config) validateOTLP() error {
	if !c.OTLPEnabled() {
		if c.PeerAddr != "" {
			return fmt.Errorf("BAROMETER_PEER_ADDR: the replicas share their OTLP pushes, and the receiver is off (set BAROMETER_OTLP_GRPC_ADDR or BAROMETER_OTLP_HTTP_ADDR)")
		}
		return nil
	}
	switch {
	case c.OTLPCredentials == "":
		return fmt.Errorf("BAROMETER_OTLP_CREDENTIALS: required with BAROMETER_OTLP_GRPC_ADDR or BAROMETER_OTLP_HTTP_ADDR: every push is authenticated (docs/otlp.md)")
	case (c.OTLPTLSCertFile == "") != (c.OTLPTLSKeyFile == ""):
		return fmt.Errorf("BAROMETER_OTLP_TLS_CERT_FILE and BAROMETER_OTLP_TLS_KEY_FILE must be set together")
	case c.OTLPTLSClientCAFile != "" && c.OTLPTLSCertFile == "":
		return fmt.Errorf("BAROMETER_OTLP_TLS_CLIENT_CA_FILE needs BAROMETER_OTLP_TLS_CERT_FILE and BAROMETER_OTLP_TLS_KEY_FILE")
	case c.PeerAddr != "" && c.PeerTokenFile == "":
		return fmt.Errorf("BAROMETER_PEER_TOKEN_FILE: required with BAROMETER_PEER_ADDR: the replicas authenticate each other with it")
	case c.OTLPMaxSeriesPerNamespace > c.OTLPMaxSeries:
		return fmt.Errorf("BAROMETER_OTLP_MAX_SERIES_PER_NAMESPACE %d: allowed at most BAROMETER_OTLP_MAX_SERIES (%d)", c.OTLPMaxSeriesPerNamespace, c.OTLPMaxSeries)
	case c.OTLPMaxMemoryBytesPerNamespace > c.OTLPMaxMemoryBytes:
		return fmt.Errorf("BAROMETER_OTLP_MAX_MEMORY_BYTES_PER_NAMESPACE %d: allowed at most BAROMETER_OTLP_MAX_MEMORY_BYTES (%d)", c.OTLPMaxMemoryBytesPerNamespace, c.OTLPMaxMemoryBytes)
	case c.OTLPMaxOpenRequestsPerCredential > c.OTLPMaxOpenRequests:
		return fmt.Errorf("BAROMETER_OTLP_MAX_OPEN_REQUESTS_PER_CREDENTIAL %d: allowed at most BAROMETER_OTLP_MAX_OPEN_REQUESTS (%d)", c.OTLPMaxOpenRequestsPerCredential, c.OTLPMaxOpenRequests)
	}
	return nil
}

// Var is one variable as its field declares it.
type Var struct {
	Name    string
	Default string // as documented
	Doc     string
	Allowed string // what it accepts, as errors and docs say it; "" for any text
	field   reflect.StructField
}

// Vars lists every variable, in Config's order.
func Vars() []Var {
	fields := reflect.VisibleFields(reflect.TypeFor[Config]())
	out := make([]Var, len(fields))
	for i, f := range fields {
		out[i] = declare(f)
	}
	return out
}

func declare(f reflect.StructField) Var {
	v := Var{Name: f.Tag.Get("env"), Default: f.Tag.Get("envDefault"), Doc: f.Tag.Get("doc"), field: f}
	if v.Default == "" {
		v.Default = f.Tag.Get("docDefault")
	}
	lo, hi := f.Tag.Get("min"), f.Tag.Get("max")
	var kind string
	switch f.Type {
	case reflect.TypeFor[time.Duration]():
		kind = "a duration such as 30s or 2m"
	case reflect.TypeFor[int]():
		kind = "a whole number"
	case reflect.TypeFor[bool]():
		kind = "true or false"
	case reflect.TypeFor[map[string]string]():
		kind = "key=value pairs separated by " + strconv.Quote(f.Tag.Get("envSeparator"))
	}
	switch {
	case f.Tag.Get("oneof") != "":
		kind = orList(strings.Fields(f.Tag.Get("oneof")))
	case lo != "" && hi != "":
		kind += ", from " + lo + " to " + hi
	case lo != "":
		kind += ", " + lo + " or more"
	}
	v.Allowed = kind
	return v
}

// check refuses a value outside the field's declared range or values.
func (v Var) check(val reflect.Value) error {
	if oneof := strings.Fields(v.field.Tag.Get("oneof")); len(oneof) > 0 {
		if !slices.ContainsFunc(oneof, func(o string) bool { return strings.EqualFold(o, val.String()) }) {
			return fmt.Errorf("%s %q: allowed %s", v.Name, val.String(), v.Allowed)
		}
		return nil
	}
	for _, bound := range []struct {
		tag  string
		over func(x, limit int64) bool
	}{{"min", func(x, l int64) bool { return x < l }}, {"max", func(x, l int64) bool { return x > l }}} {
		text := v.field.Tag.Get(bound.tag)
		if text == "" {
			continue
		}
		limit, err := parseBound(v.field.Type, text)
		if err != nil {
			return fmt.Errorf("%s: its %s %w", v.Name, bound.tag, err)
		}
		if bound.over(val.Int(), limit) {
			return fmt.Errorf("%s %s: allowed %s", v.Name, format(val), v.Allowed)
		}
	}
	return nil
}

// parseBound reads a min or max tag in the field's type.
func parseBound(t reflect.Type, text string) (int64, error) {
	switch t {
	case reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(text)
		return int64(d), err
	case reflect.TypeFor[int]():
		return strconv.ParseInt(text, 10, 64)
	}
	return 0, fmt.Errorf("%q: no range for a %s", text, t)
}

func format(val reflect.Value) string {
	if d, ok := val.Interface().(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(val.Interface())
}

func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
