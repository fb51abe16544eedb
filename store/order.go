package store

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// The orders of current offers, defined once: `picker offers --sort`, /v1/offers?sort=
// and the Compare page's column headings all name a SortKey here, so the three can never
// sort by different rules. Each order is total: equal keys fall back to the price, then
// the offer's identity (offerOrder), so a cursor names one position and paging through
// an order meets every offer exactly once.

// Sort names an order of current offers: a SortKey's Name (or its Alias).
type Sort string

// The sort keys, in the Compare page's column order.
const (
	SortProvider    Sort = "provider"
	SortRegion      Sort = "region"   // region, then zone
	SortInstance    Sort = "instance" // instance type
	SortGPU         Sort = "gpu"      // GPU model
	SortGPUs        Sort = "gpus"     // GPU count
	SortUsable      Sort = "usable"   // usable GiB per GPU (per slice for a fractional offer)
	SortTotal       Sort = "total"    // usable GiB of the whole instance
	SortVCPUs       Sort = "vcpus"
	SortRAM         Sort = "ram" // host RAM, GiB
	SortPurchase    Sort = "purchase"
	SortPrice       Sort = "price"         // price per instance-hour (the default)
	SortPricePerGPU Sort = "price-per-gpu" // price / GPU count (a 1/8 slice counts as 1/8 of a GPU)
	SortPricePerGiB Sort = "price-per-gib" // price / the instance's usable GiB
	SortAge         Sort = "age"           // newest price first
	SortSource      Sort = "source"
)

// SortKey is one order of current offers.
type SortKey struct {
	Name Sort
	// Alias is a second spelling that means Name: the Compare page's first URLs said
	// per-gpu and per-gib (and history links still do), which must keep working.
	Alias string
	// Text keys compare as SQLite's BINARY collation does (bytes); the others as numbers.
	Text bool
	num  func(o *pricing.Offer) float64
	text func(o *pricing.Offer) string
	// sql, where set, is an ORDER BY expression over stored columns that orders exactly
	// as num does (the same IEEE division), and index the partial index it leads: such a
	// key is sorted, paged and limited in SQLite, walking the index. The others depend on
	// the GPU catalogue's usable memory or the seen table, which no index holds, and are
	// sorted here after the filters.
	sql, index string
}

var sortKeys = []SortKey{
	{Name: SortProvider, Text: true, text: func(o *pricing.Offer) string { return o.Provider }},
	{Name: SortRegion, Text: true, text: func(o *pricing.Offer) string { return o.Region + "\x00" + o.Zone }},
	{Name: SortInstance, Text: true, text: func(o *pricing.Offer) string { return o.InstanceType }},
	{Name: SortGPU, Text: true, text: func(o *pricing.Offer) string { return o.GPUModel }},
	{Name: SortGPUs, num: func(o *pricing.Offer) float64 { return o.GPUCount }},
	{Name: SortUsable, num: (*pricing.Offer).MemPerDeviceGiB},
	{Name: SortTotal, num: (*pricing.Offer).TotalGPUMemGiB},
	{Name: SortVCPUs, num: func(o *pricing.Offer) float64 { return o.VCPUs }},
	{Name: SortRAM, num: func(o *pricing.Offer) float64 { return o.RAMGiB }},
	{Name: SortPurchase, Text: true, text: func(o *pricing.Offer) string { return string(o.Purchase) }},
	{Name: SortPrice, num: func(o *pricing.Offer) float64 { return o.PriceUSDHr }, sql: "price", index: "offers_current_price"},
	{Name: SortPricePerGPU, Alias: "per-gpu", num: (*pricing.Offer).PricePerGPU, sql: "price / gpu_count", index: "offers_current_per_gpu"},
	{Name: SortPricePerGiB, Alias: "per-gib", num: (*pricing.Offer).PricePerGiB},
	// Ascending age is newest first: the key is minus the observed time.
	{Name: SortAge, num: func(o *pricing.Offer) float64 { return -float64(o.ObservedAt.Unix()) }},
	{Name: SortSource, Text: true, text: func(o *pricing.Offer) string { return o.Source }},
}

// SortKeys are the orders, in the Compare page's column order.
func SortKeys() []SortKey { return slices.Clone(sortKeys) }

// SortNames are the sort keys' names, for help texts and errors.
func SortNames() []string {
	out := make([]string, len(sortKeys))
	for i, k := range sortKeys {
		out[i] = string(k.Name)
	}
	return out
}

// ParseSort accepts a sort key's name or alias, any case; "" means SortPrice. An unknown
// key is an Invalid error listing the valid ones.
func ParseSort(s string) (Sort, error) {
	k, err := lookupSort(Sort(s))
	if err != nil {
		return "", err
	}
	return k.Name, nil
}

func lookupSort(s Sort) (*SortKey, error) {
	v := strings.ToLower(strings.TrimSpace(string(s)))
	if v == "" {
		v = string(SortPrice)
	}
	for i := range sortKeys {
		if string(sortKeys[i].Name) == v || (sortKeys[i].Alias != "" && sortKeys[i].Alias == v) {
			return &sortKeys[i], nil
		}
	}
	return nil, pricing.ParamErrorf(pricing.Invalid, "sort", "sort %q: want one of %s", string(s), strings.Join(SortNames(), ", "))
}

// offerOrder is the tie-break of every order, and the whole of SortPrice's: price, then
// the offer's identity, compared as SQLite's BINARY collation compares (bytes). The
// identity is the offers table's UNIQUE key, so no two offers tie.
func offerOrder(a, b *pricing.Offer) int {
	if c := cmp.Compare(a.PriceUSDHr, b.PriceUSDHr); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Provider, b.Provider), strings.Compare(a.Region, b.Region), strings.Compare(a.Zone, b.Zone),
		strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(string(a.Purchase), string(b.Purchase)))
}

// keyed is an offer with its sort key computed once.
type keyed struct {
	n float64
	s string
	o *pricing.Offer
}

func (k *SortKey) keyOf(o *pricing.Offer) keyed {
	if k.Text {
		return keyed{s: k.text(o), o: o}
	}
	return keyed{n: k.num(o), o: o}
}

// compare orders a before b: by the key (reversed when desc), then offerOrder, which
// stays ascending in both directions (a descending GPU count still lists the cheapest
// 8-GPU offer first).
func (k *SortKey) compare(a, b keyed, desc bool) int {
	var c int
	if k.Text {
		c = strings.Compare(a.s, b.s)
	} else {
		c = cmp.Compare(a.n, b.n)
	}
	if desc {
		c = -c
	}
	if c != 0 {
		return c
	}
	return offerOrder(a.o, b.o)
}

// sortInPlace orders offers by k. Keys are computed once per offer, so 100k offers sort
// as small structs.
func (k *SortKey) sortInPlace(offers []pricing.Offer, desc bool) {
	ks := make([]keyed, len(offers))
	for i := range offers {
		ks[i] = k.keyOf(&offers[i])
	}
	slices.SortFunc(ks, func(a, b keyed) int { return k.compare(a, b, desc) })
	out := make([]pricing.Offer, len(offers))
	for i, kv := range ks {
		out[i] = *kv.o
	}
	copy(offers, out)
}

// SortOffers orders offers as a Query with that Sort and Desc returns them (offers
// already carry their usable memory, as the store's do). For callers holding offers in
// memory, such as a fake backend in tests and benchmarks.
func SortOffers(offers []pricing.Offer, s Sort, desc bool) error {
	k, err := lookupSort(s)
	if err != nil {
		return err
	}
	k.sortInPlace(offers, desc)
	return nil
}

// cursor is a position in one order: just after the offer whose key and identity it
// holds. It is the whole state of paging (keyset pagination): the server keeps nothing
// between pages, a page is a seek, and a cursor stays meaningful while offers change
// (the next page starts after that key, wherever the offers now are). It is opaque to
// clients: base64url of a JSON array, the format version first, then the order's index in
// sortKeys. A key that the identity already spells (provider, region, instance,
// purchase, price) is left out, so a cursor stays well within the API's 256 bytes a
// value for names as long as any provider's.
type cursor struct {
	sort Sort
	desc bool
	at   keyed
	o    pricing.Offer // the identity and price of the last offer of the page
}

const cursorVersion = 1

// identity is the part of o a cursor holds.
func identity(o *pricing.Offer) pricing.Offer {
	return pricing.Offer{Provider: o.Provider, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, Purchase: o.Purchase, PriceUSDHr: o.PriceUSDHr}
}

func (k *SortKey) encodeCursor(o *pricing.Offer, desc bool) string {
	kv, id := k.keyOf(o), identity(o)
	var key any
	switch {
	case k.Text && k.text(&id) != kv.s:
		key = kv.s
	case !k.Text && k.num(&id) != kv.n:
		key = kv.n
	}
	b, _ := json.Marshal([]any{cursorVersion, slices.IndexFunc(sortKeys, func(sk SortKey) bool { return sk.Name == k.Name }), desc, key,
		o.PriceUSDHr, o.Provider, o.Region, o.Zone, o.InstanceType, o.Purchase})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of order k (and direction desc); one of another order, or
// not a cursor at all, is an Invalid error naming the parameter "after".
func (k *SortKey) decodeCursor(s string, desc bool) (*cursor, error) {
	bad := func(why string) error {
		return pricing.ParamErrorf(pricing.Invalid, "after", "after %q: %s; pass the cursor a previous page returned, with the same sort and dir", s, why)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad("not a cursor")
	}
	var f []json.RawMessage
	if json.Unmarshal(b, &f) != nil || len(f) != 10 {
		return nil, bad("not a cursor")
	}
	var version, order int
	c := &cursor{}
	var purchase string
	dsts := []any{&version, &order, &c.desc, nil, &c.o.PriceUSDHr, &c.o.Provider, &c.o.Region, &c.o.Zone, &c.o.InstanceType, &purchase}
	for i, dst := range dsts {
		if dst != nil && json.Unmarshal(f[i], dst) != nil {
			return nil, bad("not a cursor")
		}
	}
	if version != cursorVersion || order < 0 || order >= len(sortKeys) {
		return nil, bad("not a cursor")
	}
	c.sort = sortKeys[order].Name
	if c.sort != k.Name || c.desc != desc {
		dir := map[bool]string{false: "asc", true: "desc"}
		return nil, bad("a cursor of sort " + string(c.sort) + " " + dir[c.desc] + ", not " + string(k.Name) + " " + dir[desc])
	}
	c.o.Purchase = pricing.Purchase(purchase)
	switch {
	case string(f[3]) == "null" && k.Text:
		c.at.s = k.text(&c.o)
	case string(f[3]) == "null":
		c.at.n = k.num(&c.o)
	case k.Text:
		err = json.Unmarshal(f[3], &c.at.s)
	default:
		err = json.Unmarshal(f[3], &c.at.n)
	}
	if err != nil {
		return nil, bad("not a cursor")
	}
	c.at.o = &c.o
	return c, nil
}

// after returns the index of the first offer of sorted (ordered by k, desc) past c.
func (k *SortKey) after(sorted []keyed, c *cursor, desc bool) int {
	return sort.Search(len(sorted), func(i int) bool { return k.compare(sorted[i], c.at, desc) > 0 })
}

// sqlAfter is the WHERE condition of the rows after c in k's SQL order, and its
// arguments: the key past c's, or equal with a greater tie-break (row values compare
// left to right, as offerOrder does). The leading range on the key alone lets SQLite
// seek the index instead of scanning it.
func (k *SortKey) sqlAfter(c *cursor, desc bool) (string, []any) {
	op, rng := ">", ">="
	if desc {
		op, rng = "<", "<="
	}
	e := k.sql
	return "(" + e + " " + rng + " ? AND (" + e + " " + op + " ? OR (" + e + " = ? AND (price, provider, region, zone, instance_type, purchase) > (?, ?, ?, ?, ?, ?))))",
		[]any{c.at.n, c.at.n, c.at.n, c.o.PriceUSDHr, c.o.Provider, c.o.Region, c.o.Zone, c.o.InstanceType, string(c.o.Purchase)}
}

// sqlOrder is k's ORDER BY clause.
func (k *SortKey) sqlOrder(desc bool) string {
	e := k.sql
	if desc {
		e += " DESC"
	}
	return " ORDER BY " + e + ", price, provider, region, zone, instance_type, purchase"
}

// MaxSearchWords bounds a search: each word is five LIKE tests per offer.
const MaxSearchWords = 8

// SearchWords splits a search into its words (lower case): an offer matches when each
// word is part of its provider, instance type, GPU model, region or zone. More than
// MaxSearchWords words is an Invalid error naming the parameter "search".
func SearchWords(s string) ([]string, error) {
	words := strings.Fields(strings.ToLower(s))
	if len(words) > MaxSearchWords {
		return nil, pricing.ParamErrorf(pricing.Invalid, "search", "search %q: %d words, want at most %d", s, len(words), MaxSearchWords)
	}
	return words, nil
}

// searchCond is the WHERE condition of one search word. LIKE ignores ASCII case, as
// every provider, region and GPU name is; % and _ in the word are literal.
func searchCond(word string) (string, []any) {
	pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(word) + "%"
	cols := []string{"provider", "instance_type", "gpu_model", "region", "zone"}
	parts := make([]string, len(cols))
	args := make([]any, len(cols))
	for i, c := range cols {
		parts[i], args[i] = c+` LIKE ? ESCAPE '\'`, pat
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// usableSQL is the usable memory of one whole GPU of an offers row (t.gpu_model's
// gpus.csv usable_gib, else the stored figure), as pricing.Offer.WithUsableMemory sets
// it: the VRAM filters compare it in SQL, so a LIMIT counts only offers that pass and a
// count is exact.
var usableSQL = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("(CASE gpu_model")
	n := 0
	for _, g := range pricing.GPUs() {
		if g.UsableGiB > 0 && !strings.Contains(g.Model, "'") {
			b.WriteString(" WHEN '" + g.Model + "' THEN " + strconv.FormatFloat(g.UsableGiB, 'g', -1, 64))
			n++
		}
	}
	if n == 0 {
		return "gpu_mem_gib"
	}
	b.WriteString(" ELSE gpu_mem_gib END)")
	return b.String()
})
