package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// pageNames are the page templates; each is parsed with layout.html.
var pageNames = []string{"ask", "compare", "instance", "history", "providers", "error"}

func parsePages(funcs template.FuncMap) map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
		pages[name] = t
	}
	return pages
}

func (s *server) funcs() template.FuncMap {
	return template.FuncMap{
		"asset": func(path string) string {
			return "/assets/" + path + "?v=" + s.assetVersion[path]
		},
		"usd": usd,
		"num": func(v float64, prec int) string { return pricing.FormatNum(v, prec) },
		"fixed": func(v float64, prec int) string {
			return strconv.FormatFloat(v, 'f', prec, 64)
		},
		// ranked is an offer's (or a ladder step's) figure of the ranking, as the CLI's
		// table shows it; "–" when untimed.
		"ranked": func(rankedBy string, f recommend.Fit) string {
			if v := recommend.RankedValue(rankedBy, &f); v != nil {
				return usd(*v)
			}
			return "–"
		},
		"rankedStep": func(rankedBy string, st recommend.LadderStep) string {
			if v := recommend.RankedStepValue(rankedBy, &st); v != nil {
				return usd(*v)
			}
			return "–"
		},
		"optnum": func(v *float64, prec int) string {
			if v == nil {
				return "–"
			}
			return strconv.FormatFloat(*v, 'f', prec, 64)
		},
		"age": func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			return age(s.o.Now().Sub(t))
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"offerHistory": offerHistoryURL,
		"modelHistory": func(model string) string { return "/history?" + url.Values{"gpu-model": {model}}.Encode() },
		"inc":          func(i int) int { return i + 1 },
		"mul":          func(a, b int) int { return a * b },
		"dec":          func(i int) int { return i - 1 },
		"join":         strings.Join,
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}
}

// offerHistoryURL links an offer to its price history (both purchase options, this
// exact zone).
func offerHistoryURL(o pricing.Offer) string {
	return "/history?" + url.Values{"provider": {o.Provider}, "instance-type": {o.InstanceType}, "region": {o.Region}, "zone": {o.Zone}}.Encode()
}

// ageUnits are the units of an age, largest first, each used from its threshold up.
var ageUnits = []struct {
	from, unit time.Duration
	name       string
}{
	{48 * time.Hour, 24 * time.Hour, "d"},
	{time.Hour, time.Hour, "h"},
	{time.Minute, time.Minute, "min"},
	{0, time.Second, "s"},
}

// age renders how old a price is in the unit a table reader wants: "45 s", "3 h",
// "121 d" (days from two days up, so yesterday's refresh reads in hours).
func age(d time.Duration) string {
	d = max(d, 0)
	for _, u := range ageUnits {
		if d >= u.from {
			return strconv.FormatInt(int64(d/u.unit), 10) + " " + u.name
		}
	}
	return "0 s"
}

// usd formats a price as the CLI's tables do: cents, more digits under a dollar.
func usd(v float64) string { return pricing.FormatUSD(v) }

// render executes a page into a buffer first, so a template error is a clean 500
// rather than half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	nav := page
	if page == "instance" {
		nav = "compare" // an instance's page is reached from Compare
	}
	var buf bytes.Buffer
	err := s.pages[page].Execute(&buf, layout{Title: title, Nav: nav, Charts: page == "history" || page == "instance", Data: data})
	if err != nil {
		s.o.Log.Error("render page", "page", page, "error", err)
		http.Error(w, fmt.Sprintf("internal error rendering %s", page), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}
