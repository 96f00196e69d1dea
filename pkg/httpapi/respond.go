package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// errorView is the body of every error response.
type errorView struct {
	Error string `json:"error"`
}

// readOnly admits GET and HEAD (net/http drops a HEAD response's body) and
// answers anything else with a JSON 405. Routes are registered without a
// method in their pattern so that this, not ServeMux's plain-text 405,
// answers.
func (s *server) readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.writeError(w, http.StatusMethodNotAllowed,
				fmt.Sprintf("method %s not allowed on %s: this endpoint is read-only, use GET", r.Method, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// writeJSON sends v with the status code. The body is encoded before the
// header is written, so an encoding failure (a NaN, say) is still a clean
// 500 instead of a truncated 200. Every body here is live state, so none
// may be cached.
func (s *server) writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encode HTTP response", "err", err)
		code = http.StatusInternalServerError
		body, _ = json.Marshal(errorView{Error: "encode response: " + err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

func (s *server) writeError(w http.ResponseWriter, code int, msg string) {
	s.writeJSON(w, code, errorView{Error: msg})
}
