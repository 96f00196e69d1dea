package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
)

// pushConfig is how the replicas push their contract over OTLP.
type pushConfig struct {
	endpoint, protocol, tokenFile string
	attributes                    string
	insecure                      bool
	interval                      time.Duration
}

// start pushes replica i's contract every interval until the returned
// function is called (it sends a last export).
func (c pushConfig) start(ctx context.Context, w *demo.Workload, addr string, i, replicas int) (func(), error) {
	headers := map[string]string{}
	if c.tokenFile != "" {
		token, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("-otlp-token-file: %w", err)
		}
		headers["authorization"] = "Bearer " + strings.TrimSpace(string(token))
	}
	var exp sdkmetric.Exporter
	var err error
	switch c.protocol {
	case "grpc":
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(c.endpoint), otlpmetricgrpc.WithHeaders(headers)}
		if c.insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	case "http":
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(c.endpoint), otlpmetrichttp.WithHeaders(headers)}
		if c.insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("-otlp-protocol %q: allowed grpc or http", c.protocol)
	}
	if err != nil {
		return nil, err
	}
	res, err := c.resource(ctx, addr, i, replicas)
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(c.interval))))
	if err := w.RegisterOTel(mp.Meter("demo-workload")); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mp.Shutdown(sctx)
	}, nil
}

// resource is OTEL_RESOURCE_ATTRIBUTES and -otlp-attributes, service.name
// demo-workload unless they name one, and the
// replica's own instance id; several replicas of one process get distinct
// pod names.
func (c pushConfig) resource(ctx context.Context, addr string, i, replicas int) (*resource.Resource, error) {
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if c.attributes != "" {
		var extra []attribute.KeyValue
		for pair := range strings.SplitSeq(c.attributes, ",") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("-otlp-attributes: %q is not k=v", pair)
			}
			extra = append(extra, attribute.String(strings.TrimSpace(k), strings.TrimSpace(v)))
		}
		if env, err = resource.Merge(env, resource.NewSchemaless(extra...)); err != nil {
			return nil, err
		}
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "demo-workload"), attribute.String("service.instance.id", addr)}
	if pod, ok := env.Set().Value("k8s.pod.name"); ok && replicas > 1 {
		attrs = append(attrs, attribute.String("k8s.pod.name", fmt.Sprintf("%s-%d", pod.AsString(), i)))
	}
	if name, ok := env.Set().Value("service.name"); ok {
		attrs[0] = attribute.String("service.name", name.AsString())
	}
	return resource.Merge(env, resource.NewSchemaless(attrs...))
}
