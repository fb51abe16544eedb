package web

import (
	"context"
	"net/http"
	"time"
)

type providersPage struct {
	Rows   []Provider
	Error  string
	APIURL string
}

func (s *server) providers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	p := providersPage{}
	if s.o.APIBase != "" {
		p.APIURL = s.o.APIBase + "/providers"
	}
	status := http.StatusOK
	rows, err := s.b.Providers(ctx)
	if err != nil {
		status = statusOf(err)
		s.logFailure(r, status, err)
		p.Error = err.Error()
	}
	p.Rows = rows
	s.render(w, r, status, "providers", "Providers", p)
}
