package connprofile

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
	"golang.org/x/net/http/httpguts"
)

// The trigger keys whose values Resolve checks; an *Error carries one.
const (
	KeyProfile       = "connectionProfile"
	KeyServerAddress = "serverAddress"
)

// DefaultTenantHeader carries a profile's tenant when it names no header:
// the header Mimir, Cortex and Loki read, which Thanos can be told to read.
const DefaultTenantHeader = "X-Scope-OrgID"

// AnyNamespace in a profile's namespaces admits every namespace.
const AnyNamespace = "*"

// Error is a trigger's use of a profile that Resolve refuses. Key is the
// trigger key at fault, so the caller can answer InvalidArgument naming
// it. The message names the profile and namespace the trigger gave, never
// a credential and never another profile.
type Error struct {
	Key       string
	Profile   string
	Namespace string
	Reason    string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("metadata key %q: ", e.Key)
	if e.Profile != "" {
		s += fmt.Sprintf("connection profile %q: ", e.Profile)
	}
	return s + e.Reason
}

// Options tune Load.
type Options struct {
	// Control vets every address a profile's client dials (the scaler's
	// allow.List.Control). Nil vets nothing.
	Control func(network, address string, c syscall.RawConn) error
	// Logger receives one line when a credential file starts failing and
	// one when it recovers; nil discards.
	Logger *slog.Logger
}

// Set is the loaded profiles. It is safe for concurrent use, and a
// prometheus.Collector of its reload errors.
type Set struct {
	profiles []*Profile
	byName   map[string]*Profile
	reader   *fileReader
}

// Profile is one loaded profile. Its HTTP settings live only inside its
// transport, so no part of a Profile prints a credential.
type Profile struct {
	name       string
	url        string // normalised; "" when pattern is set
	pattern    string
	namespaces []string
	timeout    time.Duration
	redirects  bool
	tenant     string // the tenant header's name; "" without a tenant
	transport  http.RoundTripper
}

// fileProfile is one profile as written in the file.
type fileProfile struct {
	Name         string         `yaml:"name"`
	URL          string         `yaml:"url,omitempty"`
	URLPattern   string         `yaml:"url_pattern,omitempty"`
	Namespaces   []string       `yaml:"namespaces"`
	Tenant       string         `yaml:"tenant,omitempty"`
	TenantHeader string         `yaml:"tenant_header,omitempty"`
	Timeout      model.Duration `yaml:"timeout,omitempty"`

	HTTP config.HTTPClientConfig `yaml:",inline"`
}

// UnmarshalYAML starts from prometheus/common's client defaults (HTTP/2),
// as a Prometheus scrape config does (the inline struct's own
// UnmarshalYAML is not called for an inline field), but for redirects:
// a profile follows none unless it says follow_redirects: true, as a
// trigger without a profile follows none. The allow-list vets only the
// address a redirect dials, not whether the profile may be used there.
func (p *fileProfile) UnmarshalYAML(unmarshal func(any) error) error {
	type plain fileProfile
	*p = fileProfile{HTTP: config.DefaultHTTPClientConfig}
	p.HTTP.FollowRedirects = false
	return unmarshal((*plain)(p))
}

type file struct {
	Profiles []*fileProfile `yaml:"profiles"`
}

// Load reads the profile file at path; see Parse. Relative file names in
// it are relative to the file's directory, as in a Prometheus config.
func Load(path string, opts Options) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("connection profiles: %w", err)
	}
	s, err := parse(data, filepath.Dir(path), opts)
	if err != nil {
		return nil, fmt.Errorf("connection profiles %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a profile file's content. dir resolves relative file names.
// Every credential and certificate file must be readable and well formed
// now; each profile's transport is built once, shared by every trigger
// that uses it, so its connections are reused between them.
func Parse(data []byte, dir string, opts Options) (*Set, error) {
	return parse(data, dir, opts)
}

func parse(data []byte, dir string, opts Options) (*Set, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var f file
	// Strict: a misspelt key (passwd_file) must not silently mean no
	// credentials.
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		if name := profileAtFault(data); name != "" {
			return nil, fmt.Errorf("profile %q: %w", name, redactYAML(err))
		}
		return nil, redactYAML(err)
	}
	s := &Set{byName: map[string]*Profile{}, reader: newFileReader(opts.Logger)}
	for i, fp := range f.Profiles {
		if fp == nil {
			return nil, fmt.Errorf("profile %d is empty", i)
		}
		p, err := s.build(fp, dir, opts)
		if err != nil {
			if fp.Name == "" {
				return nil, fmt.Errorf("profile %d: %w", i, err)
			}
			return nil, fmt.Errorf("profile %q: %w", fp.Name, err)
		}
		if _, dup := s.byName[p.name]; dup {
			return nil, fmt.Errorf("profile %q is declared twice", p.name)
		}
		s.byName[p.name] = p
		s.profiles = append(s.profiles, p)
	}
	return s, nil
}

// redactYAML keeps a YAML error from quoting the file: yaml.v2 names the
// offending value in some messages ("cannot unmarshal !!str `hunter2`"),
// and that value may be a secret.
func redactYAML(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			e = notFound.ReplaceAllString(e, "unknown key $1") // the Go type is ours, not the reader's
			lines[i] = backquoted.ReplaceAllString(e, "`<redacted>`")
		}
		return errors.New("yaml: " + strings.Join(lines, "; "))
	}
	return errors.New(backquoted.ReplaceAllString(err.Error(), "`<redacted>`"))
}

var (
	backquoted = regexp.MustCompile("`[^`]*`")
	notFound   = regexp.MustCompile(`field (\S+) not found in type \S+`)
)

// profileAtFault is the name of the first profile that fails strict
// decoding on its own, for an error that otherwise gives only a line of
// the file; "" when none does (the fault is outside the profiles) or it
// has no name. yaml.v2 keeps no line numbers, so each profile is decoded
// again from its own re-encoding.
func profileAtFault(data []byte) string {
	var loose struct {
		Profiles []yaml.MapSlice `yaml:"profiles"`
	}
	if yaml.Unmarshal(data, &loose) != nil {
		return ""
	}
	for _, raw := range loose.Profiles {
		one, err := yaml.Marshal(raw)
		if err != nil {
			continue
		}
		var fp fileProfile
		if yaml.UnmarshalStrict(one, &fp) == nil {
			continue
		}
		for _, item := range raw {
			if name, ok := item.Value.(string); ok && item.Key == "name" && namePattern.MatchString(name) {
				return name
			}
		}
		return ""
	}
	return ""
}

// namePattern is a profile name: what a metadata value can carry plainly.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

// namespacePattern is a Kubernetes namespace name (an RFC 1123 label).
var namespacePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func (s *Set) build(fp *fileProfile, dir string, opts Options) (*Profile, error) {
	if !namePattern.MatchString(fp.Name) {
		return nil, fmt.Errorf("name %q: lower-case letters, digits, '.', '_' and '-', at most 63", fp.Name)
	}
	p := &Profile{name: fp.Name, timeout: time.Duration(fp.Timeout), redirects: fp.HTTP.FollowRedirects}
	switch {
	case (fp.URL == "") == (fp.URLPattern == ""):
		// Without one, a trigger could send this profile's credentials
		// to any server the allow-list admits.
		return nil, errors.New("set exactly one of url and url_pattern")
	case fp.URL != "":
		u, err := NormalizeURL(fp.URL)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		p.url = u
	default:
		if !strings.HasPrefix(fp.URLPattern, "http://") && !strings.HasPrefix(fp.URLPattern, "https://") {
			return nil, fmt.Errorf("url_pattern %q: start with http:// or https://", fp.URLPattern)
		}
		if _, err := path.Match(fp.URLPattern, ""); err != nil {
			return nil, fmt.Errorf("url_pattern %q: %w", fp.URLPattern, err)
		}
		p.pattern = strings.TrimRight(strings.ToLower(fp.URLPattern), "/")
	}
	if len(fp.Namespaces) == 0 {
		return nil, errors.New(`namespaces: list the namespaces that may use it, or "*" for every one`)
	}
	for _, ns := range fp.Namespaces {
		if ns != AnyNamespace && !namespacePattern.MatchString(ns) {
			return nil, fmt.Errorf("namespaces: %q is not a namespace name", ns)
		}
	}
	p.namespaces = slices.Clone(fp.Namespaces)
	if fp.Timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	header := fp.TenantHeader
	if fp.Tenant == "" && header != "" {
		return nil, errors.New("tenant_header without a tenant")
	}
	if fp.Tenant != "" {
		if header == "" {
			header = DefaultTenantHeader
		}
		if !httpguts.ValidHeaderFieldName(header) {
			return nil, fmt.Errorf("tenant_header %q is not a header name", header)
		}
		if _, reserved := config.ReservedHeaders[http.CanonicalHeaderKey(header)]; reserved {
			return nil, fmt.Errorf("tenant_header %q is reserved", header)
		}
		if !httpguts.ValidHeaderFieldValue(fp.Tenant) {
			return nil, errors.New("tenant: not a valid header value")
		}
		p.tenant = http.CanonicalHeaderKey(header)
	}

	hc := fp.HTTP
	hc.SetDirectory(dir)
	if err := hc.Validate(); err != nil {
		return nil, err
	}
	headerFiles, err := s.reader.adopt(p.name, &hc)
	if err != nil {
		return nil, err
	}
	// No WithUserAgent: each source sends its own.
	clientOpts := []config.HTTPClientOption{config.WithSecretManager(s.reader)}
	if opts.Control != nil {
		clientOpts = append(clientOpts, config.WithDialContextFunc(dialer(opts.Control).DialContext))
	}
	rt, err := config.NewRoundTripperFromConfig(hc, "profile_"+p.name, clientOpts...)
	if err != nil {
		return nil, err
	}
	rt = &namingTransport{next: rt, profile: p.name, hasCA: hc.TLSConfig.CARef != ""}
	if len(headerFiles) > 0 || fp.Tenant != "" {
		rt = &headerTransport{next: rt, reader: s.reader, files: headerFiles, tenantHeader: header, tenant: fp.Tenant}
	}
	p.transport = rt
	return p, nil
}

// NormalizeURL is the form servers are compared in: an http or https URL
// with a host and no credentials, query or fragment, its scheme and host
// lower-cased and trailing slashes dropped (pkg/target normalises
// serverAddress the same way).
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an http or https URL without credentials, query or fragment", raw)
	}
	u.Scheme, u.Host, u.Path = strings.ToLower(u.Scheme), strings.ToLower(u.Host), strings.TrimRight(u.Path, "/")
	return u.String(), nil
}

// Names lists the profiles in file order, for a startup log line.
func (s *Set) Names() []string {
	out := make([]string, len(s.profiles))
	for i, p := range s.profiles {
		out[i] = p.name
	}
	return out
}

// Resolve is the profile a trigger in namespace uses: the one named by
// profile (the trigger's connectionProfile), else the first, in file
// order, whose url or url_pattern matches serverURL and which admits the
// namespace. It returns nil and no error when profile is empty and no
// profile matches serverURL: the server is reached without one.
//
// A named profile must admit the namespace, and a serverURL given with it
// must be one the profile matches; with no serverURL the trigger uses the
// profile's url (Profile.URL), which a url_pattern profile does not have.
// A nil Set resolves every address to no profile and refuses every name.
func (s *Set) Resolve(profile, serverURL, namespace string) (*Profile, error) {
	var server string
	if serverURL != "" {
		var err error
		if server, err = NormalizeURL(serverURL); err != nil {
			return nil, &Error{Key: KeyServerAddress, Reason: err.Error()}
		}
	}
	if profile != "" {
		var p *Profile
		if s != nil {
			p = s.byName[profile]
		}
		switch {
		case p == nil:
			return nil, &Error{Key: KeyProfile, Profile: profile, Reason: "no connection profile of that name is configured in the scaler"}
		case !p.admits(namespace):
			return nil, p.refuse(KeyProfile, namespace)
		case server == "" && p.url == "":
			return nil, &Error{Key: KeyServerAddress, Profile: profile, Reason: "the profile matches a URL pattern, so the trigger must set serverAddress"}
		case server != "" && !p.matches(server):
			return nil, &Error{Key: KeyServerAddress, Profile: profile, Reason: fmt.Sprintf("%q is not a server this profile may be used with", server)}
		}
		return p, nil
	}
	if server == "" || s == nil {
		return nil, nil
	}
	var refused *Profile
	for _, p := range s.profiles {
		if !p.matches(server) {
			continue
		}
		if p.admits(namespace) {
			return p, nil
		}
		if refused == nil {
			refused = p
		}
	}
	if refused != nil {
		// The server is one a profile guards: reaching it without the
		// profile would only fail at the server, less clearly.
		return nil, refused.refuse(KeyServerAddress, namespace)
	}
	return nil, nil
}

// KeyTargets is the scrape source's address key, which ResolveTargets
// puts in its errors where Resolve says serverAddress.
const KeyTargets = "targets"

// ResolveTargets is Resolve for a source that reaches several addresses,
// the scrape source's targets (in their http:// or https:// form; a
// dns+http target as its http URL): every one must resolve to the same
// profile, or every one to none, since one source has one client.
func (s *Set) ResolveTargets(profile string, urls []string, namespace string) (*Profile, error) {
	var (
		first *Profile
		from  string
	)
	for i, u := range urls {
		p, err := s.Resolve(profile, u, namespace)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Key == KeyServerAddress {
				e.Key = KeyTargets
			}
			return nil, err
		}
		if i > 0 && p != first {
			return nil, &Error{Key: KeyTargets, Profile: profile,
				Reason: fmt.Sprintf("%s and %s resolve to different connection profiles (%s, %s); one trigger uses one", from, u, nameOf(first), nameOf(p))}
		}
		first, from = p, u
	}
	return first, nil
}

func nameOf(p *Profile) string {
	if p == nil {
		return "none"
	}
	return p.name
}

func (p *Profile) refuse(key, namespace string) error {
	return &Error{Key: key, Profile: p.name, Namespace: namespace,
		Reason: fmt.Sprintf("namespace %q may not use this connection profile", namespace)}
}

func (p *Profile) admits(namespace string) bool {
	return slices.Contains(p.namespaces, AnyNamespace) || namespace != "" && slices.Contains(p.namespaces, namespace)
}

func (p *Profile) matches(server string) bool {
	if p.url != "" {
		return server == p.url
	}
	ok, _ := path.Match(p.pattern, server) // checked at load
	return ok
}

// Name is the profile's name.
func (p *Profile) Name() string { return p.name }

// URL is the profile's server URL (normalised), or "" for a url_pattern
// profile.
func (p *Profile) URL() string { return p.url }

// Timeout is the profile's time-out: the ceiling of one sample's requests
// through it, and their budget when the trigger sets none. Zero: none.
func (p *Profile) Timeout() time.Duration { return p.timeout }

// TenantHeader is the header the profile's tenant is sent in, canonical,
// or "" when it has no tenant.
func (p *Profile) TenantHeader() string { return p.tenant }

// FollowRedirects is the profile's follow_redirects (false unless the
// file says true).
func (p *Profile) FollowRedirects() bool { return p.redirects }

// Transport sends a request with the profile's credentials, TLS and tenant
// header, re-reading rotated files. Share it: it holds the profile's
// kept-alive connections. Its errors name the profile.
func (p *Profile) Transport() http.RoundTripper { return p.transport }

// maxRedirects is net/http's own bound on a chain of redirects.
const maxRedirects = 10

// Client is an *http.Client over Transport with the profile's redirect
// policy: none is followed unless the profile follows redirects, and
// then only to a server the profile may be used with (its url or
// url_pattern, as Resolve checks serverAddress), since the tenant header
// goes wherever the request goes. Credentials do not follow a redirect to
// another host even then (prometheus/common drops them).
func (p *Profile) Client() *http.Client {
	return &http.Client{Transport: p.transport, CheckRedirect: p.checkRedirect}
}

func (p *Profile) checkRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case !p.redirects:
		return fmt.Errorf("redirect to %s not followed: connection profile %q does not follow redirects (follow_redirects)", req.URL.Redacted(), p.name)
	case len(via) >= maxRedirects:
		return fmt.Errorf("connection profile %q: stopped after %d redirects", p.name, maxRedirects)
	case !p.mayReach(req.URL):
		return fmt.Errorf("redirect to %s not followed: not a server connection profile %q may be used with", req.URL.Redacted(), p.name)
	}
	return nil
}

// mayReach says u is on a server the profile matches: its origin, or its
// origin and a leading part of its path (a profile's url may carry a
// path prefix, such as a frontend's /prometheus).
func (p *Profile) mayReach(u *url.URL) bool {
	if u.User != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	base := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	if p.matches(base) {
		return true
	}
	prefix := base
	for seg := range strings.SplitSeq(strings.Trim(u.EscapedPath(), "/"), "/") {
		if seg == "" {
			continue
		}
		prefix += "/" + seg
		if p.matches(prefix) {
			return true
		}
	}
	return false
}

// String is the profile's name: nothing else of a profile is printable.
func (p *Profile) String() string { return "connection profile " + p.name }

// Describe and Collect make the Set a prometheus.Collector of its reload
// errors.
func (s *Set) Describe(ch chan<- *prometheus.Desc) { s.reader.errors.Describe(ch) }

// Collect reports barometer_connection_profile_reload_errors_total.
func (s *Set) Collect(ch chan<- prometheus.Metric) { s.reader.errors.Collect(ch) }
