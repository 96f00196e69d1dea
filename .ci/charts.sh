#!/usr/bin/env bash
# The Helm chart, the image and the examples: helm lint and helm template
# (helm built from tools/go.mod, cached by `go tool`), the chart's schema
# refusing bad values, then examples/check: every YAML document under
# examples/, the README's ScaledObjects, the rendered chart and its NOTES
# decoded strictly with KEDA's and Kubernetes' API types and checked, each
# ScaledObject against the chart (its addresses the chart's Services, a source
# that reads the workload, scaleDown.stabilizationWindowSeconds 0); the
# Dockerfile's go build run on the build context .dockerignore admits; and the
# scaler so built, sent every example trigger's metadata as KEDA would
# (GetMetricSpec, GET /scale). The monitoring objects: the PrometheusRule
# through promtool check rules and promtool test rules, the Grafana
# dashboard's PromQL through Prometheus' parser, and every metric either names
# checked against the scaler's own /metrics.
#
#   bash .ci/charts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
chart=$root/charts/barometer
# helm lint's deprecation check runs against a current Kubernetes. Nothing
# renders with a version: a helm built with plain `go build` assumes v1.20
# (helm's release ldflags stamp the real one), and the chart, which states
# no kubeVersion, must render with `helm template` and no flags.
kube_version=1.34.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

step() { printf '\n=== %s (at %ds)\n' "$*" "$SECONDS"; }
# Both tools are `tool` directives of tools/go.mod: the first run builds
# them (about 2.5 minutes cold), later runs take them from the build cache.
helm() { (cd "$root/tools" && go tool helm "$@"); }
helmnotes() { (cd "$root/tools" && go tool helmnotes "$@"); }

step "tools/ and examples/check: gofmt, go vet, staticcheck"
unformatted=$(gofmt -l tools examples/check)
if [ -n "$unformatted" ]; then
  echo "not gofmt-clean:"; echo "$unformatted"; exit 1
fi
(cd tools && go vet ./...)
(cd examples/check && go vet ./...)
if command -v staticcheck >/dev/null; then
  (cd tools && staticcheck ./...)
  (cd examples/check && staticcheck ./...)
fi

step "helm lint, helm template, NOTES"
helm version --short
# The README's first look at the chart: no flags at all.
helm template barometer "$chart" >"$out/plain.yaml"
echo "helm template barometer charts/barometer: $(grep -c '^kind:' "$out/plain.yaml") objects"
rendered=() notes=()
for values in "" "$chart"/ci/*-values.yaml; do
  name=default args=()
  if [ -n "$values" ]; then
    name=$(basename "$values" -values.yaml) args=(-f "$values")
  fi
  echo "--- values: ${values:-chart defaults}"
  helm lint --strict --kube-version "$kube_version" "${args[@]}" "$chart"
  helm template barometer "$chart" --namespace barometer "${args[@]}" >"$out/$name.yaml"
  helmnotes -n barometer "${args[@]}" barometer "$chart" >"$out/$name-notes.txt"
  rendered+=("$out/$name.yaml") notes+=("$out/$name-notes.txt")
done

step "the chart refuses bad values"
refuse() {
  local why=$1; shift
  if helm template barometer "$chart" "$@" >"$out/refused.txt" 2>&1; then
    echo "accepted, but should refuse ($why): $*"; exit 1
  fi
  # The schema's own line names the field ("- at '/path': ..."); a
  # template's fail is the error line.
  local msg
  msg=$(grep -m1 "^- at '" "$out/refused.txt" || grep -m1 -i 'error\|fail' "$out/refused.txt" || true)
  echo "refused ($why): $(cut -c1-160 <<<"$msg")"
}
refuse "unknown key" --set replicas=3
refuse "unknown nested key" --set config.sampleIntervall=5s
refuse "log level" --set config.logLevel=verbose
refuse "duration" --set config.sampleInterval=5
refuse "client CA without a server certificate" --set tls.clientCASecretName=ca
refuse "';' in a default target value" --set 'config.defaultTarget.source=host;x'
refuse "relative connection profiles mount path" --set connectionProfiles.mountPath=profiles
refuse "connection profiles Secret name" --set connectionProfiles.secretName=Bad_Name
refuse "ServiceMonitor and PodMonitor together" --set serviceMonitor.enabled=true --set podMonitor.enabled=true
refuse "unknown PodMonitor key" --set podMonitor.port=http
refuse "scrape interval" --set podMonitor.interval=30
refuse "ratio above 1" --set-json prometheusRule.scrapeErrorRatio=1.5
refuse "ratio above 1, as --set passes it" --set prometheusRule.scrapeErrorRatio=1.5
refuse "ratio of 0" --set prometheusRule.getMetricsUnavailableRatio=0
refuse "expiry days not an integer" --set-json prometheusRule.certificateExpiryDays=1.5
refuse "alert label the chart sets" --set prometheusRule.additionalAlertLabels.severity=page
refuse "runbook URL with an anchor" --set 'prometheusRule.runbookURL=https://example.com/ops#x'
refuse "anti-affinity preset" --set podAntiAffinity=soft
refuse "namespace name" --set networkPolicy.keda.namespace=KEDA
refuse "NetworkPolicy pod selector key" --set networkPolicy.monitoring.podSelector.app=prometheus
refuse "toleration operator" --set 'tolerations[0].operator=Matches'
refuse "affinity key" --set affinity.nodeSelector.x=y
refuse "priority class name" --set priorityClassName=High_Priority
refuse "extraObjects entry" --set 'extraObjects[0]=3'
refuse "OTLP receiver without credentials" --set otlp.enabled=true
refuse "OTLP client CA without a server certificate" --set otlp.tls.clientCASecretName=ca
refuse "OTLP port" --set otlp.ports.grpc=70000
refuse "OTLP peer port" --set otlp.enabled=true --set otlp.credentials.secretName=c --set otlp.peers.port=0
refuse "OTLP peer port taken" --set otlp.enabled=true --set otlp.credentials.secretName=c --set otlp.peers.port=4317

# The PrometheusRule with the chart's default thresholds and labels: the
# one examples/check/testdata/alerts-test.yaml was written against.
helm template barometer "$chart" --namespace barometer \
  --set prometheusRule.enabled=true --show-only templates/prometheusrule.yaml >"$out/prometheusrule.yaml"

step "examples/check (strict decoding, KEDA's validation, image build context, the scaler's own answer)"
join() { local IFS=:; echo "$*"; }
(cd examples/check &&
  BAROMETER_CHECK_RENDERED=$(join "${rendered[@]}") BAROMETER_CHECK_NOTES=$(join "${notes[@]}") \
    BAROMETER_CHECK_RULES=$out/prometheusrule.yaml \
    go test -count=1 ./...)
echo "charts.sh: done in ${SECONDS}s"
