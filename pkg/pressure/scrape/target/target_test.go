package target

import "testing"

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"http://Web.NS.svc:8080":             "http://web.ns.svc:8080/metrics",
		"https://web.ns.svc/custom?x=1":      "https://web.ns.svc/custom?x=1",
		"DNS+HTTP://web.ns.svc:9100/metrics": "dns+http://web.ns.svc:9100/metrics",
		"http://[fd00::1]:80/m":              "http://[fd00::1]:80/m",
	} {
		tg, err := Parse(in)
		if err != nil || tg.String() != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, tg.String(), err, want)
		}
	}
	for _, in := range []string{"", "ftp://x/", "dns+https://x:1/", "http://user:pw@x/", "http:///metrics", "http://x/#frag", "web.ns.svc:80", "mailto:x@y"} {
		if tg, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted: %v", in, tg)
		}
	}
}

func TestParseKubeTarget(t *testing.T) {
	for in, want := range map[string]string{
		"k8s://web:9100":           "k8s://web:9100/metrics",
		"K8S://web:metrics/p?x=1":  "k8s://web:metrics/p?x=1",
		"k8s://web-2:http-metrics": "k8s://web-2:http-metrics/metrics",
	} {
		tg, err := Parse(in)
		if err != nil || tg.String() != want || tg.Kube == nil {
			t.Errorf("%s: %v, %v; want %s", in, tg, err, want)
		}
	}
	for _, bad := range []string{"k8s://web", "k8s://Web:80", "k8s://web:0", "k8s://web:99999", "k8s://web:a_b", "k8s://web:80/x#f", "k8s://u@web:80", "k8s://web.ns:80"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
