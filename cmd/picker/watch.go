package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/config"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/redact"
	"github.com/pickergpu/picker/web"
)

// Price watches ([[watch]] in the config). After each successful refresh the daemon runs
// every watch's job through RunRecommend over the store and compares the top offer's
// figure with the watch's threshold. A crossing is the figure going from above the
// threshold (or from no evaluation yet) to at-or-below it: it is logged, kept in the
// state file and, with webhook_url, POSTed once. The watch re-arms when the figure goes
// back above (or nothing fits). The state lives in a JSON file next to the database
// (picker-watches.json beside picker.db), so a restart neither repeats an alert nor
// forgets one.

// Watch states.
const (
	watchUnknown = "unknown" // not evaluated yet
	watchAbove   = "above"   // armed: the figure is above the threshold (or nothing fits)
	watchBelow   = "below"   // crossed: at or below the threshold, alert sent
)

// Webhook bounds: each attempt's timeout and the attempts of one alert.
var (
	webhookTimeout  = 10 * time.Second
	webhookAttempts = 3
	// webhookPolicy is the retry policy (tests make its waits instant).
	webhookPolicy = httpx.Policy{MaxAttempts: webhookAttempts, BaseDelay: time.Second, MaxDelay: 10 * time.Second, MaxRetryAfter: 30 * time.Second}
)

// watchOffer is the offer a watch's figure came from.
type watchOffer struct {
	Provider     string           `json:"provider"`
	Region       string           `json:"region"`
	InstanceType string           `json:"instance_type"`
	GPUModel     string           `json:"gpu_model"`
	GPUCount     float64          `json:"gpu_count"`
	Purchase     pricing.Purchase `json:"purchase"`
	PriceUSDHr   float64          `json:"price_usd_hr"`
	EstCostUSD   *float64         `json:"est_cost_usd,omitempty"`
}

// watchState is what is kept about one watch across evaluations and restarts.
type watchState struct {
	Value         *float64    `json:"value"`
	Offer         *watchOffer `json:"offer"`
	State         string      `json:"state"`
	LastCrossing  *time.Time  `json:"last_crossing"`
	LastEvaluated *time.Time  `json:"last_evaluated"`
	// Error is the last evaluation's error (the state is kept); WebhookError the last
	// alert's delivery error, both redacted.
	Error        string `json:"error,omitempty"`
	WebhookError string `json:"webhook_error,omitempty"`
}

// WatchView is one watch in GET /v1/watches.
type WatchView struct {
	Name      string  `json:"name"`
	Job       string  `json:"job"`
	Threshold string  `json:"threshold"` // max_usd_hr, max_usd_job or max_usd_per_unit
	Max       float64 `json:"max"`
	// Figure is the Fit field compared (price_usd_hr, est_cost_usd, usd_per_m_tokens…).
	Figure  string `json:"figure,omitempty"`
	Webhook bool   `json:"webhook"`
	watchState
}

// watchPayload is the webhook's JSON body.
type watchPayload struct {
	Watch     string      `json:"watch"`
	Job       string      `json:"job"`
	Threshold string      `json:"threshold"`
	Max       float64     `json:"max"`
	Figure    string      `json:"figure"`
	Value     float64     `json:"value"`
	Offer     *watchOffer `json:"offer"`
	CrossedAt time.Time   `json:"crossed_at"`
}

// watch is one bound [[watch]] entry.
type watch struct {
	cfg  config.Watch
	args []string
	key  string
	max  float64
	red  *redact.Redactor // the app's secrets plus the webhook URL's
}

// watcher evaluates the watches and keeps their state: one evaluation at a time
// (evalMu), which works on a copy of each watch's state, so /v1/watches (mu) never waits
// for a recommendation or a webhook.
type watcher struct {
	a       *app
	path    string
	watches []watch
	evalMu  sync.Mutex
	mu      sync.Mutex
	state   map[string]*watchState
	figures map[string]string
}

// newWatcher binds every [[watch]] job (a bad flag is a config error naming the file,
// line and key) and loads the state file; nil when the config has no watch.
func (a *app) newWatcher() (*watcher, error) {
	if len(a.cfg.Watches) == 0 {
		return nil, nil
	}
	w := &watcher{a: a, state: map[string]*watchState{}, figures: map[string]string{}}
	for i, cw := range a.cfg.Watches {
		args, err := splitShell(cw.Job)
		if err != nil {
			return nil, a.cfg.WatchError(i, "job", ": %v", err)
		}
		o := a.newRecommendOptions()
		if err := bindWatchJob(o, args); err != nil {
			return nil, a.cfg.WatchError(i, "job", ": %v", err)
		}
		key, max := cw.Threshold()
		sized := o.Tokens > 0 || o.Requests > 0 || o.Images > 0
		switch {
		case key == "max_usd_job" && !sized:
			return nil, a.cfg.WatchError(i, "max_usd_job", ": the job's dollars need the job's size: add --tokens, --requests or --image-count to job")
		case key == "max_usd_per_unit" && (sized || o.Rank == recommend.RankHourly):
			return nil, a.cfg.WatchError(i, "max_usd_per_unit", ": the figure per unit of work is ranked without --tokens, --requests, --image-count and --rank hourly; use max_usd_job or max_usd_hr")
		}
		secrets := a.cfg.Secrets(a.m.Getenv)
		if cw.WebhookURL != "" {
			secrets = append(secrets, cw.WebhookURL)
			if u, err := url.Parse(cw.WebhookURL); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok {
					secrets = append(secrets, pw)
				}
				secrets = append(secrets, u.User.String())
			}
		}
		w.watches = append(w.watches, watch{cfg: cw, args: args, key: key, max: max, red: redact.New(secrets...)})
	}
	w.path = watchStatePath(a.cfg.DBPath(a.dbPath))
	if err := w.load(); err != nil {
		return nil, err
	}
	return w, nil
}

// bindWatchJob binds a watch's job flags as `picker recommend` would: the same params,
// the same pflag syntax, the same binder.
func bindWatchJob(o *RecommendOptions, args []string) error {
	fs := pflag.NewFlagSet("recommend", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	registerParams(fs, (&RecommendOptions{}).params())
	if err := fs.Parse(args); err != nil {
		return plainFlagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: recommend takes flags only", fs.Arg(0))
	}
	return o.Bind(FlagLookup(fs))
}

// watchStatePath is the state file beside the database: picker.db → picker-watches.json.
func watchStatePath(db string) string {
	base := strings.TrimSuffix(filepath.Base(db), filepath.Ext(db))
	return filepath.Join(filepath.Dir(db), base+"-watches.json")
}

func (w *watcher) load() error {
	b, err := os.ReadFile(w.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(b, &w.state)
	}
	if err != nil {
		return fmt.Errorf("watch state %s: %w (delete it to start afresh)", w.path, err)
	}
	return nil
}

// save writes the state file atomically (a temporary file renamed over it).
func (w *watcher) save() error {
	b, err := json.MarshalIndent(w.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := w.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, w.path)
}

// evaluate runs every watch once, after a successful refresh.
func (w *watcher) evaluate(ctx context.Context) {
	w.evalMu.Lock()
	defer w.evalMu.Unlock()
	for i := range w.watches {
		w.evaluateOne(ctx, &w.watches[i])
	}
	w.mu.Lock()
	err := w.save()
	w.mu.Unlock()
	if err != nil {
		w.a.log.Warn("watch state not saved", "path", w.path, "error", err)
	}
}

func (w *watcher) evaluateOne(ctx context.Context, wt *watch) {
	name := wt.cfg.Name
	st := &watchState{State: watchUnknown}
	figure := ""
	w.mu.Lock()
	if p := w.state[name]; p != nil {
		*st = *p // a copy: its pointers are replaced, never written through
	}
	figure = w.figures[name]
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.state[name], w.figures[name] = st, figure
		w.mu.Unlock()
	}()
	now := w.a.now().UTC()
	st.LastEvaluated = &now
	o := w.a.newRecommendOptions()
	o.IO = nil
	var out *RecommendResult
	err := bindWatchJob(o, wt.args)
	if err == nil {
		out, err = RunRecommend(ctx, o)
	}
	if err != nil {
		st.Error = wt.red.String(err.Error())
		w.a.log.Warn("watch not evaluated; its state is kept", "watch", name, "error", st.Error)
		return
	}
	st.Error = ""
	value, fig, offer := watchFigure(out, wt.key)
	figure = fig
	st.Value, st.Offer = value, offer
	if value == nil || *value > wt.max {
		if st.State == watchBelow {
			w.a.log.Info("watch re-armed: back above its threshold", "watch", name, wt.key, wt.max)
		}
		st.State = watchAbove
		return
	}
	if st.State == watchBelow {
		return // the same crossing: no repeat alert
	}
	st.State = watchBelow
	st.LastCrossing = &now
	w.a.log.Info("watch crossed its threshold", "watch", name, wt.key, wt.max, "figure", figure, "value", *value,
		"provider", offer.Provider, "instance_type", offer.InstanceType, "region", offer.Region)
	st.WebhookError = ""
	if wt.cfg.WebhookURL != "" {
		p := watchPayload{Watch: name, Job: wt.cfg.Job, Threshold: wt.key, Max: wt.max, Figure: figure, Value: *value, Offer: offer, CrossedAt: now}
		if err := postWebhook(ctx, wt, p); err != nil {
			st.WebhookError = err.Error()
			w.a.log.Warn("watch webhook failed", "watch", name, "error", st.WebhookError)
		}
	}
}

// watchFigure is the top offer's figure for the threshold key, the Fit field it reads,
// and the offer; a nil value when nothing fits (or the figure is unknown).
func watchFigure(out *RecommendResult, key string) (*float64, string, *watchOffer) {
	if len(out.Offers) == 0 {
		return nil, "", nil
	}
	f := out.Offers[0]
	wo := &watchOffer{Provider: f.Provider, Region: f.Region, InstanceType: f.InstanceType, GPUModel: f.GPUModel, GPUCount: f.GPUCount,
		Purchase: f.Purchase, PriceUSDHr: f.PriceUSDHr, EstCostUSD: f.EstCostUSD}
	switch key {
	case "max_usd_hr":
		v := f.PriceUSDHr
		if f.ClusterPriceUSDHr > 0 {
			v = f.ClusterPriceUSDHr
		}
		return &v, recommend.RankedByPricePerHour, wo
	case "max_usd_job":
		return f.EstCostUSD, recommend.RankedByJobCost, wo
	}
	switch out.RankedBy {
	case recommend.RankedByMTokens:
		return f.USDPerMTokens, out.RankedBy, wo
	case recommend.RankedByMOutTokens:
		return f.USDPerMOutTokens, out.RankedBy, wo
	case recommend.RankedByImage:
		return f.USDPerImage, out.RankedBy, wo
	}
	return nil, out.RankedBy, wo
}

// postWebhook POSTs the alert as JSON: each attempt bounded by webhookTimeout, retried
// (429, 5xx, transient transport errors) with backoff up to webhookAttempts. The error
// never shows the URL's credentials, query or any configured secret.
func postWebhook(ctx context.Context, wt *watch, p watchPayload) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	c := &httpx.Client{HTTP: &http.Client{Timeout: webhookTimeout}, Policy: webhookPolicy, MaxBodyBytes: 1 << 20,
		UserAgent: "picker (+https://github.com/pickergpu/picker)"}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(1, webhookPolicy.MaxAttempts))*(webhookTimeout+webhookPolicy.MaxDelay))
	defer cancel()
	_, err = c.Do(ctx, httpx.Request{Method: http.MethodPost, URL: wt.cfg.WebhookURL,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body})
	if err != nil {
		return fmt.Errorf("webhook: %s", wt.red.String(err.Error()))
	}
	return nil
}

// views is GET /v1/watches: every configured watch, in config order.
func (w *watcher) views() []WatchView {
	out := []WatchView{}
	if w == nil {
		return out
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.watches {
		v := WatchView{Name: wt.cfg.Name, Job: wt.cfg.Job, Threshold: wt.key, Max: wt.max, Figure: w.figures[wt.cfg.Name],
			Webhook: wt.cfg.WebhookURL != "", watchState: watchState{State: watchUnknown}}
		if st := w.state[wt.cfg.Name]; st != nil {
			v.watchState = *st
		}
		out = append(out, v)
	}
	return out
}

// splitShell splits a job string as a POSIX shell splits words: blanks separate,
// 'single' and "double" quotes group (a backslash escapes " \ $ ` inside double
// quotes), a backslash outside quotes escapes the next character. No expansion.
func splitShell(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated \" quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

var _ web.WatchLister = webBackend{}

// Watches are the daemon's watches for the Providers page.
func (b webBackend) Watches() []web.Watch {
	var out []web.Watch
	for _, v := range b.a.watch.views() {
		ww := web.Watch{Name: v.Name, Job: v.Job, Threshold: v.Threshold, State: v.State, Max: v.Max, Value: v.Value,
			LastCrossing: v.LastCrossing, Error: v.Error + v.WebhookError}
		if o := v.Offer; o != nil {
			ww.Offer = o.Provider + " " + o.Region + " " + o.InstanceType
		}
		out = append(out, ww)
	}
	return out
}
