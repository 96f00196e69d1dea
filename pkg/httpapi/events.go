package httpapi

import "net/http"

// eventsAll serves GET /events: the audit trail of every running target,
// oldest first (newest last), as a JSON array of ledger.Event. The trail
// keeps the last decisions of each target (BAROMETER_AUDIT_SIZE) and forgets
// a target when its sampler stops.
func (s *server) eventsAll(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.reg.AllEvents())
}

// eventsRef serves GET /events/{namespace}/{name}: the decisions of the
// target serving that ScaledObject, oldest first. Targets are shared, so
// the trail is the target's: ScaledObjects with the same settings read the
// same one.
func (s *server) eventsRef(w http.ResponseWriter, r *http.Request) {
	if served, ok := s.lookup(w, r); ok {
		s.writeJSON(w, http.StatusOK, s.reg.Events(served))
	}
}
