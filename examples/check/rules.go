package check

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Barometer's trigger types.
var barometerTriggers = map[string]bool{"external": true, "external-push": true}

// Checker checks decoded documents against KEDA's sources and the
// project's documentation.
type Checker struct {
	KEDA *KEDA
	Docs *Docs
	// External and MetricsAPI are the keys KEDA's external and metrics-api
	// scalers declare.
	External, MetricsAPI Keys
}

// NewChecker loads KEDA's facts from the module cache and the project's
// documentation from root.
func NewChecker(root string) (*Checker, error) {
	k, err := LoadKEDA()
	if err != nil {
		return nil, err
	}
	d, err := LoadDocs(root)
	if err != nil {
		return nil, err
	}
	c := &Checker{KEDA: k, Docs: d}
	if c.External, err = k.ScalerKeys("externalScalerMetadata"); err != nil {
		return nil, err
	}
	if c.MetricsAPI, err = k.ScalerKeys("metricsAPIScalerMetadata"); err != nil {
		return nil, err
	}
	return c, nil
}

// Options say how a set of documents is checked.
type Options struct {
	// References requires every reference to resolve inside the set: a
	// ScaledObject's scaleTargetRef and authenticationRef, a dns+http scrape
	// target's Service, a Service's or PodDisruptionBudget's pods, a
	// ServiceMonitor's Service, a PodMonitor's or NetworkPolicy's pods and
	// their ports. Off for fragments such as NOTES.txt.
	References bool
}

// Check runs every rule over a set of documents and returns one error per
// problem, each naming the document.
func (c *Checker) Check(docs []*Document, opt Options) []error {
	s := &set{docs: docs, opt: opt}
	for _, d := range docs {
		s.cur = d
		s.meta(d)
		switch o := d.Object.(type) {
		case *appsv1.Deployment:
			s.deployment(o)
		case *corev1.Service:
			s.service(o)
		case *policyv1.PodDisruptionBudget:
			s.pdb(o)
		case *monitoringv1.ServiceMonitor:
			s.serviceMonitor(o)
		case *monitoringv1.PodMonitor:
			s.podMonitor(o)
		case *monitoringv1.PrometheusRule:
			s.prometheusRule(o)
		case *networkingv1.NetworkPolicy:
			s.networkPolicy(o)
		case *kedav1alpha1.ScaledObject:
			s.schema(c)
			c.scaledObject(s, o)
		case *kedav1alpha1.TriggerAuthentication:
			s.schema(c)
			if _, err := o.ValidateCreate(nil); err != nil {
				s.fail("KEDA's TriggerAuthentication validation: %v", err)
			}
		case *kedav1alpha1.ClusterTriggerAuthentication:
			s.schema(c)
			if _, err := o.ValidateCreate(nil); err != nil {
				s.fail("KEDA's ClusterTriggerAuthentication validation: %v", err)
			}
		}
	}
	s.duplicates()
	return s.errs
}

// set carries the documents being checked and the errors found.
type set struct {
	docs []*Document
	opt  Options
	cur  *Document
	errs []error
}

func (s *set) fail(format string, args ...any) {
	s.errs = append(s.errs, fmt.Errorf("%s: %s", s.cur.Where(), fmt.Sprintf(format, args...)))
}

func (s *set) fieldErrs(what string, errs field.ErrorList) {
	for _, e := range errs {
		s.fail("%s: %v", what, e)
	}
}

func (s *set) schema(c *Checker) {
	for _, err := range c.KEDA.ValidateSchema(s.cur) {
		s.fail("KEDA's CRD schema: %v", err)
	}
}

// meta validates names, namespace, labels and annotations as the API
// server does.
func (s *set) meta(d *Document) {
	name := apivalidation.NameIsDNSSubdomain
	switch d.GVK.Kind {
	case "Service":
		name = apivalidation.NameIsDNS1035Label
	case "Namespace":
		name = apivalidation.ValidateNamespaceName
	}
	s.fieldErrs("metadata", apivalidation.ValidateObjectMeta(d.Meta(), !clusterScoped[d.GVK.Kind], name, field.NewPath("metadata")))
}

func (s *set) duplicates() {
	seen := map[string]*Document{}
	for _, d := range s.docs {
		m := d.Meta()
		k := d.GVK.String() + " " + m.Namespace + "/" + m.Name
		if prev, ok := seen[k]; ok {
			s.cur = d
			s.fail("declared twice (also %s:%d)", prev.File, prev.Line)
		}
		seen[k] = d
	}
}

// find returns the documents of a kind in a namespace.
func find[T any](s *set, namespace string) []T {
	var out []T
	for _, d := range s.docs {
		if o, ok := d.Object.(T); ok && d.Meta().Namespace == namespace {
			out = append(out, o)
		}
	}
	return out
}

// --- Workloads -------------------------------------------------------------

// deployment checks the selector and the project's rules for every
// container: resources, probes, non-root, read-only root filesystem.
func (s *set) deployment(d *appsv1.Deployment) {
	sel := field.NewPath("spec", "selector")
	if d.Spec.Selector == nil {
		s.fail("spec.selector: required")
		return
	}
	s.fieldErrs("selector", metav1validation.ValidateLabelSelector(d.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, sel))
	if selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || selector.Empty() {
		s.fail("spec.selector: not a usable selector (%v)", err)
	} else if !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		s.fail("spec.selector %s does not match the pod template's labels %v", selector, d.Spec.Template.Labels)
	}
	s.fieldErrs("pod template labels", metav1validation.ValidateLabels(d.Spec.Template.Labels, field.NewPath("spec", "template", "metadata", "labels")))
	s.podSpec(&d.Spec.Template.Spec)
}

func (s *set) podSpec(p *corev1.PodSpec) {
	if len(p.Containers) == 0 {
		s.fail("no containers")
	}
	volumes := map[string]bool{}
	for _, v := range p.Volumes {
		if volumes[v.Name] {
			s.fail("volume %q declared twice", v.Name)
		}
		volumes[v.Name] = true
	}
	names := map[string]bool{}
	for i := range p.Containers {
		c := &p.Containers[i]
		if names[c.Name] {
			s.fail("container %q declared twice", c.Name)
		}
		names[c.Name] = true
		s.container(p, c, volumes)
	}
}

func (s *set) container(p *corev1.PodSpec, c *corev1.Container, volumes map[string]bool) {
	at := "container " + strconv.Quote(c.Name)
	if c.Image == "" {
		s.fail("%s: no image", at)
	}
	ports := map[string]int32{}
	for _, port := range c.Ports {
		if port.Name == "" {
			continue
		}
		for _, msg := range validation.IsValidPortName(port.Name) {
			s.fail("%s: port name %q: %s", at, port.Name, msg)
		}
		if _, dup := ports[port.Name]; dup {
			s.fail("%s: port name %q used twice", at, port.Name)
		}
		ports[port.Name] = port.ContainerPort
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[r]
		lim, hasLim := c.Resources.Limits[r]
		switch {
		case !hasReq || !hasLim:
			s.fail("%s: resources: a request and a limit for %s are required", at, r)
		case req.Cmp(lim) > 0:
			s.fail("%s: resources: the %s request %s is above the limit %s", at, r, req.String(), lim.String())
		}
	}
	for name, probe := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if probe == nil {
			s.fail("%s: %s is required", at, name)
			continue
		}
		var port *intstr.IntOrString
		switch {
		case probe.HTTPGet != nil:
			port = &probe.HTTPGet.Port
		case probe.TCPSocket != nil:
			port = &probe.TCPSocket.Port
		case probe.GRPC != nil:
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == probe.GRPC.Port }) {
				s.fail("%s: %s: grpc port %d is not a port the container declares", at, name, probe.GRPC.Port)
			}
		}
		if port != nil && port.Type == intstr.String {
			if _, ok := ports[port.StrVal]; !ok {
				s.fail("%s: %s names port %q, which the container does not declare", at, name, port.StrVal)
			}
		}
	}
	env := map[string]bool{}
	for _, e := range c.Env {
		if env[e.Name] {
			s.fail("%s: environment variable %s set twice", at, e.Name)
		}
		env[e.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			s.fail("%s: volumeMount %q names no volume of the pod", at, m.Name)
		}
	}
	// Non-root, read-only root filesystem, no privilege escalation.
	pod, sc := p.SecurityContext, c.SecurityContext
	nonRoot := (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) ||
		(pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot && (sc == nil || sc.RunAsNonRoot == nil))
	if !nonRoot {
		s.fail("%s: runAsNonRoot: true is required (container or pod securityContext)", at)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		s.fail("%s: securityContext.readOnlyRootFilesystem: true is required", at)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		s.fail("%s: securityContext.allowPrivilegeEscalation: false is required", at)
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		s.fail("%s: securityContext.capabilities.drop must include ALL", at)
	}
	seccomp := func(p *corev1.SeccompProfile) bool {
		return p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault
	}
	if !(sc != nil && seccomp(sc.SeccompProfile)) && !(pod != nil && seccomp(pod.SeccompProfile) && (sc == nil || sc.SeccompProfile == nil)) {
		s.fail("%s: seccompProfile.type: RuntimeDefault is required (container or pod securityContext)", at)
	}
}

// pods returns the pod templates (and their containers' named ports) a
// selector picks in a namespace.
func (s *set) pods(namespace string, selector labels.Selector) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range find[*appsv1.Deployment](s, namespace) {
		if selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d)
		}
	}
	return out
}

func namedPort(d *appsv1.Deployment, name string) (int32, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func (s *set) service(svc *corev1.Service) {
	if len(svc.Spec.Selector) == 0 {
		s.fail("spec.selector: required (the check's Services all select pods)")
		return
	}
	seen := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		if len(svc.Spec.Ports) > 1 && p.Name == "" {
			s.fail("port %d: a name is required when a Service has several ports", p.Port)
		}
		if seen[p.Name] {
			s.fail("port name %q used twice", p.Name)
		}
		seen[p.Name] = true
	}
	if !s.opt.References {
		return
	}
	pods := s.pods(svc.Namespace, labels.SelectorFromSet(svc.Spec.Selector))
	if len(pods) == 0 {
		s.fail("selector %v matches no Deployment's pods in %s", svc.Spec.Selector, svc.Namespace)
		return
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type != intstr.String {
			continue
		}
		for _, d := range pods {
			if _, ok := namedPort(d, p.TargetPort.StrVal); !ok {
				s.fail("port %q: targetPort %q is not a port of Deployment %s's containers", p.Name, p.TargetPort.StrVal, d.Name)
			}
		}
	}
}

func (s *set) pdb(p *policyv1.PodDisruptionBudget) {
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		s.fail("exactly one of minAvailable and maxUnavailable is required")
	}
	if p.Spec.Selector == nil {
		s.fail("spec.selector: required")
		return
	}
	s.fieldErrs("selector", metav1validation.ValidateLabelSelector(p.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector")))
	selector, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil || selector.Empty() {
		s.fail("spec.selector: not a usable selector (%v)", err)
		return
	}
	if s.opt.References && len(s.pods(p.Namespace, selector)) == 0 {
		s.fail("selector %s matches no Deployment's pods", selector)
	}
}

// --- Monitoring and network ------------------------------------------------

// serviceMonitor checks a ServiceMonitor (decoded strictly with the
// Prometheus Operator's types): a selector, endpoints naming a port, and,
// with references, Services it selects that have those ports.
func (s *set) serviceMonitor(m *monitoringv1.ServiceMonitor) {
	if len(m.Spec.Endpoints) == 0 {
		s.fail("spec.endpoints: at least one is required")
	}
	for i, ep := range m.Spec.Endpoints {
		if ep.Port == "" && ep.TargetPort == nil {
			s.fail("spec.endpoints[%d]: port or targetPort is required", i)
		}
	}
	selector, ok := s.monitorSelector(&m.Spec.Selector)
	if !ok || !s.opt.References {
		return
	}
	var svcs []*corev1.Service
	for _, ns := range monitoredNamespaces(m.Spec.NamespaceSelector, m.Namespace) {
		for _, svc := range find[*corev1.Service](s, ns) {
			if selector.Matches(labels.Set(svc.Labels)) {
				svcs = append(svcs, svc)
			}
		}
	}
	if len(svcs) == 0 {
		s.fail("spec.selector %s matches no Service in %v", selector, monitoredNamespaces(m.Spec.NamespaceSelector, m.Namespace))
	}
	for _, svc := range svcs {
		for _, ep := range m.Spec.Endpoints {
			if ep.Port != "" && !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				s.fail("endpoint port %q is not a port of Service %s", ep.Port, svc.Name)
			}
		}
	}
}

// podMonitor checks a PodMonitor: a selector, endpoints naming a port, and,
// with references, pods it selects whose containers declare that port.
func (s *set) podMonitor(m *monitoringv1.PodMonitor) {
	if len(m.Spec.PodMetricsEndpoints) == 0 {
		s.fail("spec.podMetricsEndpoints: at least one is required")
	}
	for i, ep := range m.Spec.PodMetricsEndpoints {
		if ep.Port == nil && ep.PortNumber == nil {
			s.fail("spec.podMetricsEndpoints[%d]: port or portNumber is required", i)
		}
	}
	selector, ok := s.monitorSelector(&m.Spec.Selector)
	if !ok || !s.opt.References {
		return
	}
	namespaces := monitoredNamespaces(m.Spec.NamespaceSelector, m.Namespace)
	var pods []*appsv1.Deployment
	for _, ns := range namespaces {
		pods = append(pods, s.pods(ns, selector)...)
	}
	if len(pods) == 0 {
		s.fail("spec.selector %s matches no Deployment's pods in %v", selector, namespaces)
	}
	for _, d := range pods {
		for i, ep := range m.Spec.PodMetricsEndpoints {
			if ep.Port == nil {
				continue
			}
			if _, ok := namedPort(d, *ep.Port); !ok {
				s.fail("spec.podMetricsEndpoints[%d].port %q is not a port of Deployment %s's containers", i, *ep.Port, d.Name)
			}
		}
	}
}

func (s *set) monitorSelector(sel *metav1.LabelSelector) (labels.Selector, bool) {
	s.fieldErrs("selector", metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector")))
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || selector.Empty() {
		s.fail("spec.selector: required, a usable label selector (%v)", err)
		return nil, false
	}
	return selector, true
}

// monitoredNamespaces are the namespaces a monitor looks in: its
// namespaceSelector's names, else its own.
func monitoredNamespaces(sel monitoringv1.NamespaceSelector, own string) []string {
	if len(sel.MatchNames) > 0 {
		return sel.MatchNames
	}
	return []string{own}
}

// prometheusRule checks what the Prometheus Operator's types cannot: alert
// names unique in their group, and the annotations docs/operations.md
// promises (a summary, a description, and a runbook section). The PromQL
// is checked by promtool (TestPrometheusRules).
func (s *set) prometheusRule(r *monitoringv1.PrometheusRule) {
	if len(r.Spec.Groups) == 0 {
		s.fail("spec.groups: at least one is required")
	}
	for _, g := range r.Spec.Groups {
		seen := map[string]bool{}
		for i, rule := range g.Rules {
			at := fmt.Sprintf("group %q rule %d", g.Name, i)
			if rule.Alert == "" {
				continue
			}
			if seen[rule.Alert] {
				s.fail("%s: alert %s declared twice", at, rule.Alert)
			}
			seen[rule.Alert] = true
			for _, a := range []string{"summary", "description"} {
				if rule.Annotations[a] == "" {
					s.fail("%s: alert %s has no %s annotation", at, rule.Alert, a)
				}
			}
			if rule.Labels["severity"] == "" {
				s.fail("%s: alert %s has no severity label", at, rule.Alert)
			}
			if u := rule.Annotations["runbook_url"]; u != "" && !strings.HasSuffix(u, "#"+strings.ToLower(rule.Alert)) {
				s.fail("%s: alert %s: runbook_url %q does not point at its section (#%s)", at, rule.Alert, u, strings.ToLower(rule.Alert))
			}
		}
	}
}

// networkPolicy checks that a NetworkPolicy selects pods and that every
// named port it opens is a port of those pods' containers.
func (s *set) networkPolicy(np *networkingv1.NetworkPolicy) {
	selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		s.fail("spec.podSelector: %v", err)
		return
	}
	if selector.Empty() {
		s.fail("spec.podSelector: empty, so it would select every pod of %s", np.Namespace)
	}
	for i, rule := range np.Spec.Ingress {
		for j, peer := range rule.From {
			for what, sel := range map[string]*metav1.LabelSelector{"namespaceSelector": peer.NamespaceSelector, "podSelector": peer.PodSelector} {
				if sel != nil {
					s.fieldErrs(fmt.Sprintf("ingress[%d].from[%d].%s", i, j, what), metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "ingress").Index(i).Child("from").Index(j).Child(what)))
				}
			}
		}
	}
	if !s.opt.References {
		return
	}
	pods := s.pods(np.Namespace, selector)
	if len(pods) == 0 {
		s.fail("spec.podSelector %s matches no Deployment's pods", selector)
	}
	for i, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || p.Port.Type != intstr.String {
				continue
			}
			for _, d := range pods {
				if _, ok := namedPort(d, p.Port.StrVal); !ok {
					s.fail("ingress[%d]: port %q is not a port of Deployment %s's containers", i, p.Port.StrVal, d.Name)
				}
			}
		}
	}
}

// --- KEDA --------------------------------------------------------------------

// maxLabelValue is the length KEDA's webhook allows for a ScaledObject's
// name and for the HPA's (both become label values).
const maxLabelValue = 63

func (c *Checker) scaledObject(s *set, so *kedav1alpha1.ScaledObject) {
	// KEDA's admission webhook runs these; the rest of it needs a cluster.
	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		s.fail("KEDA's trigger validation: %v", err)
	}
	if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
		s.fail("KEDA's replica count validation: %v", err)
	}
	if err := kedav1alpha1.CheckFallbackValid(so); err != nil {
		s.fail("KEDA's fallback validation: %v", err)
	}
	if so.IsUsingModifiers() {
		if _, err := kedav1alpha1.ValidateAndCompileScalingModifiers(so); err != nil {
			s.fail("KEDA's scaling modifiers validation: %v", err)
		}
	}
	if len(so.Name) > maxLabelValue {
		s.fail("name longer than %d characters (KEDA's webhook refuses it)", maxLabelValue)
	}
	hpa := "keda-hpa-" + so.Name
	if a := so.Spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil && a.HorizontalPodAutoscalerConfig.Name != "" {
		hpa = a.HorizontalPodAutoscalerConfig.Name
	}
	if len(hpa) > maxLabelValue {
		s.fail("HPA name %q longer than %d characters (KEDA's webhook refuses it)", hpa, maxLabelValue)
	}
	if s.opt.References {
		ref := so.Spec.ScaleTargetRef
		if ref == nil {
			s.fail("spec.scaleTargetRef: required")
		} else if (ref.Kind == "" || ref.Kind == "Deployment") && !slices.ContainsFunc(find[*appsv1.Deployment](s, so.Namespace), func(d *appsv1.Deployment) bool { return d.Name == ref.Name }) {
			s.fail("scaleTargetRef: no Deployment %s/%s among the documents", so.Namespace, ref.Name)
		}
	}
	var barometer bool
	for i := range so.Spec.Triggers {
		t := &so.Spec.Triggers[i]
		at := fmt.Sprintf("triggers[%d] (%s)", i, t.Type)
		switch {
		case barometerTriggers[t.Type]:
			c.barometerTrigger(s, so, t, at)
			barometer = true
		case t.Type == "metrics-api":
			barometer = c.metricsAPITrigger(s, t, at) || barometer
		}
		if t.AuthenticationRef != nil && s.opt.References {
			c.authRef(s, so.Namespace, t, at)
		}
	}
	if barometer && scaleDownWindow(so) != 0 {
		s.fail("spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds: want 0, the behavior the README recommends for Barometer (its churn budget already holds a scale-in; the HPA's default 300 s window would hold every one 5 minutes more)")
	}
}

// scaleDownWindow is the HPA's scale-down stabilization window a
// ScaledObject asks for; -1 when it leaves Kubernetes' default (300 s).
func scaleDownWindow(so *kedav1alpha1.ScaledObject) int32 {
	a := so.Spec.Advanced
	if a == nil || a.HorizontalPodAutoscalerConfig == nil || a.HorizontalPodAutoscalerConfig.Behavior == nil {
		return -1
	}
	down := a.HorizontalPodAutoscalerConfig.Behavior.ScaleDown
	if down == nil || down.StabilizationWindowSeconds == nil {
		return -1
	}
	return *down.StabilizationWindowSeconds
}

// barometerTrigger checks an external or external-push trigger: only keys
// the project documents, an AverageValue target, a source that reads the
// workload, a scalerAddress, and resolvable scrape targets.
func (c *Checker) barometerTrigger(s *set, so *kedav1alpha1.ScaledObject, t *kedav1alpha1.ScaleTriggers, at string) {
	if t.MetricType != "" && t.MetricType != autoscalingv2.AverageValueMetricType {
		s.fail("%s: metricType %s: Barometer triggers use AverageValue (Value multiplies the target by the ready replicas; see the README)", at, t.MetricType)
	}
	// A trigger scales its workload on the workload's own pressure: host
	// is the scaler's own machine, kept for the scaler's default target.
	switch src, ok := t.Metadata["source"]; {
	case !ok && t.Metadata["sourceFromEnv"] == "":
		s.fail("%s: metadata.source is required: scrape, prometheus or otlp, whichever reads %s's replicas", at, so.Name)
	case src == "host":
		s.fail("%s: source host reads the scaler's own machine, not the replicas of %s: use scrape, prometheus or otlp", at, so.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Metadata)) {
		base := strings.TrimSuffix(k, "FromEnv")
		if _, ok := c.Docs.Keys[base]; !ok {
			s.fail("%s: metadata key %q is not documented (README.md \"Trigger metadata\" or a docs/*.md key table); the scaler refuses unknown keys", at, k)
		}
	}
	addr, ok := t.Metadata["scalerAddress"]
	if !ok {
		s.fail("%s: metadata.scalerAddress is required", at)
	} else if host, port, err := net.SplitHostPort(addr); err != nil || host == "" {
		s.fail("%s: scalerAddress %q: host:port expected", at, addr)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		s.fail("%s: scalerAddress %q: numeric port expected", at, addr)
	}
	if !s.opt.References {
		return
	}
	for target := range strings.SplitSeq(t.Metadata["targets"], ",") {
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "dns+http://") {
			continue
		}
		u, err := url.Parse(target)
		if err != nil {
			s.fail("%s: targets %q: %v", at, target, err)
			continue
		}
		name, ns, ok := ServiceHost(u.Hostname())
		if !ok {
			continue // not a cluster Service name
		}
		svc := findService(s, name, ns)
		switch {
		case svc == nil:
			s.fail("%s: targets %q: no Service %s/%s among the documents", at, target, ns, name)
		case svc.Spec.ClusterIP != corev1.ClusterIPNone:
			s.fail("%s: targets %q: Service %s/%s is not headless, so its name resolves to one virtual IP, not to each replica", at, target, ns, name)
		case !servicePort(svc, u.Port()):
			s.fail("%s: targets %q: Service %s/%s has no port %s", at, target, ns, name, u.Port())
		}
	}
}

// metricsAPITrigger checks a metrics-api trigger, and reports whether it
// reads Barometer's GET /scale.
func (c *Checker) metricsAPITrigger(s *set, t *kedav1alpha1.ScaleTriggers, at string) (barometer bool) {
	allowed := c.MetricsAPI["triggerMetadata"]
	for _, k := range slices.Sorted(maps.Keys(t.Metadata)) {
		if !slices.Contains(allowed, strings.TrimSuffix(k, "FromEnv")) {
			s.fail("%s: metadata key %q is not one KEDA's metrics-api scaler reads (%s)", at, k, strings.Join(allowed, ", "))
		}
	}
	raw, ok := t.Metadata["url"]
	if !ok {
		s.fail("%s: metadata.url is required", at)
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		s.fail("%s: url %q: an http or https URL expected", at, raw)
		return false
	}
	// Barometer's own endpoint: GET /scale or /scale/{namespace}/{name}.
	barometer = u.Path == "/scale" || strings.HasPrefix(u.Path, "/scale/")
	if barometer {
		if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) != 1 && len(parts) != 3 {
			s.fail("%s: url path %q: Barometer serves /scale and /scale/{namespace}/{name}", at, u.Path)
		}
		if f := t.Metadata["format"]; f != "" && f != "json" {
			s.fail("%s: format %q: Barometer's /scale answers JSON", at, f)
		}
		loc := t.Metadata["valueLocation"]
		v, ok := Lookup(c.Docs.Scale, loc)
		if _, isNum := v.(float64); !ok || !isNum {
			s.fail("%s: valueLocation %q is not a number in the README's GET /scale response", at, loc)
		}
	}
	return barometer
}

// authRef checks that a trigger's TriggerAuthentication exists and, for a
// Barometer trigger, gives only the parameters KEDA's external scaler reads.
func (c *Checker) authRef(s *set, namespace string, t *kedav1alpha1.ScaleTriggers, at string) {
	ref := t.AuthenticationRef
	var spec *kedav1alpha1.TriggerAuthenticationSpec
	switch ref.Kind {
	case "", "TriggerAuthentication":
		for _, ta := range find[*kedav1alpha1.TriggerAuthentication](s, namespace) {
			if ta.Name == ref.Name {
				spec = &ta.Spec
			}
		}
	case "ClusterTriggerAuthentication":
		for _, ta := range find[*kedav1alpha1.ClusterTriggerAuthentication](s, "") {
			if ta.Name == ref.Name {
				spec = &ta.Spec
			}
		}
	}
	if spec == nil {
		s.fail("%s: authenticationRef: no %s %q among the documents", at, cmp.Or(ref.Kind, "TriggerAuthentication"), ref.Name)
		return
	}
	if !barometerTriggers[t.Type] {
		return
	}
	allowed := c.External["authParams"]
	for _, r := range spec.SecretTargetRef {
		if !slices.Contains(allowed, r.Parameter) {
			s.fail("%s: authenticationRef %s: parameter %q is not one KEDA's external scaler reads (%s)", at, ref.Name, r.Parameter, strings.Join(allowed, ", "))
		}
	}
}

// --- helpers -------------------------------------------------------------------

// ServiceHost splits "name.namespace.svc[.cluster.local]".
func ServiceHost(host string) (name, namespace string, ok bool) {
	host = strings.TrimSuffix(strings.TrimSuffix(host, "."), ".cluster.local")
	parts := strings.Split(host, ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

func findService(s *set, name, namespace string) *corev1.Service {
	for _, svc := range find[*corev1.Service](s, namespace) {
		if svc.Name == name {
			return svc
		}
	}
	return nil
}

func servicePort(svc *corev1.Service, port string) bool {
	if port == "" {
		port = "80"
	}
	return slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
}

// FindService looks a Service up by name and namespace among documents.
func FindService(docs []*Document, name, namespace string) *corev1.Service {
	return findService(&set{docs: docs}, name, namespace)
}

// ServicePort reports whether a Service exposes a port (a decimal string).
func ServicePort(svc *corev1.Service, port string) bool { return servicePort(svc, port) }
