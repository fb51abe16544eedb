package web

import (
	"context"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// A price that starts on or before the embedded snapshot's date for its provider is
// the snapshot's reading of its source, and the page says so; a later start, or a
// provider the snapshot does not hold, is a change picker saw.
func TestSeededPrices(t *testing.T) {
	lambda := snapshotDates()["lambda"]
	if lambda.IsZero() {
		t.Fatal("the embedded snapshot has no lambda rows; pick another provider")
	}
	for _, tc := range []struct {
		provider string
		at       time.Time
		want     bool
	}{
		{"lambda", lambda, true}, {"lambda", lambda.AddDate(0, 0, -10), true},
		{"lambda", lambda.Add(time.Second), false}, {"static", lambda.AddDate(0, 0, -10), false},
	} {
		if got := seededAt(tc.provider, tc.at); got != tc.want {
			t.Errorf("seededAt(%s, %v) = %v, want %v", tc.provider, tc.at, got, tc.want)
		}
	}
	// On the page: the test backend's lambda offer was seeded, then changed twice.
	h, _ := newTestHandler(t)
	body := get(t, h, "/history?"+offerQuery(changedOffer)).Body.String()
	if n := strings.Count(body, `class="seeded"`); n != 1 {
		t.Errorf("%d rows marked as the snapshot's, want 1 (the seed, not the two changes)", n)
	}
	if want := "snapshot, dated " + lambda.Format("2006-01-02"); !strings.Contains(body, want) {
		t.Errorf("the seeded row does not say %q", want)
	}
	body = get(t, h, "/history?gpu-model=H100").Body.String()
	for _, want := range []string{`id="model-note"`, "not a price drop", `class="seeded"`, "<th scope=\"col\">Cheapest offer</th>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the H100 page lacks %q", want)
		}
	}
	if rec := get(t, h, "/history?gpu-model=H100&purchase=later"); rec.Code != 400 || !strings.Contains(rec.Body.String(), `id="h-purchase" name="purchase" aria-invalid="true"`) {
		t.Errorf("a bad purchase: %d, want 400 with the field marked", rec.Code)
	}
}

// The Ask page answers first: the offers table comes before the warnings, which are a
// <details> box saying how many it holds, closed when they are only notes on the
// offers and open when the estimator warns about the job; the exclusions are one
// summary line in it (from Recommendation.Excluded, not repeated as warnings) with
// the per-model list under it.
func TestAskAnswerFirst(t *testing.T) {
	b := newTestBackend(t)
	o := pricing.Offer{Provider: "aws", Region: "us-east-1", InstanceType: "g6.xlarge", GPUModel: "L4", GPUCount: 1, GPUMemGiB: 22,
		Purchase: pricing.OnDemand, PriceUSDHr: 0.8, Currency: "USD", ObservedAt: b.now}
	excluded := []recommend.Exclusion{
		{GPUModel: "M60", Offers: 40, Reason: "no bitsandbytes kernels", Code: recommend.ExclNoBnB},
		{GPUModel: "K80", Offers: 4, Reason: "no current PyTorch wheel runs it", Code: recommend.ExclNoPyTorch},
		{GPUModel: "M4000", Offers: 22, Reason: "no bitsandbytes kernels", Code: recommend.ExclNoBnB},
		{GPUModel: "RadeonProV520", Offers: 2, Reason: "no current PyTorch wheel runs it", Code: recommend.ExclNoPyTorch},
		{GPUModel: "MI355X", Offers: 0, Reason: "no bitsandbytes kernels", Code: recommend.ExclNoBnB},
	}
	notes := []string{"every price shown comes from the embedded snapshot; run `picker refresh` for live prices", "V100 has no bf16: runs in fp16-mixed"}
	warnings := notes
	for _, tc := range []struct {
		name    string
		jobWarn []string
		open    bool
		count   string
	}{
		{"only notes", nil, false, "2 warnings, 68 offers left out"},
		{"a warning about the job", []string{"--seq-len 8192 is beyond the model's 4096 positions"}, true, "3 warnings, 68 offers left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recommend.Recommendation{Offers: []recommend.Fit{{Offer: o}}, Excluded: excluded,
				Estimate: &fit.Result{DeviceTotalGiB: 7.3, Warnings: tc.jobWarn}, Warnings: append(slices.Clone(warnings), tc.jobWarn...)}
			h := Handler(&fixedRec{*b, rec}, Options{Now: func() time.Time { return b.now }})
			body := get(t, h, "/?model=x").Body.String()
			offers, box := strings.Index(body, `id="top-offers"`), strings.Index(body, `id="warnings"`)
			if offers < 0 || box < 0 || offers > box {
				t.Fatalf("offers table at %d, warnings at %d: want the table first", offers, box)
			}
			tag := body[strings.LastIndex(body[:box], "<"):]
			tag = tag[:strings.Index(tag, ">")+1]
			if wantTag := `<details class="warnings-box" id="warnings"` + map[bool]string{true: " open"}[tc.open] + `>`; tag != wantTag {
				t.Errorf("warnings box %s, want %s", tag, wantTag)
			}
			for _, want := range []string{
				"(" + tc.count + ")",
				`id="excluded-summary">68 offers on 5 GPU models left out: no bitsandbytes (62), no current PyTorch (6)</p>`,
				`<li><strong>M60</strong> (40 offers): no bitsandbytes kernels</li>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, w := range append(notes, tc.jobWarn...) {
				if !strings.Contains(body, html.EscapeString(w)) {
					t.Errorf("warning %q is not shown", w)
				}
			}
		})
	}
	// A real question's exclusions: the summary counts what Excluded holds.
	real, err := b.Recommend(context.Background(), url.Values{"model": {"llama-2-7b"}, "task": {"qlora"}})
	if err != nil {
		t.Fatal(err)
	}
	line := recommend.TallyExclusions(real.Excluded).String()
	if len(real.Excluded) == 0 || !strings.Contains(line, "no bitsandbytes") {
		t.Fatalf("a QLoRA question excludes %v (%q); want the GPUs without bitsandbytes", real.Excluded, line)
	}
	h, _ := newTestHandler(t)
	if body := get(t, h, "/?model=llama-2-7b&task=qlora").Body.String(); !strings.Contains(body, html.EscapeString(line)) {
		t.Errorf("the page lacks the summary %q", line)
	}
}

// Gradient checkpointing and double quantization default by task and framework (hf
// QLoRA checkpoints), so the form offers default, on and off, and off reaches the
// backend as false: an unticked checkbox could not turn the default off.
func TestAskTristate(t *testing.T) {
	for _, tc := range []struct{ query, cmd, param string }{
		{"model=llama-2-7b&task=qlora&grad-ckpt=false", "picker recommend --model llama-2-7b --task qlora --grad-ckpt=false", "false"},
		{"model=llama-2-7b&task=qlora&grad-ckpt=off", "picker recommend --model llama-2-7b --task qlora --grad-ckpt=false", "false"},
		{"model=llama-2-7b&task=qlora&grad-ckpt=true", "picker recommend --model llama-2-7b --task qlora --grad-ckpt", "true"},
		{"model=llama-2-7b&task=qlora&grad-ckpt", "picker recommend --model llama-2-7b --task qlora --grad-ckpt", "true"},
		{"model=llama-2-7b&task=qlora&grad-ckpt=default", "picker recommend --model llama-2-7b --task qlora", ""},
		{"model=llama-2-7b&task=qlora&grad-ckpt=maybe", "picker recommend --model llama-2-7b --task qlora --grad-ckpt=maybe", "maybe"},
	} {
		q, _ := url.ParseQuery(tc.query)
		params, order := askParams(q)
		if got := commandLine(params, order); got != tc.cmd {
			t.Errorf("%s: command %q, want %q", tc.query, got, tc.cmd)
		}
		if got := params.Get("grad-ckpt"); got != tc.param {
			t.Errorf("%s: grad-ckpt %q reaches the backend, want %q", tc.query, got, tc.param)
		}
	}
	h, b := newTestHandler(t)
	need := func(target string) string {
		t.Helper()
		rec := get(t, h, target)
		m := regexp.MustCompile(`id="need">.*?data-gib="([^"]+)"`).FindStringSubmatch(rec.Body.String())
		if rec.Code != 200 || m == nil {
			t.Fatalf("%s: %d, no need shown", target, rec.Code)
		}
		return m[1]
	}
	off, def := need("/?model=llama-2-7b&task=qlora&grad-ckpt=false"), need("/?model=llama-2-7b&task=qlora")
	if off == def {
		t.Errorf("grad-ckpt off needs %s GiB, as the default (on for hf QLoRA) does", off)
	}
	want, err := b.Recommend(context.Background(), url.Values{"model": {"llama-2-7b"}, "task": {"qlora"}, "grad-ckpt": {"false"}})
	if err != nil {
		t.Fatal(err)
	}
	if off != fmt.Sprint(want.Estimate.DeviceTotalGiB) {
		t.Errorf("the page needs %s GiB with grad-ckpt off, the backend %v", off, want.Estimate.DeviceTotalGiB)
	}
	// The select shows the choice; a form left at its default redirects to the short URL.
	body := get(t, h, "/?model=llama-2-7b&task=qlora&grad-ckpt=false").Body.String()
	if !strings.Contains(body, `<option value="false" selected>off</option>`) {
		t.Error("the grad-ckpt select does not show off")
	}
	if rec := get(t, h, "/?model=llama-2-7b&task=qlora&grad-ckpt=default&double-quant=default"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/?model=llama-2-7b&task=qlora" {
		t.Errorf("a form at its defaults: %d to %q, want 303 to the short URL", rec.Code, rec.Header().Get("Location"))
	}
}

// Every switch of fit.JobParams whose default depends on the task or framework is a
// tristate field; the others may stay checkboxes (off is their default everywhere).
func TestAskTristateFields(t *testing.T) {
	m, _, err := model.CatalogModel("llama-2-7b")
	if err != nil {
		t.Fatal(err)
	}
	var tristates []string
	for _, p := range fit.JobParams {
		if !p.Bool || p.Name == "vae-tiling" { // vae-tiling is for image models only
			continue
		}
		varies := false
		for _, task := range []string{"lora", "qlora", "full-ft"} {
			for _, fw := range fit.Frameworks {
				base := map[string]string{"task": task, "framework": string(fw)}
				off := maps.Clone(base)
				off[p.Name] = "false"
				jd, err1 := fit.ParseJob(base)
				jo, err2 := fit.ParseJob(off)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				rd, err1 := fit.Estimate(m, jd)
				ro, err2 := fit.Estimate(m, jo)
				if err1 == nil && err2 == nil && rd.DeviceTotalGiB != ro.DeviceTotalGiB {
					varies = true
				}
			}
		}
		if kind := fieldKind(p.Name); varies && kind != "tristate" {
			t.Errorf("--%s defaults on for some task or framework, but its field is a %s: the form cannot turn it off", p.Name, kind)
		}
		if varies {
			tristates = append(tristates, p.Name)
		}
	}
	// The case, so this test cannot pass by finding nothing.
	if !slices.Contains(tristates, "grad-ckpt") {
		t.Errorf("found task-dependent switches %v; --grad-ckpt (on for hf QLoRA) is one", tristates)
	}
	t.Logf("task-dependent switches: %v", tristates)
}

func fieldKind(name string) string {
	for _, g := range askGroups {
		for _, f := range g.Fields {
			if f.Name == name {
				return f.Kind
			}
		}
	}
	return ""
}

// The Providers page: a provider never refreshed live says never, with its snapshot's
// date, not the snapshot's date as its last success; the last attempt shows a failed
// live refresh.
func TestProvidersPage(t *testing.T) {
	h, b := newTestHandler(t)
	provs, err := b.Providers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, h, "/providers").Body.String()
	row := func(name string) string {
		i := strings.Index(body, `<tr data-provider="`+name+`">`)
		if i < 0 {
			t.Fatalf("no %s row", name)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	for _, p := range provs {
		r := row(p.Name)
		switch p.Name {
		case "lambda": // refreshed live twice
			if !strings.Contains(r, `<td class="last-success">`+p.LastSuccess.UTC().Format("2006-01-02 15:04 UTC")+"</td>") || !strings.Contains(r, `<small class="dim">ok</small>`) {
				t.Errorf("lambda row %s: want its live refresh as last success and attempt", r)
			}
		case failedProvider:
			if !strings.Contains(r, `<td class="last-success">never<br><small class="dim">prices from the snapshot, dated `) || !strings.Contains(r, `<small class="error">failed</small>`) {
				t.Errorf("%s row %s: want never refreshed, the snapshot's date, a failed attempt", p.Name, r)
			}
		default:
			if p.SnapshotDate == nil || p.LastSuccess != nil {
				continue
			}
			want := `<td class="last-success">never<br><small class="dim">prices from the snapshot, dated ` + p.SnapshotDate.Format("2006-01-02") + `</small></td>
<td class="last-attempt">never</td>`
			if !strings.Contains(r, want) {
				t.Errorf("%s row %s: want %s", p.Name, r, want)
			}
		}
	}
}
