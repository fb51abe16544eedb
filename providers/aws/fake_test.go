package aws

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// fakeAWS answers the three AWS calls the adapter makes in their wire formats: Pricing
// over awsJson1_1 (POST /, X-Amz-Target, application/x-amz-json-1.1) and EC2 over the
// query protocol (form-encoded POST, text/xml answers). One server plays every region,
// as an `endpoint` mirror does: EC2 calls are told apart by the region in their SigV4
// credential scope, GetProducts calls by their regionCode filter.
type fakeAWS struct {
	t         testing.TB
	products  map[string][][]byte // region -> GetProducts page bodies
	itItems   map[string]string   // DescribeInstanceTypes items by instance type
	itTypes   []string            // the fixtures' instance types, in order
	spotPages [][]byte            // DescribeSpotPriceHistory pages

	// fault, when set, may answer a call instead of the fixtures: it gets the API
	// ("GetProducts", "DescribeInstanceTypes", "DescribeSpotPriceHistory"), the region
	// and how many calls of that API and region came before this one.
	fault func(w http.ResponseWriter, api, region string, n int) bool
	// quotaValue, when set, gives the Value of a quota code in a region (ok false: the
	// fixture's); quotaFault may answer a GetServiceQuota instead (quota_test.go).
	quotaValue func(region, code string) (float64, bool)
	quotaFault func(w http.ResponseWriter, region, code string, n int) bool
	// instances are a region's DescribeInstances pages (quota_usage_test.go); a region
	// not in it runs no GPU instances (one empty page).
	instances map[string][][]byte

	// marketFault may answer a market call (market_test.go) instead of the fixtures;
	// scored lists the types GetSpotPlacementScores was asked about.
	marketFault func(w http.ResponseWriter, api, region string, n int) bool
	scored      []string

	mu    sync.Mutex
	calls map[string]int // "API region" -> calls
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// productPages encodes a products_<region>.json fixture as GetProducts response bodies:
// every item becomes a JSON string inside PriceList, and every page but the last
// carries a NextToken.
func productPages(t testing.TB, name, region string) [][]byte {
	t.Helper()
	var fx struct{ Pages [][]json.RawMessage }
	if err := json.Unmarshal(readFixture(t, name), &fx); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for i, page := range fx.Pages {
		body := map[string]any{"FormatVersion": "aws_v1", "PriceList": encodeItems(page)}
		if i < len(fx.Pages)-1 {
			body["NextToken"] = fmt.Sprintf("tok:%s:%d", region, i+1)
		}
		b, _ := json.Marshal(body)
		out = append(out, b)
	}
	return out
}

func encodeItems(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		var v any
		_ = json.Unmarshal(it, &v)
		b, _ := json.Marshal(v) // compact, as the API sends it
		out[i] = string(b)
	}
	return out
}

func newFakeAWS(t testing.TB) *fakeAWS {
	f := &fakeAWS{
		t: t,
		products: map[string][][]byte{
			"us-east-1": productPages(t, "products_us-east-1.json", "us-east-1"),
			"us-west-2": productPages(t, "products_us-west-2.json", "us-west-2"),
			"us-east-2": {readFixture(t, "getproducts_us-east-2_page1.json"), readFixture(t, "getproducts_last_page_empty.json")},
		},
		itItems:   map[string]string{},
		spotPages: [][]byte{readFixture(t, "spot_price_history_page1.xml"), readFixture(t, "spot_price_history_page2.xml")},
		calls:     map[string]int{},
	}
	for _, name := range []string{"describe_instance_types_page1.xml", "describe_instance_types_page2.xml"} {
		for _, it := range topItems(t, string(readFixture(t, name)), "instanceTypeSet") {
			typ := itemTypeRe.FindStringSubmatch(it)[1]
			f.itItems[typ] = it
			f.itTypes = append(f.itTypes, typ)
		}
	}
	return f
}

var itemTypeRe = regexp.MustCompile(`<instanceType>([^<]*)</instanceType>`)

// topItems splits the <item> elements directly inside <set> (items nest: lists inside
// an item are <item>s too).
func topItems(t testing.TB, doc, set string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<"+set+">")
	if !ok {
		t.Fatalf("no <%s>", set)
	}
	var items []string
	depth, start := 0, -1
	for i := 0; i < len(rest); {
		switch {
		case strings.HasPrefix(rest[i:], "<item>"):
			if depth == 0 {
				start = i
			}
			depth++
			i += len("<item>")
		case strings.HasPrefix(rest[i:], "</item>"):
			depth--
			i += len("</item>")
			if depth == 0 {
				items = append(items, rest[start:i])
			}
		case depth == 0 && strings.HasPrefix(rest[i:], "</"+set+">"):
			return items
		default:
			i++
		}
	}
	return items
}

// Page sizes of the fake's EC2 listings, small so that every test follows pages.
const (
	offeringsPerPage = 6
	typesPerPage     = 4
)

// ec2Page answers one page of a listing: items[page*per:…], with a NextToken
// prefix:page+1 while more remain; ok is false for a bad token.
func ec2Page(op, set string, items []string, per int, prefix, token string) ([]byte, bool) {
	page := 0
	if token != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(token, prefix))
		if err != nil || !strings.HasPrefix(token, prefix) || n*per >= len(items) {
			return nil, false
		}
		page = n
	}
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + op + `Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>fake</requestId><` + set + ">")
	end := min((page+1)*per, len(items))
	for _, it := range items[page*per : end] {
		sb.WriteString(it)
	}
	sb.WriteString("</" + set + ">")
	if end < len(items) {
		fmt.Fprintf(&sb, "<nextToken>%s%d</nextToken>", prefix, page+1)
	}
	sb.WriteString("</" + op + "Response>")
	return []byte(sb.String()), true
}

func (f *fakeAWS) count(api, region string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[api+" "+region]
}

func (f *fakeAWS) next(api, region string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.calls[api+" "+region]
	f.calls[api+" "+region] = n + 1
	return n
}

var (
	scopeRe    = regexp.MustCompile(`Credential=[^/]+/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request`)
	jsonTokRe  = regexp.MustCompile(`"NextToken"\s*:\s*"([^"]*)"`)
	xmlTokRe   = regexp.MustCompile(`<nextToken>([^<]*)</nextToken>`)
	productsCT = "application/x-amz-json-1.1"
)

// pageFor finds the page whose predecessor carried token ("" is the first page).
func pageFor(pages [][]byte, token string, re *regexp.Regexp) ([]byte, bool) {
	if token == "" {
		return pages[0], true
	}
	for i := 0; i < len(pages)-1; i++ {
		if m := re.FindSubmatch(pages[i]); m != nil && string(m[1]) == token {
			return pages[i+1], true
		}
	}
	return nil, false
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.serveMarket(w, r) { // market_test.go: the advisor file, EBS prices, placement scores
		return
	}
	scope := scopeRe.FindStringSubmatch(r.Header.Get("Authorization"))
	if r.Method != http.MethodPost || r.URL.Path != "/" || scope == nil {
		f.t.Errorf("unsigned or unexpected request %s %s (Authorization %q)", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if target := r.Header.Get("X-Amz-Target"); strings.HasPrefix(target, sqTargetPrefix) {
		f.serveQuotas(w, r, target, scope[1], scope[2]) // quota_test.go
		return
	} else if target != "" {
		f.serveProducts(w, r, target, scope[2])
		return
	}
	f.serveEC2(w, r, scope[1], scope[2])
}

func (f *fakeAWS) serveProducts(w http.ResponseWriter, r *http.Request, target, service string) {
	if target != "AWSPriceListService.GetProducts" || service != "pricing" {
		f.t.Errorf("X-Amz-Target %q signed for %q; want AWSPriceListService.GetProducts signed for pricing", target, service)
	}
	if ct := r.Header.Get("Content-Type"); ct != productsCT {
		f.t.Errorf("GetProducts Content-Type %q; want %s", ct, productsCT)
	}
	var in struct {
		ServiceCode   string
		FormatVersion string
		NextToken     string
		MaxResults    int
		Filters       []struct{ Type, Field, Value string }
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return // the client hung up mid-body (or before it): a cancelled fetch, nothing to check
		}
		f.t.Errorf("GetProducts body: %v", err)
	}
	region := ""
	want := map[string]string{"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required", "productFamily": "Compute Instance"}
	for _, fl := range in.Filters {
		if fl.Type != "TERM_MATCH" {
			f.t.Errorf("filter %s type %q; want TERM_MATCH", fl.Field, fl.Type)
		}
		if fl.Field == "regionCode" {
			region = fl.Value
		} else if want[fl.Field] == fl.Value {
			delete(want, fl.Field)
		}
	}
	if in.ServiceCode != "AmazonEC2" || len(want) > 0 || region == "" {
		f.t.Errorf("GetProducts ServiceCode %q, region %q, missing filters %v", in.ServiceCode, region, want)
	}
	n := f.next("GetProducts", region)
	w.Header().Set("Content-Type", productsCT)
	if f.fault != nil && f.fault(w, "GetProducts", region, n) {
		return
	}
	pages, ok := f.products[region]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"InvalidParameterException","message":"no fixture for region %s"}`, region)
		return
	}
	body, ok := pageFor(pages, in.NextToken, jsonTokRe)
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"InvalidNextTokenException","message":"bad token"}`)
		return
	}
	w.Write(body)
}

func (f *fakeAWS) serveEC2(w http.ResponseWriter, r *http.Request, region, service string) {
	if service != "ec2" {
		f.t.Errorf("EC2 call signed for %q", service)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		f.t.Errorf("EC2 Content-Type %q", ct)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil || (len(b) == 0 && r.Context().Err() != nil) {
		return // the client hung up mid-body (or before it): a cancelled fetch, nothing to check
	}
	form, err := url.ParseQuery(string(b))
	if err != nil || form.Get("Version") != "2016-11-15" {
		f.t.Errorf("EC2 body %q: %v", b, err)
	}
	api := form.Get("Action")
	var body []byte
	var pageOK bool
	switch api {
	case "DescribeInstanceTypeOfferings":
		if form.Get("LocationType") != "region" || form.Get("Filter.1.Name") != "instance-type" || form.Get("Filter.1.Value.1") != "g*" || form.Get("Filter.1.Value.2") != "p*" {
			f.t.Errorf("DescribeInstanceTypeOfferings params: %v", form)
		}
		items := make([]string, len(f.itTypes))
		for i, typ := range f.itTypes {
			items[i] = "<item><instanceType>" + typ + "</instanceType><locationType>region</locationType><location>" + region + "</location></item>"
		}
		body, pageOK = ec2Page(api, "instanceTypeOfferingSet", items, offeringsPerPage, "off:", form.Get("NextToken"))
	case "DescribeInstanceTypes":
		// Only named types: the adapter asks for those no region has described yet.
		var items []string
		for i := 1; ; i++ {
			v := form.Get(fmt.Sprintf("Filter.1.Value.%d", i))
			if v == "" {
				if i == 1 || i > 101 {
					f.t.Errorf("DescribeInstanceTypes names %d types; want 1 to 100", i-1)
				}
				break
			}
			if strings.Contains(v, "*") {
				// The listing the adapter falls back to without
				// DescribeInstanceTypeOfferings: g* and p*, every type.
				if v == "g*" && form.Get("Filter.1.Value.2") == "p*" && form.Get("Filter.1.Value.3") == "" {
					for _, typ := range f.itTypes {
						items = append(items, f.itItems[typ])
					}
					break
				}
				f.t.Errorf("DescribeInstanceTypes filter value %q; want instance type names or g*, p*", v)
			}
			if it, ok := f.itItems[v]; ok {
				items = append(items, it)
			}
		}
		if form.Get("Filter.1.Name") != "instance-type" || form.Get("Filter.2.Name") != "" {
			f.t.Errorf("DescribeInstanceTypes filters: %v", form)
		}
		body, pageOK = ec2Page(api, "instanceTypeSet", items, typesPerPage, "it:", form.Get("NextToken"))
	case "DescribeSpotPriceHistory":
		if form.Get("ProductDescription.1") != "Linux/UNIX" || form.Get("StartTime") == "" || form.Get("InstanceType.1") == "" {
			f.t.Errorf("DescribeSpotPriceHistory params: %v", form)
		}
		body, pageOK = pageFor(f.spotPages, form.Get("NextToken"), xmlTokRe)
	case "DescribeInstances":
		body, pageOK = f.describeInstances(form, region) // quota_usage_test.go
	default:
		f.t.Errorf("unexpected EC2 action %q", api)
		http.Error(w, "bad action", http.StatusBadRequest)
		return
	}
	n := f.next(api, region)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	if f.fault != nil && f.fault(w, api, region, n) {
		return
	}
	if !pageOK {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `<Response><Errors><Error><Code>InvalidNextToken</Code><Message>bad token</Message></Error></Errors><RequestID>x</RequestID></Response>`)
		return
	}
	w.Write(body)
}

// serve starts the fake and returns its URL.
func (f *fakeAWS) serve(t *testing.T) string {
	return providertest.Serve(t, f).URL
}

// staticCredentials points the default credential chain at fixed keys and nothing
// else: no shared files, no instance metadata.
func staticCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPICKERTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "picker-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
