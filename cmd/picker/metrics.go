package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pickergpu/picker/refresh"
)

// The daemon's metrics, served at GET /metrics in Prometheus' text format behind the
// same guard as the API. They live in a registry of the daemon's own (never the global
// default), with the Go runtime and process collectors. Every label is bounded: the
// provider names of the config, a route pattern of the mux (never a raw path), a
// status code, an outcome of a fixed few.

// metrics are the daemon's instruments; app.mx builds them once.
type metrics struct {
	reg *prometheus.Registry

	refreshRuns     *prometheus.CounterVec   // provider, outcome
	refreshDuration *prometheus.HistogramVec // provider
	refreshParts    *prometheus.CounterVec   // provider: regions that failed while the rest landed
	requests        *prometheus.CounterVec   // route, code
	latency         *prometheus.HistogramVec // route
	busy            prometheus.Counter       // 503s of the concurrency limit

	mu        sync.Mutex
	providers []providerRow // as of the last refresh
}

// Refresh outcomes: the whole snapshot landed, it landed but some parts failed, or it
// failed and the last good prices stay current.
const (
	outcomeOK      = "ok"
	outcomePartial = "partial"
	outcomeFailed  = "failed"
)

func newMetrics(a *app) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.refreshRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picker_refresh_runs_total", Help: "Refreshes run, by provider and outcome (ok, partial, failed).",
	}, []string{"provider", "outcome"})
	m.refreshDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "picker_refresh_duration_seconds", Help: "How long a refresh took (fetch and store write), by provider.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"provider"})
	m.refreshParts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picker_refresh_failed_parts_total", Help: "Parts (regions) of a refresh that failed while the rest landed, by provider.",
	}, []string{"provider"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picker_http_requests_total", Help: "HTTP requests answered, by route pattern and status code.",
	}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "picker_http_request_duration_seconds", Help: "HTTP request latency, by route pattern.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route"})
	m.busy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "picker_http_busy_rejections_total", Help: "Requests refused with 503 by the concurrency limit ([daemon] max_concurrent).",
	})
	memo := func(hit bool) func() float64 {
		return func() float64 {
			if a.recMemo == nil {
				return 0
			}
			h, miss := a.recMemo.counts()
			if hit {
				return float64(h)
			}
			return float64(miss)
		}
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.refreshRuns, m.refreshDuration, m.refreshParts, m.requests, m.latency, m.busy,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "picker_recommend_memo_hits_total", Help: "Recommendations answered from the memo (the offers had not changed).",
		}, memo(true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "picker_recommend_memo_misses_total", Help: "Recommendations computed because the memo had none for the request and the offers' version.",
		}, memo(false)),
		&providerCollector{m: m, now: a.now},
	)
	return m
}

// mx is the app's metrics, built at first use.
func (a *app) mx() *metrics {
	a.metricsOnce.Do(func() { a.metrics = newMetrics(a) })
	return a.metrics
}

// observeRefresh records one refresh's outcome, then reloads the per-provider gauges
// from the store.
func (a *app) observeRefresh(ctx context.Context, r refresh.Result) {
	m := a.mx()
	outcome := outcomeOK
	switch {
	case r.Err != nil:
		outcome = outcomeFailed
	case len(r.Failed) > 0:
		outcome = outcomePartial
	}
	m.refreshRuns.WithLabelValues(r.Provider, outcome).Inc()
	m.refreshDuration.WithLabelValues(r.Provider).Observe(r.Duration.Seconds())
	if n := len(r.Failed); n > 0 {
		m.refreshParts.WithLabelValues(r.Provider).Add(float64(n))
	}
	a.loadProviderMetrics(ctx)
}

// loadProviderMetrics reads each provider's offers, newest price and failures from the
// store for the gauges; a read that fails keeps the last ones.
func (a *app) loadProviderMetrics(ctx context.Context) {
	rows, err := a.providerRows(ctx)
	if err != nil {
		a.log.Warn("metrics: reading the providers' state failed", "error", err)
		return
	}
	m := a.mx()
	m.mu.Lock()
	m.providers = rows
	m.mu.Unlock()
}

// providerCollector reports the providers' state as of the last refresh; the price age
// is computed at each scrape from the newest observed price.
type providerCollector struct {
	m   *metrics
	now func() time.Time
}

var (
	offersDesc = prometheus.NewDesc("picker_provider_offers",
		"Current offers of the provider in the store, as of the last refresh.", []string{"provider"}, nil)
	priceAgeDesc = prometheus.NewDesc("picker_provider_price_age_seconds",
		"Seconds since the provider's newest current price was observed.", []string{"provider"}, nil)
	failuresDesc = prometheus.NewDesc("picker_provider_consecutive_failures",
		"The provider's failed refreshes since its last success.", []string{"provider"}, nil)
)

func (c *providerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- offersDesc
	ch <- priceAgeDesc
	ch <- failuresDesc
}

func (c *providerCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	rows := c.m.providers
	c.m.mu.Unlock()
	now := c.now()
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(offersDesc, prometheus.GaugeValue, float64(r.Offers), r.Name)
		ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.GaugeValue, float64(r.ConsecutiveFailures), r.Name)
		if !r.newestObserved.IsZero() {
			ch <- prometheus.MustNewConstMetric(priceAgeDesc, prometheus.GaugeValue, now.Sub(r.newestObserved).Seconds(), r.Name)
		}
	}
}

// metricsHandler serves the registry.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// instrument counts and times each request by the pattern mux routes it to ("other"
// for none), so a label never holds a raw path.
func (m *metrics) instrument(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		route := "other"
		if _, p := mux.Handler(r); p != "" {
			// "GET /v1/offers" → "/v1/offers": the method is not part of the route.
			if i := strings.IndexByte(p, ' '); i >= 0 {
				p = p[i+1:]
			}
			route = p
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
			m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}
