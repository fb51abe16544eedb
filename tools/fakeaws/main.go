// Command fakeaws serves the four AWS calls picker's aws adapter makes, at the scale of
// issue 17's whole-process refresh benchmark (tools/bench-refresh-aws.sh): -regions ×
// -types GPU instance types, each offered in every region (DescribeInstanceTypeOfferings),
// described by DescribeInstanceTypes when named, priced on demand by GetProducts (with
// one Windows decoy per four Linux rows, as the adapter's BenchmarkRefresh90k stream has)
// and -spot of them also by DescribeSpotPriceHistory.
//
// The wire formats are the adapter's test fake's (providers/aws/fake_test.go), built from
// the same fixtures (providers/aws/testdata): Pricing over awsJson1_1 with every PriceList
// item a JSON string, made from the fixture's g6.xlarge Linux item; EC2 over the query
// protocol with text/xml answers, made from the fixture's first DescribeInstanceTypes and
// DescribeSpotPriceHistory items. One server plays every region, as an `endpoint` mirror
// does: EC2 calls are told apart by the SigV4 credential scope, GetProducts by its
// regionCode filter. Nothing is checked: the adapter's tests do that.
//
//	go run ./tools/fakeaws -listen 127.0.0.1:0 -regions 300 -types 300 -spot 0 -addr-file addr
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// regionPlaceholder stands for the region in the pre-built answers; each call replaces it.
const regionPlaceholder = "zz-region-0"

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	addrFile := flag.String("addr-file", "", "write the base URL here once listening")
	fixtures := flag.String("fixtures", "providers/aws/testdata", "the aws adapter's test fixtures")
	regions := flag.Int("regions", 300, "regions served: fk-region-001 … (list them in picker's config)")
	types := flag.Int("types", 300, "GPU instance types per region")
	spot := flag.Int("spot", 0, "types per region that also have a spot price")
	flag.Parse()
	if *types < 1 || *regions < 1 || *spot < 0 || *spot > *types {
		log.Fatal("fakeaws: want -regions ≥ 1, -types ≥ 1, 0 ≤ -spot ≤ -types")
	}
	s, err := build(*fixtures, *types, *spot)
	if err != nil {
		log.Fatalf("fakeaws: %v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("fakeaws: %v", err)
	}
	u := "http://" + ln.Addr().String()
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(u+"\n"), 0o644); err != nil {
			log.Fatalf("fakeaws: %v", err)
		}
	}
	fmt.Fprintf(os.Stderr, "fakeaws: %s, %d regions (%s), %d types, %d spot\n", u, *regions, RegionName(1)+"…", *types, *spot)
	log.Fatal(http.Serve(ln, s))
}

// RegionName is the i-th (from 1) region fakeaws serves.
func RegionName(i int) string { return fmt.Sprintf("fk-region-%03d", i) }

// TypeName is the i-th (from 0) GPU instance type: a g6 family name, so the adapter's
// GPU family filter keeps it.
func TypeName(i int) string { return fmt.Sprintf("g6.%dxlarge", i) }

type server struct {
	products [][]byte // GetProducts pages for regionPlaceholder
	itItem   string   // one DescribeInstanceTypes item, with %s for the type
	types    int
	spotItem string // one spot record, with %s for zone and type
	spot     int
}

func build(dir string, types, spot int) (*server, error) {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
	s := &server{spot: spot, types: types}

	// GetProducts: the fixture's g6.xlarge Linux item (page 2, item 2), as the adapter's
	// benchmarks use it, renamed per type; every fifth item a Windows decoy.
	b, err := read("products_us-east-1.json")
	if err != nil {
		return nil, err
	}
	var fx struct{ Pages [][]map[string]any }
	if err := json.Unmarshal(b, &fx); err != nil {
		return nil, fmt.Errorf("products fixture: %w", err)
	}
	tmpl := fx.Pages[1][1]
	attrs := tmpl["product"].(map[string]any)["attributes"].(map[string]any)
	var items []string
	for i := range types {
		for _, opsys := range []string{"Linux", "Windows"} {
			if opsys == "Windows" && i%4 != 3 {
				continue // one decoy per four Linux rows
			}
			typ := TypeName(i)
			attrs["instanceType"] = typ
			attrs["regionCode"] = regionPlaceholder
			attrs["usagetype"] = "BoxUsage:" + typ
			attrs["operatingSystem"] = opsys
			ib, _ := json.Marshal(tmpl)
			// A price per type, so the store sees distinct prices.
			ib = bytes.Replace(ib, []byte(`"USD":"0.8048000000"`), []byte(fmt.Sprintf(`"USD":"%.4f"`, 0.5+float64(i)*0.01)), 1)
			items = append(items, string(ib))
		}
	}
	for start := 0; start < len(items); start += 100 {
		body := map[string]any{"FormatVersion": "aws_v1", "PriceList": items[start:min(start+100, len(items))]}
		if start+100 < len(items) {
			body["NextToken"] = fmt.Sprintf("tok:%d", len(s.products)+1)
		}
		pb, _ := json.Marshal(body)
		s.products = append(s.products, pb)
	}

	// DescribeInstanceTypes: the fixture's first item (p4d.24xlarge's GPU facts) per type.
	b, err = read("describe_instance_types_page1.xml")
	if err != nil {
		return nil, err
	}
	item, err := firstItem(string(b), "instanceTypeSet")
	if err != nil {
		return nil, fmt.Errorf("describe_instance_types_page1.xml: %w", err)
	}
	typeRe := regexp.MustCompile(`<instanceType>[^<]*</instanceType>`)
	s.itItem = typeRe.ReplaceAllLiteralString(strings.ReplaceAll(item, "%", "%%"), "<instanceType>%s</instanceType>")

	// DescribeSpotPriceHistory: the fixture's first record, re-zoned and re-typed.
	b, err = read("spot_price_history_page1.xml")
	if err != nil {
		return nil, err
	}
	item, err = firstItem(string(b), "spotPriceHistorySet")
	if err != nil {
		return nil, fmt.Errorf("spot_price_history_page1.xml: %w", err)
	}
	item = regexp.MustCompile(`<availabilityZone>[^<]*</availabilityZone>`).ReplaceAllLiteralString(item, "<availabilityZone>%s</availabilityZone>")
	item = typeRe.ReplaceAllLiteralString(item, "<instanceType>%s</instanceType>")
	s.spotItem = regexp.MustCompile(`<spotPrice>[^<]*</spotPrice>`).ReplaceAllLiteralString(item, "<spotPrice>%.4f</spotPrice>")
	return s, nil
}

// firstItem is the first <item>…</item> inside <set>.
func firstItem(doc, set string) (string, error) {
	_, rest, ok := strings.Cut(doc, "<"+set+">")
	if !ok {
		return "", fmt.Errorf("no <%s>", set)
	}
	start := strings.Index(rest, "<item>")
	if start < 0 {
		return "", fmt.Errorf("no item in <%s>", set)
	}
	// Items nest (<item> lists inside an item): find the matching close tag.
	depth, i := 0, start
	for {
		o := strings.Index(rest[i:], "<item>")
		c := strings.Index(rest[i:], "</item>")
		if c < 0 {
			return "", fmt.Errorf("unclosed item in <%s>", set)
		}
		if o >= 0 && o < c {
			depth++
			i += o + len("<item>")
			continue
		}
		depth--
		i += c + len("</item>")
		if depth == 0 {
			return rest[start:i], nil
		}
	}
}

// typeIndex is the index of a TypeName, ok false for any other name.
func (s *server) typeIndex(typ string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(typ, "g6."), "xlarge"))
	return n, err == nil && n >= 0 && n < s.types && TypeName(n) == typ
}

var scopeRe = regexp.MustCompile(`Credential=[^/]+/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request`)

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.Header.Get("X-Amz-Target") != "" {
		s.serveProducts(w, body)
		return
	}
	scope := scopeRe.FindStringSubmatch(r.Header.Get("Authorization"))
	if scope == nil {
		http.Error(w, "unsigned request", http.StatusBadRequest)
		return
	}
	s.serveEC2(w, body, scope[1])
}

func (s *server) serveProducts(w http.ResponseWriter, body []byte) {
	var in struct {
		NextToken string
		Filters   []struct{ Field, Value string }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	region := ""
	for _, f := range in.Filters {
		if f.Field == "regionCode" {
			region = f.Value
		}
	}
	page := 0
	if t, ok := strings.CutPrefix(in.NextToken, "tok:"); ok {
		page, _ = strconv.Atoi(t)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if page < 0 || page >= len(s.products) || region == "" {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"InvalidNextTokenException","message":"bad token or region"}`)
		return
	}
	w.Write(bytes.ReplaceAll(s.products[page], []byte(regionPlaceholder), []byte(region)))
}

func (s *server) serveEC2(w http.ResponseWriter, body []byte, region string) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	switch form.Get("Action") {
	case "DescribeInstanceTypeOfferings":
		// Every type, pages of 1,000 (the API's largest MaxResults).
		page := 0
		if t, ok := strings.CutPrefix(form.Get("NextToken"), "off:"); ok {
			page, _ = strconv.Atoi(t)
		}
		var sb strings.Builder
		sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<DescribeInstanceTypeOfferingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>fakeaws</requestId><instanceTypeOfferingSet>`)
		for i := page * 1000; i < min((page+1)*1000, s.types); i++ {
			fmt.Fprintf(&sb, "<item><instanceType>%s</instanceType><locationType>region</locationType><location>%s</location></item>", TypeName(i), region)
		}
		sb.WriteString("</instanceTypeOfferingSet>")
		if (page+1)*1000 < s.types {
			fmt.Fprintf(&sb, "<nextToken>off:%d</nextToken>", page+1)
		}
		sb.WriteString("</DescribeInstanceTypeOfferingsResponse>")
		io.WriteString(w, sb.String())
	case "DescribeInstanceTypes":
		// The types named in the instance-type filter (the adapter names at most 100),
		// one page; a wildcard value matches every type.
		var sb strings.Builder
		sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<DescribeInstanceTypesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>fakeaws</requestId><instanceTypeSet>`)
		for i := 1; ; i++ {
			typ := form.Get(fmt.Sprintf("Filter.1.Value.%d", i))
			if typ == "" {
				break
			}
			if strings.Contains(typ, "*") {
				for n := range s.types {
					fmt.Fprintf(&sb, s.itItem, TypeName(n))
				}
				break
			}
			if n, ok := s.typeIndex(typ); ok {
				fmt.Fprintf(&sb, s.itItem, TypeName(n))
			}
		}
		sb.WriteString("</instanceTypeSet></DescribeInstanceTypesResponse>")
		io.WriteString(w, sb.String())
	case "DescribeSpotPriceHistory":
		var sb strings.Builder
		sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>fakeaws</requestId><spotPriceHistorySet>`)
		for i := 1; ; i++ {
			typ := form.Get(fmt.Sprintf("InstanceType.%d", i))
			if typ == "" {
				break
			}
			n, ok := s.typeIndex(typ)
			if !ok || n >= s.spot {
				continue
			}
			fmt.Fprintf(&sb, s.spotItem, region+"a", typ, 0.2+float64(n)*0.004)
		}
		sb.WriteString("</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>")
		io.WriteString(w, sb.String())
	default:
		http.Error(w, "unexpected action", http.StatusBadRequest)
	}
}
