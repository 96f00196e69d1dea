package cluster

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/barometer-scaler/barometer/e2e/internal/pki"
)

// certs are the cluster's certificates, written under dir:
//
//	ca.crt ca.key               the cluster CA (apiserver clients and servers, KEDA)
//	apiserver.crt/.key          kube-apiserver's serving certificate
//	admin.crt/.key              the admin client (system:masters)
//	sa.key sa.pub               the service-account token key pair
//	front-proxy-ca.crt          the aggregator's request-header CA
//	front-proxy-client.crt/.key the aggregator's client certificate
//	keda/{ca,tls}.crt tls.key   KEDA's operator<->adapter mTLS and the adapter's serving cert
type certs struct {
	dir       string
	ca        *pki.CA
	admin     pki.Pair
	kedaDir   string
	frontCA   string
	saKey     string
	saPub     string
	apiCert   string
	apiKey    string
	proxyCert string
	proxyKey  string
}

func makeCerts(dir string, n NetNS) (*certs, error) {
	ca, err := pki.NewCA("barometer-e2e-ca")
	if err != nil {
		return nil, err
	}
	front, err := pki.NewCA("barometer-e2e-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	hostIP, nsIP := net.ParseIP(n.HostIP), net.ParseIP(n.NSIP)
	api, err := ca.Issue(pki.Leaf{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		IPs:        []net.IP{hostIP, net.ParseIP("127.0.0.1"), kubernetesServiceIP(n)},
		Server:     true,
	})
	if err != nil {
		return nil, err
	}
	admin, err := ca.Issue(pki.Leaf{CommonName: "barometer-e2e-admin", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		return nil, err
	}
	proxy, err := front.Issue(pki.Leaf{CommonName: frontProxyName, Client: true})
	if err != nil {
		return nil, err
	}
	keda, err := ca.Issue(pki.Leaf{
		CommonName: "keda",
		DNSNames: []string{
			"keda-operator", "keda-operator.keda", "keda-operator.keda.svc", "keda-operator.keda.svc.cluster.local",
			"keda-metrics-apiserver", "keda-metrics-apiserver.keda", "keda-metrics-apiserver.keda.svc", "keda-metrics-apiserver.keda.svc.cluster.local",
			"localhost",
		},
		IPs:    []net.IP{hostIP, nsIP, net.ParseIP("127.0.0.1")},
		Server: true, Client: true,
	})
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := pki.KeyPair()
	if err != nil {
		return nil, err
	}
	if err := pki.Write(dir, map[string][]byte{
		"ca.crt":                 ca.CertPEM,
		"apiserver.crt":          api.CertPEM,
		"apiserver.key":          api.KeyPEM,
		"admin.crt":              admin.CertPEM,
		"admin.key":              admin.KeyPEM,
		"sa.key":                 saKey,
		"sa.pub":                 saPub,
		"front-proxy-ca.crt":     front.CertPEM,
		"front-proxy-client.crt": proxy.CertPEM,
		"front-proxy-client.key": proxy.KeyPEM,
	}); err != nil {
		return nil, err
	}
	kedaDir := filepath.Join(dir, "keda")
	if err := pki.Write(kedaDir, map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": keda.CertPEM, "tls.key": keda.KeyPEM}); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "keda-ca-dir"), 0o700); err != nil {
		return nil, err
	}
	j := func(name string) string { return filepath.Join(dir, name) }
	return &certs{
		dir: dir, ca: ca, admin: admin, kedaDir: kedaDir,
		frontCA: j("front-proxy-ca.crt"), saKey: j("sa.key"), saPub: j("sa.pub"),
		apiCert: j("apiserver.crt"), apiKey: j("apiserver.key"),
		proxyCert: j("front-proxy-client.crt"), proxyKey: j("front-proxy-client.key"),
	}, nil
}

func (c *certs) path(name string) string { return filepath.Join(c.dir, name) }

// kubeconfig writes an admin kubeconfig for server.
func (c *certs) kubeconfig(path, server string) error {
	return c.userKubeconfig(path, server, c.admin)
}

// userKubeconfig writes a kubeconfig for server that authenticates with
// the client certificate user.
func (c *certs) userKubeconfig(path, server string, user pki.Pair) error {
	b64 := base64.StdEncoding.EncodeToString
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, server, b64(c.ca.CertPEM), b64(user.CertPEM), b64(user.KeyPEM))
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// kubernetesServiceIP is the kubernetes Service's ClusterIP: the first of
// the Service range.
func kubernetesServiceIP(n NetNS) net.IP {
	p := netip.MustParsePrefix(n.ServiceNet).Masked()
	return net.IP(p.Addr().Next().AsSlice())
}
