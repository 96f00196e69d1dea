// Package statuspage is the read-only status page for people: GET /status
// lists every running target, and GET /status/{namespace}/{name} shows why
// the target serving that ScaledObject scaled: its recent history drawn
// (demand, the published scaleValue, the replicas KEDA asks for and the
// replicas measured, the surge, the gate and stale samples marked), its
// recent decisions with their reasons and its trigger's effective
// configuration.
//
// The pages are rendered on the server with html/template and inline SVG
// (internal/chart), without JavaScript; they reload themselves while open. A
// page reads published snapshots, the targets' bounded histories
// (sampling.HistoryPoint) and the audit trail, so its cost is paid when it
// is read, never on the sampling or GetMetrics paths.
package statuspage

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signalview"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

//go:embed page.html
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{"number": number}).ParseFS(files, "page.html"))

// DefaultRefresh is how often an open page reloads itself.
const DefaultRefresh = 5 * time.Second

// maxDecisions bounds the decisions a ScaledObject's page lists, newest
// first; /events/{namespace}/{name} serves every one kept.
const maxDecisions = 30

// Config wires the status page.
type Config struct {
	// Registry holds the targets; required. Its targets keep a history
	// only when its Config.History is set; without one, the page draws no
	// chart.
	Registry *registry.Registry
	// Refresh is how often an open page reloads; <= 0 means
	// DefaultRefresh.
	Refresh time.Duration
	// Logger receives the errors a page cannot show; nil discards them.
	Logger *slog.Logger
}

type page struct {
	reg     *registry.Registry
	refresh int // seconds
	log     *slog.Logger
}

// New returns the handler of GET /status and GET
// /status/{namespace}/{name}; any other path is a 404. The caller admits
// HistorySize is how many samples each target keeps for the page
// (registry.Config.History): none when the page is off.
func HistorySize(on bool) int {
	if on {
		return sampling.DefaultHistory
	}
	return 0
}

// Maybe is New when on, and nil (no page) when off.
func Maybe(on bool, cfg Config) http.Handler {
	if !on {
		return nil
	}
	return New(cfg)
}

// the methods (GET, HEAD).
func New(cfg Config) http.Handler {
	if cfg.Registry == nil {
		panic("statuspage: Config.Registry is nil")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &page{reg: cfg.Registry, refresh: max(1, int(cfg.Refresh/time.Second)), log: cfg.Logger}
	mux := http.NewServeMux()
	mux.HandleFunc("/status", p.list)
	mux.HandleFunc("/status/{namespace}/{name}", p.object)
	mux.HandleFunc("/status/default", p.defaultObject)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p.render(w, http.StatusNotFound, "missing", missingView{Head: p.head("Not found"), What: "no such page: " + r.URL.Path})
	})
	return mux
}

// Head is what every page starts with.
type Head struct {
	Title   string
	Refresh int
	Now     string
}

func (p *page) head(title string) Head {
	return Head{Title: title, Refresh: p.refresh, Now: p.reg.Now().UTC().Format(time.RFC3339)}
}

// listView is GET /status.
type listView struct {
	Head
	Targets []targetRow
}

// targetRow is one target of the listing.
type targetRow struct {
	Key, Source, SourceKey, Policy, Profile, Interval string
	Default                                           bool
	Objects                                           []objectLink
	Sample
}

// Sample is what a snapshot says about the last sample. Failing: samples
// were attempted and none has succeeded yet (rather than warming up).
type Sample struct {
	Age, Value, Replicas, LastErr string
	Stale, Warming, Failing       bool
}

type objectLink struct{ Name, Href string }

func (p *page) list(w http.ResponseWriter, _ *http.Request) {
	now := p.reg.Now()
	byKey := map[string]*registry.Target{}
	for _, t := range p.reg.Targets() {
		byKey[t.Key] = t
	}
	infos := p.reg.List()
	v := listView{Head: p.head("Barometer status"), Targets: make([]targetRow, 0, len(infos))}
	for _, info := range infos {
		t := byKey[info.Key]
		if t == nil {
			continue // started between the two reads; the next reload lists it
		}
		row := targetRow{Key: info.Key, Source: t.Spec().SourceKind, SourceKey: info.Source, Policy: info.Policy, Profile: orNone(t.Spec().Profile),
			Interval: info.Interval, Default: info.Default, Sample: sampleOf(t.Load(), now)}
		for _, ref := range info.ScaledObjs {
			row.Objects = append(row.Objects, objectLink{Name: ref.String(), Href: href(ref)})
		}
		v.Targets = append(v.Targets, row)
	}
	p.render(w, http.StatusOK, "list", v)
}

// objectView is GET /status/{namespace}/{name}.
type objectView struct {
	Head
	Object                                            string
	Key, Source, SourceKey, Policy, Profile, Interval string
	Target                                            string // the ScaledObject's per-replica target
	Sample
	Reason      string
	Recommended int
	// ForecastPending says the forecast has read none of its source's
	// history yet, as /scale's forecastHistoryPending does.
	ForecastPending bool
	Samples, Failed uint64
	Chart           template.HTML
	Points          int
	Decisions       []decisionRow
	DecisionsKept   int
	EventsHref      string
	Settings        []trigger.Setting
	SettingsErr     string
	// SettingsAtDefault counts the keys left out of Settings: those at
	// their defaults.
	SettingsAtDefault int
	SettingsWithheld  bool
}

type decisionRow struct {
	Time, Action, Change, Reason string
	Changed                      bool
	// Repeated says how many steady samples were counted into the row,
	// and until when ("" when none).
	Repeated string
}

func (p *page) object(w http.ResponseWriter, r *http.Request) {
	ref := registry.Ref{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	served, err := p.reg.Serving(ref)
	if err != nil {
		p.render(w, http.StatusNotFound, "missing", missingView{Head: p.head("Not found"),
			What: "no target serves the ScaledObject " + ref.String() +
				" (the scaler learns a ScaledObject when KEDA first calls it for that object, and forgets it when its sampler is stopped after idling)"})
		return
	}
	p.objectPage(w, served, ref.String(), "/events"+strings.TrimPrefix(href(ref), "/status"))
}

// defaultObject serves GET /status/default: the scaler's own default
// target (/scale), as a ScaledObject's page.
func (p *page) defaultObject(w http.ResponseWriter, _ *http.Request) {
	served, ok := p.reg.Default()
	if !ok {
		p.render(w, http.StatusNotFound, "missing", missingView{Head: p.head("Not found"), What: "the scaler was started without a default target"})
		return
	}
	p.objectPage(w, served, "the default target (/scale)", "/events")
}

// objectPage renders what serves one reader: its target, at its trigger.
func (p *page) objectPage(w http.ResponseWriter, served registry.Served, name, eventsHref string) {
	t, tr := served.Target, served.Trigger
	now := p.reg.Now()
	snap := t.Load()
	v := objectView{
		Head: p.head(name + " · Barometer"), Object: name,
		Key: t.Key, Source: t.Spec().SourceKind, SourceKey: t.SourceKey(), Policy: t.Policy(), Profile: orNone(tr.Profile), Interval: tr.Interval.String(),
		Target: number(tr.TargetPressure), Sample: sampleOf(snap, now),
		Reason: snap.Signal.Reason, Recommended: signalview.ForTrigger(&snap.Signal, t.Key, nil, tr).RecommendedReplicas, Samples: snap.Samples, Failed: snap.Failures,
		ForecastPending: snap.Signal.ForecastHistoryPending, EventsHref: eventsHref,
	}
	points := t.History(nil)
	v.Points = len(points)
	if len(points) > 0 {
		chart, err := drawHistory(points, tr.Reader(), snap.Interval, now)
		if err != nil {
			p.log.Error("status page: draw the history", "target", t.Key, "err", err)
		}
		v.Chart = chart
	}
	events := p.reg.Events(served)
	v.DecisionsKept = len(events)
	for _, e := range slices.Backward(events) {
		if len(v.Decisions) == maxDecisions {
			break
		}
		v.Decisions = append(v.Decisions, decisionRow{Time: e.Time.UTC().Format(time.TimeOnly), Action: string(e.Action),
			Change: strconv.Itoa(e.Before) + " → " + strconv.Itoa(e.After), Reason: e.Reason, Changed: e.Action != policy.NoOp,
			Repeated: repeated(e)})
	}
	switch {
	case served.Metadata == nil:
		v.SettingsWithheld = true
	default:
		settings, err := p.reg.Settings(served.Ref.Namespace, served.Metadata)
		if err != nil {
			v.SettingsErr = err.Error()
		}
		for _, st := range settings {
			if st.Origin == keyschema.OriginDefault {
				v.SettingsAtDefault++
			} else {
				v.Settings = append(v.Settings, st)
			}
		}
	}
	p.render(w, http.StatusOK, "object", v)
}

type missingView struct {
	Head
	What string
}

// render executes the page into a buffer first, so a failed render is a
// clean 500 rather than half a page.
func (p *page) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		p.log.Error("status page: render", "page", name, "err", err)
		http.Error(w, "status page: render failed; see the scaler's log", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// The pages run no script and load nothing: should anything ever get
	// past the template's escaping, the browser still runs none of it.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; frame-ancestors 'none'")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// sampleOf is what a snapshot says about the target's last sample at now.
func sampleOf(snap *sampling.Snapshot, now time.Time) Sample {
	s := Sample{Stale: snap.Stale(now), Warming: snap.Signal.WarmingUp()}
	s.Failing = s.Warming && snap.Samples > 0 && snap.LastErr != nil
	if !s.Warming {
		s.Age = age(now.Sub(snap.Signal.SampledAt))
		s.Value = number(snap.Signal.ScaleValue)
		s.Replicas = strconv.Itoa(snap.Signal.Compute.ReplicaCount)
	}
	if snap.LastErr != nil {
		s.LastErr = snap.LastErr.Error()
	}
	return s
}

// repeated says how many no-ops were counted into an audit row, and until
// when.
func repeated(e ledger.Event) string {
	if e.Repeats == 0 {
		return ""
	}
	return "+" + strconv.Itoa(e.Repeats) + " alike until " + e.LastTime.UTC().Format(time.TimeOnly)
}

// href is the link to a ScaledObject's page, each name one path segment
// whatever it holds.
func href(ref registry.Ref) string {
	return "/status/" + url.PathEscape(ref.Namespace) + "/" + url.PathEscape(ref.Name)
}

// age prints a duration to the second, or to the millisecond under one.
func age(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// number prints a value to at most three decimals.
func number(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
