package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// apiServer answers the few calls the scaler makes of the Kubernetes API,
// with the API's JSON: list and watch of a namespace's EndpointSlices and
// Services (the streaming list the informers open first, or a list and a
// watch from its resourceVersion), and a JSON merge patch of a pod's
// annotations. The objects it serves are k8s.io/api's own types, so the
// tests check that the client's narrow types decode what the API encodes.
// It stands in for kube-apiserver, which cannot run in a unit test; the
// end-to-end suite (e2e/) runs the scaler against the real one.
type apiServer struct {
	t *testing.T

	mu      sync.Mutex
	rv      int
	log     []apiEvent         // every change, in resourceVersion order
	objects map[string]apiItem // resource/namespace/name -> object now
	pods    map[string]*corev1.Pod
	patched []string // "namespace/pod content-type fieldManager body"
	changed chan struct{}
}

type apiItem struct {
	rv  int
	obj metav1.Object
}

type apiEvent struct {
	rv         int
	typ        string // ADDED, MODIFIED, DELETED
	resource   string
	namespace  string
	obj        metav1.Object
	kind, gver string
}

func newAPIServer(t *testing.T) *apiServer {
	return &apiServer{t: t, objects: map[string]apiItem{}, pods: map[string]*corev1.Pod{}, changed: make(chan struct{})}
}

// put adds or replaces a Service, an EndpointSlice or a pod.
func (s *apiServer) put(objs ...metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); ok {
			s.pods[p.Namespace+"/"+p.Name] = p
			continue
		}
		s.rv++
		obj.SetResourceVersion(strconv.Itoa(s.rv))
		resource, gv, kind := kindOf(obj)
		key := resource + "/" + obj.GetNamespace() + "/" + obj.GetName()
		typ := "ADDED"
		if _, ok := s.objects[key]; ok {
			typ = "MODIFIED"
		}
		s.objects[key] = apiItem{rv: s.rv, obj: obj}
		s.log = append(s.log, apiEvent{rv: s.rv, typ: typ, resource: resource, namespace: obj.GetNamespace(), obj: obj, kind: kind, gver: gv})
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func kindOf(obj metav1.Object) (resource, groupVersion, kind string) {
	switch obj.(type) {
	case *corev1.Service:
		return "services", "v1", "Service"
	case *discoveryv1.EndpointSlice:
		return "endpointslices", "discovery.k8s.io/v1", "EndpointSlice"
	}
	panic(fmt.Sprintf("apiServer: no kind for %T", obj))
}

func (s *apiServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/services", func(w http.ResponseWriter, r *http.Request) {
		s.listOrWatch(w, r, "services", "v1", "Service")
	})
	mux.HandleFunc("GET /apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", func(w http.ResponseWriter, r *http.Request) {
		s.listOrWatch(w, r, "endpointslices", "discovery.k8s.io/v1", "EndpointSlice")
	})
	mux.HandleFunc("PATCH /api/v1/namespaces/{ns}/pods/{name}", s.patchPod)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.t.Errorf("apiServer: unexpected %s %s", r.Method, r.URL)
		status(w, http.StatusNotFound, "NotFound", "no such path")
	})
	return mux
}

func (s *apiServer) listOrWatch(w http.ResponseWriter, r *http.Request, resource, gv, kind string) {
	ns, q := r.PathValue("ns"), r.URL.Query()
	if q.Get("watch") != "true" {
		s.mu.Lock()
		list := map[string]any{"apiVersion": gv, "kind": kind + "List", "metadata": map[string]string{"resourceVersion": strconv.Itoa(s.rv)}}
		items := []any{}
		for _, e := range s.current(resource, ns) {
			items = append(items, e.obj)
		}
		list["items"] = items
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, list)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(typ string, obj any) bool {
		if err := enc.Encode(map[string]any{"type": typ, "object": obj}); err != nil {
			return false
		}
		w.(http.Flusher).Flush()
		return true
	}
	s.mu.Lock()
	from, _ := strconv.Atoi(q.Get("resourceVersion"))
	var pending []apiEvent
	if q.Get("sendInitialEvents") == "true" {
		// A streaming list: the objects as they are now, then a bookmark
		// saying the list is complete.
		pending = s.current(resource, ns)
		from = s.rv
	}
	s.mu.Unlock()
	for _, e := range pending {
		if !send("ADDED", typed(e.obj, gv, kind)) {
			return
		}
	}
	if q.Get("sendInitialEvents") == "true" {
		bookmark := map[string]any{"apiVersion": gv, "kind": kind, "metadata": map[string]any{
			"resourceVersion": strconv.Itoa(from),
			"annotations":     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}
		if !send("BOOKMARK", bookmark) {
			return
		}
	}
	for {
		s.mu.Lock()
		var next []apiEvent
		for _, e := range s.log {
			if e.rv > from && e.resource == resource && e.namespace == ns {
				next = append(next, e)
			}
		}
		from = s.rv
		changed := s.changed
		s.mu.Unlock()
		for _, e := range next {
			if !send(e.typ, typed(e.obj, gv, kind)) {
				return
			}
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// current returns the namespace's objects of resource as they are now, as
// ADDED events. The caller holds s.mu.
func (s *apiServer) current(resource, ns string) []apiEvent {
	var out []apiEvent
	for key, it := range s.objects {
		if strings.HasPrefix(key, resource+"/"+ns+"/") {
			out = append(out, apiEvent{rv: it.rv, typ: "ADDED", obj: it.obj})
		}
	}
	return out
}

// typed gives obj the apiVersion and kind the API server writes on every
// object it sends.
func typed(obj metav1.Object, gv, kind string) any {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	m["apiVersion"], m["kind"] = gv, kind
	return m
}

// patchPod applies a JSON merge patch of the pod's annotations, and
// refuses anything else.
func (s *apiServer) patchPod(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patched = append(s.patched, fmt.Sprintf("%s/%s %s %s %s", ns, name, ct, r.URL.Query().Get("fieldManager"), body))
	pod := s.pods[ns+"/"+name]
	if pod == nil {
		status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("pods %q not found", name))
		return
	}
	if ct != "application/merge-patch+json" {
		status(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "the scaler sends merge patches only")
		return
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		status(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range patch.Metadata.Annotations {
		pod.Annotations[k] = v
	}
	writeJSON(w, http.StatusOK, typed(pod, "v1", "Pod"))
}

func status(w http.ResponseWriter, code int, reason, message string) {
	writeJSON(w, code, map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// pipeNetwork carries HTTP between the client and the apiServer over
// in-memory connections (net.Pipe): a real HTTP client and server, but a
// transport testing/synctest can see blocked, which a socket is not.
type pipeNetwork struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeNetwork() *pipeNetwork {
	return &pipeNetwork{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (n *pipeNetwork) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

func (n *pipeNetwork) Close() error { n.once.Do(func() { close(n.done) }); return nil }

func (n *pipeNetwork) Addr() net.Addr { return pipeAddr{} }

func (n *pipeNetwork) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "kube-apiserver" }

// serveInBubble serves api over a pipeNetwork inside the calling synctest
// bubble and returns the client of it; the server and every connection
// close when the test ends.
func serveInBubble(t *testing.T, api *apiServer) *Client {
	t.Helper()
	network := newPipeNetwork()
	srv := &http.Server{Handler: api.handler()}
	go func() { _ = srv.Serve(network) }()
	t.Cleanup(func() { _ = srv.Close() })
	client, err := NewClient(&rest.Config{Host: "http://kube-apiserver", Dial: network.dial})
	if err != nil {
		t.Fatal(err)
	}
	return client
}
