package check

import (
	"strings"
	"testing"
)

// A ScaledObject, a TriggerAuthentication and the workload they point at,
// all valid; each case below breaks one thing.
const validSet = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: web
          image: example/web:1
          ports: [{name: metrics, containerPort: 9100}]
          readinessProbe: {httpGet: {path: /, port: metrics}}
          livenessProbe: {httpGet: {path: /, port: metrics}}
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: "1", memory: 128Mi}
          securityContext:
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
            seccompProfile: {type: RuntimeDefault}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: metrics, port: 9100, targetPort: metrics}]
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata: {name: tls, namespace: shop}
spec:
  secretTargetRef:
    - {parameter: caCert, name: keda-client, key: ca.crt}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {name: web}
  minReplicaCount: 1
  maxReplicaCount: 10
  advanced:
    horizontalPodAutoscalerConfig:
      behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  triggers:
    - type: external
      metricType: AverageValue
      authenticationRef: {name: tls}
      metadata:
        scalerAddress: barometer.barometer.svc.cluster.local:6000
        source: scrape
        targets: dns+http://web.shop.svc.cluster.local:9100/metrics
        targetPressure: "0.7"
    - type: metrics-api
      name: http
      metadata:
        url: http://barometer-http.barometer.svc:8080/scale
        valueLocation: scaleValue
        targetValue: "0.7"
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: web, namespace: monitoring}
spec:
  namespaceSelector: {matchNames: [shop]}
  selector: {matchLabels: {app: web}}
  podMetricsEndpoints: [{port: metrics, path: /metrics}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: barometer}}}]
      ports: [{port: metrics, protocol: TCP}]
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: web, namespace: monitoring}
spec:
  groups:
    - name: web
      rules:
        - alert: WebDown
          expr: up{job="web"} == 0
          for: 5m
          labels: {severity: warning}
          annotations: {summary: web is down, description: no scrape of web succeeds, runbook_url: "https://example.com/ops#webdown"}
`

func TestValidSetPasses(t *testing.T) {
	c := newChecker(t)
	docs, err := Decode("valid.yaml", []byte(validSet))
	if err != nil {
		t.Fatal(err)
	}
	report(t, c.Check(docs, Options{References: true}))
}

// TestRejects proves the check catches each kind of drift.
func TestRejects(t *testing.T) {
	c := newChecker(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"unknown field", "  minReplicaCount: 1\n", "  minReplicas: 1\n", `unknown field "spec.minReplicas"`},
		{"field in the wrong case", "  scaleTargetRef: {name: web}", "  ScaleTargetRef: {name: web}", `unknown field "spec.ScaleTargetRef"`},
		{"duplicate key", "        targetPressure: \"0.7\"\n", "        targetPressure: \"0.7\"\n        targetPressure: \"0.8\"\n", `key "targetPressure" already set`},
		{"number where KEDA wants a string", `targetPressure: "0.7"`, `targetPressure: 0.7`, "cannot unmarshal number"},
		{"undocumented Barometer key", `targetPressure: "0.7"`, `targetPresure: "0.7"`, `metadata key "targetPresure" is not documented`},
		{"Value target on a Barometer trigger", "      metricType: AverageValue", "      metricType: Value", "Barometer triggers use AverageValue"},
		{"metricType misspelt", "      metricType: AverageValue", "      metricType: Average", "Barometer triggers use AverageValue"},
		{"no source", "        source: scrape\n", "", "metadata.source is required"},
		{"the scaler's own host as the source", "source: scrape", "source: host", "source host reads the scaler's own machine"},
		{"HPA's default scale-down window", "      behavior: {scaleDown: {stabilizationWindowSeconds: 0}}\n", "      behavior: {scaleUp: {stabilizationWindowSeconds: 0}}\n", "stabilizationWindowSeconds: want 0"},
		{"a scale-down window of its own", "stabilizationWindowSeconds: 0}}", "stabilizationWindowSeconds: 300}}", "stabilizationWindowSeconds: want 0"},
		{"field KEDA's CRD requires", "{parameter: caCert, name: keda-client, key: ca.crt}", "{parameter: caCert, name: keda-client}", "KEDA's CRD schema"},
		{"min above max (KEDA's own check)", "  minReplicaCount: 1\n", "  minReplicaCount: 11\n", "MinReplicaCount=11 must be less than MaxReplicaCount=10"},
		{"duplicate trigger names (KEDA's own check)", "    - type: external\n", "    - type: external\n      name: http\n", "triggerName \"http\" is defined multiple times"},
		{"fallback behavior outside KEDA's enum", "  maxReplicaCount: 10\n", "  maxReplicaCount: 10\n  fallback: {failureThreshold: 3, replicas: 2, behavior: sometimes}\n", "KEDA's CRD schema"},
		{"metrics-api key KEDA does not read", "        valueLocation: scaleValue", "        valueLocatoin: scaleValue", `"valueLocatoin" is not one KEDA's metrics-api scaler reads`},
		{"valueLocation not in GET /scale", "valueLocation: scaleValue", "valueLocation: scale_value", `valueLocation "scale_value" is not a number`},
		{"auth parameter the external scaler ignores", "parameter: caCert", "parameter: ca", `parameter "ca" is not one KEDA's external scaler reads`},
		{"missing TriggerAuthentication", "authenticationRef: {name: tls}", "authenticationRef: {name: mtls}", `no TriggerAuthentication "mtls"`},
		{"missing scale target", "  scaleTargetRef: {name: web}", "  scaleTargetRef: {name: api}", "no Deployment shop/api"},
		{"scrape target Service not headless", "  clusterIP: None\n", "", "is not headless"},
		{"scrape target port missing", "svc.cluster.local:9100/metrics", "svc.cluster.local:9200/metrics", "has no port 9200"},
		{"writable root filesystem", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem: true is required"},
		{"no seccomp profile", "            seccompProfile: {type: RuntimeDefault}\n", "", "seccompProfile.type: RuntimeDefault is required"},
		{"unconfined seccomp profile", "seccompProfile: {type: RuntimeDefault}", "seccompProfile: {type: Unconfined}", "seccompProfile.type: RuntimeDefault is required"},
		{"PodMonitor port the pods lack", "podMetricsEndpoints: [{port: metrics,", "podMetricsEndpoints: [{port: http,", `port "http" is not a port of Deployment web's containers`},
		{"PodMonitor field misspelt", "podMetricsEndpoints: [{port: metrics, path:", "podMetricsEndpoints: [{port: metrics, pathh:", `unknown field "spec.podMetricsEndpoints[0].pathh"`},
		{"PodMonitor selecting nothing", "  selector: {matchLabels: {app: web}}\n  podMetricsEndpoints", "  selector: {matchLabels: {app: api}}\n  podMetricsEndpoints", "matches no Deployment's pods in [shop]"},
		{"NetworkPolicy port the pods lack", "ports: [{port: metrics, protocol: TCP}]", "ports: [{port: grpc, protocol: TCP}]", `port "grpc" is not a port of Deployment web's containers`},
		{"NetworkPolicy selecting every pod", "  podSelector: {matchLabels: {app: web}}\n  policyTypes", "  podSelector: {}\n  policyTypes", "would select every pod"},
		{"alert without a summary", "annotations: {summary: web is down, ", "annotations: {", "has no summary annotation"},
		{"alert without a severity", "labels: {severity: warning}", "labels: {team: web}", "has no severity label"},
		{"runbook URL pointing elsewhere", "ops#webdown", "ops#other", "does not point at its section"},
		{"rule field misspelt", "          for: 5m\n", "          fore: 5m\n", `unknown field "spec.groups[0].rules[0].fore"`},
		{"no resource limits", "          resources:\n            requests: {cpu: 100m, memory: 64Mi}\n            limits: {cpu: \"1\", memory: 128Mi}\n", "", "a request and a limit for cpu are required"},
		{"probe on an undeclared port", "readinessProbe: {httpGet: {path: /, port: metrics}}", "readinessProbe: {httpGet: {path: /, port: http}}", `names port "http"`},
		{"bad quantity", "memory: 64Mi}", "memory: 64MB}", "quantities must match"},
		{"Service selecting nothing", "  selector: {app: web}\n  ports", "  selector: {app: api}\n  ports", "matches no Deployment's pods"},
		{"invalid name", "metadata: {name: web, namespace: shop}\nspec:\n  clusterIP", "metadata: {name: Web, namespace: shop}\nspec:\n  clusterIP", "metadata"},
		{"unknown kind", "kind: Service\n", "kind: Sevrice\n", "not a kind this check knows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validSet, tc.old) {
				t.Fatalf("case does not apply: %q not in the valid set", tc.old)
			}
			src := strings.Replace(validSet, tc.old, tc.new, 1)
			docs, err := Decode("case.yaml", []byte(src))
			var msgs []string
			if err != nil {
				msgs = append(msgs, err.Error())
			}
			for _, e := range c.Check(docs, Options{References: true}) {
				msgs = append(msgs, e.Error())
			}
			all := strings.Join(msgs, "\n")
			if !strings.Contains(all, tc.want) {
				t.Errorf("want an error containing %q, got:\n%s", tc.want, all)
			}
		})
	}
}

func TestDocumentedKeysComeFromTables(t *testing.T) {
	keys := map[string]string{}
	tableKeys("x.md", []byte(`
| key | default | meaning |
| --- | --- | --- |
| `+"`alpha`"+` | 1 | a |
| `+"`beta` ... `gamma`"+` | 2 | b |

| variable | default |
| --- | --- |
| `+"`BAROMETER_X`"+` | 1 |

| series | rename with |
| --- | --- |
| `+"`some_series`"+` | `+"`deltaMetric`"+` |
`), keys)
	for _, k := range []string{"alpha", "beta", "gamma", "deltaMetric"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("%s not found in %v", k, keys)
		}
	}
	for _, k := range []string{"BAROMETER_X", "some_series", "default"} {
		if _, ok := keys[k]; ok {
			t.Errorf("%s taken as a key", k)
		}
	}
}
