package demo

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// queueRoutes serves the queue's setters. The load (POST /load) drives
// arrivals, runs, the ready backlog and busy; these set the rest, and let a
// test pile up a backlog at once.
func (w *Workload) queueRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /queue/service-time", setter("s", func(s float64) {
		w.SetServiceTime(time.Duration(s * float64(time.Second)))
	}))
	mux.HandleFunc("POST /queue/ready", setter("n", w.SetBacklog))
	mux.HandleFunc("POST /queue/retrying", setter("n", w.SetRetrying))
	mux.HandleFunc("POST /queue/due", setter("n", w.SetDue))
	mux.HandleFunc("POST /queue/reserved", setter("n", w.SetReserved))
	mux.HandleFunc("POST /queue/reservation", func(rw http.ResponseWriter, r *http.Request) {
		id := strings.TrimSpace(r.FormValue("id"))
		res := Reservation{Slots: 1}
		var err error
		for _, f := range []struct {
			param string
			dst   *float64
		}{{"start", &res.Start}, {"end", &res.End}, {"slots", &res.Slots}} {
			if err == nil {
				err = optional(r, f.param, f.dst)
			}
		}
		if id == "" || err != nil {
			http.Error(rw, fmt.Sprintf("want id, and start, end (Unix seconds, 0 open) and slots as numbers >= 0: %v", err), http.StatusBadRequest)
			return
		}
		w.SetReservation(id, res)
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /queue/reservation", func(rw http.ResponseWriter, r *http.Request) {
		w.DeleteReservation(r.FormValue("id"))
		rw.WriteHeader(http.StatusNoContent)
	})
}

// optional reads a number >= 0 into dst when the parameter is given.
func optional(r *http.Request, param string, dst *float64) error {
	raw := strings.TrimSpace(r.FormValue(param))
	if raw == "" {
		return nil
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s=%q", param, raw)
	}
	*dst = v
	return nil
}
