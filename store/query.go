package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Query selects current offers (CONTRACT.md, `picker offers` and `recommend`).
// Zero values mean "no restriction".
type Query struct {
	Providers []string // provider names (case-insensitive)
	Regions   []string // region names (case-insensitive)
	// GPUModels are canonical names, matched case-insensitively; a provider's alias
	// ("A100-SXM4-80GB") is normalised first.
	GPUModels []string
	Purchase  pricing.Purchase // "" (or "any"): both
	// MinVRAMGiB is per GPU; a fractional slice has count x memory of its GPU.
	MinVRAMGiB      float64
	MinTotalVRAMGiB float64
	// MinVRAMGB and MinTotalVRAMGB are the same floors on the datasheet class in GB
	// (memclass.go: an H100 is 80 GB, 79.19 GiB usable).
	MinVRAMGB      float64
	MinTotalVRAMGB float64
	MaxPriceUSDHr  float64 // per instance-hour
	// MinReliability leaves out offers whose host states a lower reliability score
	// (pricing.Host, 0..1); offers that state none (every cloud) pass.
	MinReliability float64
	MaxGPUs        float64
	// GPUCount keeps only the offers of exactly that many GPUs (the Compare page's GPU
	// count), so that a page of them is a LIMIT in SQL rather than a filter after it.
	GPUCount float64
	// ExcludeFractional drops vGPU slices (gpu_count < 1).
	ExcludeFractional bool
	Sort              Sort // "" = SortPrice; see SortKeys
	// Desc reverses the sort key (ties stay cheapest first, then by identity).
	Desc bool
	// Search keeps the offers of which each word (SearchWords) is part of the provider,
	// instance type, GPU model, region or zone, ignoring case.
	Search string
	// After is a cursor (Page.Next): only the offers after that position in this order.
	After string
	Limit int // 0 = all
}

// offerColumns are the columns scanned into a pricing.Offer, last the observed time.
var offerColumns = offerCols("offers")

// offerCols lists the offer columns of table t (a name or alias of offers). The
// observed time is the newer of the row's last_seen and its region's seen row, which
// carries the time of a refresh that listed the region uniformly (0003_shapes.sql).
func offerCols(t string) string {
	return t + ".provider, " + t + ".region, " + t + ".zone, " + t + ".instance_type, " + t + ".purchase, " + t + ".gpu_model, " +
		t + ".gpu_count, " + t + ".gpu_mem_gib, " + t + ".vcpus, " + t + ".ram_gib, " + t + ".currency, " + t + ".source, " + t + ".price, " +
		seenExpr(t)
}

func seenExpr(t string) string {
	return "max(" + t + ".last_seen, coalesce((SELECT seen.last_seen FROM seen WHERE seen.provider = " + t + ".provider AND seen.region = " + t + ".region), 0))"
}

// Page is one page of the current offers a Query selects.
type Page struct {
	Offers []pricing.Offer
	// Total counts the offers the query matches on every page (its After and Limit aside).
	Total int
	// Next is the cursor of the page after this one (for Query.After), "" on the last.
	Next string
}

// Offers returns the current offers (those with an open price interval) matching q, in
// q.Sort's order (cheapest first by default; ties broken by price, then provider,
// region, zone, instance type and purchase, so the order is the same on every run), at
// most q.Limit of them after q.After. ObservedAt is when the price was last seen,
// Source where it came from, GPUMemGiB the usable memory (pricing.Offer.WithUsableMemory).
func (s *Store) Offers(ctx context.Context, q Query) ([]pricing.Offer, error) {
	p, err := s.page(ctx, q, s.cache != nil, false)
	return p.Offers, err
}

// OffersPage is Offers with the paging facts: the total the query matches and the
// cursor of the next page.
func (s *Store) OffersPage(ctx context.Context, q Query) (Page, error) {
	return s.page(ctx, q, s.cache != nil, true)
}

// queryOffers is Offers read from the database, never from the cache (the tests' truth).
func (s *Store) queryOffers(ctx context.Context, q Query) ([]pricing.Offer, error) {
	p, err := s.page(ctx, q, false, false)
	return p.Offers, err
}

// page answers q. A key SQLite can order (SortKey.sql) is sorted, seeked and limited
// there: with a limit that reads tens of index entries instead of every current offer,
// and with the cache on each page is its own entry. Any other key reads every match,
// sorts it here and finds the cursor by binary search; with the cache on the sorted
// list is one entry that every page of that order and those filters slices.
func (s *Store) page(ctx context.Context, q Query, useCache, wantTotal bool) (Page, error) {
	key, err := lookupSort(q.Sort)
	if err != nil {
		return Page{}, err
	}
	var after *cursor
	if q.After != "" {
		if after, err = key.decodeCursor(q.After, q.Desc); err != nil {
			return Page{}, err
		}
	}
	where, args, err := offerWhere(q)
	if err != nil {
		return Page{}, err
	}
	var v int64
	if useCache {
		if v, err = s.dataVersion(ctx); err != nil {
			return Page{}, err
		}
	}
	read := func(name string, q Query, fn func() ([]pricing.Offer, error)) ([]pricing.Offer, error) {
		if !useCache {
			return fn()
		}
		return cached(s, v, name+"|"+queryKey(q), fn)
	}
	// whole is q without its paging: what Total counts and a sorted list holds.
	whole := q
	whole.After, whole.Limit = "", 0
	if key.sql == "" {
		whole.Sort = key.Name
		all, err := read("sorted", whole, func() ([]pricing.Offer, error) {
			all, err := s.selectOffers(ctx, "offers", where, args, "", 0)
			if err == nil {
				key.sortInPlace(all, q.Desc)
			}
			return all, err
		})
		if err != nil {
			return Page{}, err
		}
		lo, hi := 0, len(all)
		if after != nil {
			ks := make([]keyed, len(all))
			for i := range all {
				ks[i] = key.keyOf(&all[i])
			}
			lo = key.after(ks, after, q.Desc)
		}
		if q.Limit > 0 {
			hi = min(lo+q.Limit, len(all))
		}
		p := Page{Offers: slices.Clone(all[lo:hi]), Total: len(all)}
		if p.Offers == nil {
			p.Offers = []pricing.Offer{}
		}
		if hi < len(all) && hi > lo {
			p.Next = key.encodeCursor(&all[hi-1], q.Desc)
		}
		return p, nil
	}

	pageWhere, pageArgs := where, args
	if after != nil {
		cond, cargs := key.sqlAfter(after, q.Desc)
		pageWhere, pageArgs = append(slices.Clone(where), cond), append(slices.Clone(args), cargs...)
	}
	// Plan choice. With a limit and no GPU model (which has its own index), walking
	// the sort order's index and stopping after Limit matches is the fast plan: tens
	// of index entries read instead of every current offer. SQLite's planner cannot
	// know how unselective the VRAM/count/price ranges are and prefers a full scan
	// and sort, 50-100x slower at 100k offers (BenchmarkOffersQuery). Without a
	// limit every match is read anyway and the planner's choice stands.
	// Region and provider filters have their own indexes (0002_filter_indexes.sql), which
	// the planner picks well: they are equality filters it can estimate.
	from := "offers"
	if q.Limit > 0 && len(q.GPUModels) == 0 && len(q.Regions) == 0 && len(q.Providers) == 0 {
		from += " INDEXED BY " + key.index
	}
	limit := 0
	if q.Limit > 0 {
		limit = q.Limit + 1 // one more says whether a next page exists
	}
	rows, err := read("sql", q, func() ([]pricing.Offer, error) {
		return s.selectOffers(ctx, from, pageWhere, pageArgs, key.sqlOrder(q.Desc), limit)
	})
	if err != nil {
		return Page{}, err
	}
	p := Page{Offers: slices.Clone(rows)}
	if p.Offers == nil {
		p.Offers = []pricing.Offer{}
	}
	if q.Limit > 0 && len(p.Offers) > q.Limit {
		p.Offers = p.Offers[:q.Limit]
		p.Next = key.encodeCursor(&p.Offers[q.Limit-1], q.Desc)
	}
	if !wantTotal {
		return p, nil
	}
	if q.Limit == 0 && after == nil {
		p.Total = len(p.Offers)
		return p, nil
	}
	whole.Sort, whole.Desc = "", false // the count is the same in every order
	n, err := cached(s, v, "count|"+queryKey(whole), func() ([]int, error) {
		var n int
		err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM offers WHERE "+strings.Join(where, " AND "), args...).Scan(&n)
		return []int{n}, s.dbError("count offers", err)
	})
	if err != nil {
		return Page{}, err
	}
	p.Total = n[0]
	return p, nil
}

// OfferNames are the providers and the regions of the current offers, each once: what
// a --provider or --region value is checked against. Each is a walk of its filter index
// (0002_filter_indexes.sql: partial on the current offers, and covering), not a read of
// every offer, so that a page of a filtered listing (/offers.csv) stays a page.
func (s *Store) OfferNames(ctx context.Context) (providers, regions []string, err error) {
	list := func(col string) ([]string, error) {
		rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT "+col+" FROM offers WHERE price IS NOT NULL")
		if err != nil {
			return nil, s.dbError("list offer names", err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				return nil, s.dbError("list offer names", err)
			}
			out = append(out, v)
		}
		return out, s.dbError("list offer names", rows.Err())
	}
	if providers, err = list("provider"); err != nil {
		return nil, nil, err
	}
	regions, err = list("region")
	return providers, regions, err
}

// offerWhere is q's filters and search as WHERE conditions (ANDed) and their arguments.
func offerWhere(q Query) ([]string, []any, error) {
	var where []string
	var args []any
	where = append(where, "price IS NOT NULL")
	in := func(expr string, vals []string, norm func(string) string) {
		if len(vals) == 0 {
			return
		}
		ph := make([]string, len(vals))
		for i, v := range vals {
			ph[i] = "?"
			args = append(args, norm(v))
		}
		where = append(where, expr+" IN ("+strings.Join(ph, ", ")+")")
	}
	in("provider", q.Providers, func(v string) string { return strings.ToLower(strings.TrimSpace(v)) })
	in("region COLLATE NOCASE", q.Regions, strings.TrimSpace)
	in("gpu_model", q.GPUModels, func(v string) string { // column collation is NOCASE
		if m, ok := pricing.NormalizeGPU(v, 0); ok {
			return m
		}
		return strings.TrimSpace(v)
	})
	switch p := strings.ToLower(string(q.Purchase)); p {
	case "", "any":
	default:
		pur, err := pricing.ParsePurchase(p)
		if err != nil {
			return nil, nil, err
		}
		where = append(where, "purchase = ?")
		args = append(args, string(pur))
	}
	cond := func(ok bool, expr string, v ...any) {
		if ok {
			where = append(where, expr)
			args = append(args, v...)
		}
	}
	// The VRAM floors are on the usable memory (an L4 reported as 24 does not pass
	// --min-vram 24), and, as the shape reads (shape.go) and the filters before them
	// always had it, on the provider's figure too. The test on the provider's figure is
	// spelled out rather than through the generated columns vram_gib and total_vram_gib so
	// that it reads only indexed columns (see 0001_init.sql): SQLite rejects most rows
	// from the index entry. The usable test is exact in SQL (usableSQL, the arithmetic of
	// pricing.Offer.MemPerDeviceGiB), so a LIMIT stops after offers that pass and a count
	// is right.
	u := usableSQL()
	cond(q.MinVRAMGiB > 0, "(CASE WHEN gpu_count < 1 THEN gpu_count * gpu_mem_gib ELSE gpu_mem_gib END) >= ? AND "+
		"(CASE WHEN gpu_count < 1 THEN gpu_count * "+u+" ELSE "+u+" END) >= ?", q.MinVRAMGiB, q.MinVRAMGiB)
	cond(q.MinTotalVRAMGiB > 0, "gpu_count * gpu_mem_gib >= ? AND gpu_count * "+u+" >= ?", q.MinTotalVRAMGiB, q.MinTotalVRAMGiB)
	c := classSQL()
	cond(q.MinVRAMGB > 0, "(CASE WHEN gpu_count < 1 THEN gpu_count * "+c+" ELSE "+c+" END) >= ?", q.MinVRAMGB)
	cond(q.MinTotalVRAMGB > 0, "gpu_count * "+c+" >= ?", q.MinTotalVRAMGB)
	cond(q.MaxPriceUSDHr > 0, "price <= ?", q.MaxPriceUSDHr)
	cond(q.MinReliability > 0, "(host_reliability = 0 OR host_reliability >= ?)", q.MinReliability)
	cond(q.MaxGPUs > 0, "gpu_count <= ?", q.MaxGPUs)
	cond(q.GPUCount > 0, "gpu_count = ?", q.GPUCount)
	if q.ExcludeFractional {
		where = append(where, "gpu_count >= 1")
	}
	words, err := SearchWords(q.Search)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range words {
		c, a := searchCond(w)
		cond(true, c, a...)
	}
	return where, args, nil
}

// selectOffers reads the current offers from (a table, perhaps with an INDEXED BY)
// that meet where, in order (an ORDER BY clause, or "" for any), at most limit (0 = all).
func (s *Store) selectOffers(ctx context.Context, from string, where []string, args []any, order string, limit int) ([]pricing.Offer, error) {
	query := "SELECT " + offerColumns + ", " + hostCols("offers") + " FROM " + from + " WHERE " + strings.Join(where, " AND ") + order
	if limit > 0 {
		query += " LIMIT ?"
		args = append(slices.Clone(args), limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.dbError("query offers", err)
	}
	defer rows.Close()
	var out []pricing.Offer
	for rows.Next() {
		var o pricing.Offer
		var seen int64
		if err := rows.Scan(append([]any{&o.Provider, &o.Region, &o.Zone, &o.InstanceType, &o.Purchase, &o.GPUModel, &o.GPUCount,
			&o.GPUMemGiB, &o.VCPUs, &o.RAMGiB, &o.Currency, &o.Source, &o.PriceUSDHr, &seen}, hostDest(&o.Host)...)...); err != nil {
			return nil, s.dbError("query offers", err)
		}
		o.ObservedAt = fromUnix(seen)
		// Memory is the GPU model's usable figure (pricing.Offer.WithUsableMemory), which
		// the VRAM filters above already compared.
		out = append(out, o.WithUsableMemory())
	}
	return out, s.dbError("query offers", rows.Err())
}

// HistoryQuery names the offers whose price history is wanted: Provider and
// InstanceType, or GPUModel (every offer of that model, for a per-model chart); the
// others narrow it ("" = any).
type HistoryQuery struct {
	Provider     string
	InstanceType string // case-insensitive
	GPUModel     string // canonical name, case-insensitive
	Region       string // case-insensitive
	Zone         string
	Purchase     pricing.Purchase
	// Limit, when above 0, returns only the Limit newest intervals (still oldest first),
	// so one request's memory and time are bounded however much history is stored
	// (issue 30: a GPU model's 1.6M intervals took 16 s and 1.1 GiB per request). A
	// caller that asks for one more than it shows knows whether older ones were left.
	Limit int
}

// PricePoint is one price interval of one offer.
type PricePoint struct {
	Provider     string           `json:"provider"`
	Region       string           `json:"region"`
	Zone         string           `json:"zone"`
	InstanceType string           `json:"instance_type"`
	Purchase     pricing.Purchase `json:"purchase"`
	GPUModel     string           `json:"gpu_model"`
	GPUCount     float64          `json:"gpu_count"`
	PriceUSDHr   float64          `json:"price_usd_hr"`
	ValidFrom    time.Time        `json:"valid_from"`
	ValidTo      *time.Time       `json:"valid_to"` // nil while the price is current
}

// History returns every stored price interval of the matching offers, oldest first
// (ties: region, zone, purchase). No match is a NotFound error naming what was asked.
func (s *Store) History(ctx context.Context, q HistoryQuery) ([]PricePoint, error) {
	if (q.Provider == "" || q.InstanceType == "") && q.GPUModel == "" {
		return nil, pricing.Errorf(pricing.Invalid, "history: provider and instance type, or a GPU model, are required")
	}
	var where, asked []string
	var args []any
	if q.Provider != "" {
		where, args = append(where, "o.provider = ?"), append(args, strings.ToLower(q.Provider))
		asked = append(asked, "provider "+q.Provider)
	}
	if q.InstanceType != "" {
		where, args = append(where, "o.instance_type = ? COLLATE NOCASE"), append(args, q.InstanceType)
		asked = append(asked, "instance type "+q.InstanceType)
	}
	if q.GPUModel != "" {
		where, args = append(where, "o.gpu_model = ? COLLATE NOCASE"), append(args, q.GPUModel)
		asked = append(asked, "GPU model "+q.GPUModel)
	}
	if q.Region != "" {
		where, args = append(where, "o.region = ? COLLATE NOCASE"), append(args, q.Region)
		asked = append(asked, "region "+q.Region)
	}
	if q.Zone != "" {
		where, args = append(where, "o.zone = ?"), append(args, q.Zone)
		asked = append(asked, "zone "+q.Zone)
	}
	if q.Purchase != "" && !strings.EqualFold(string(q.Purchase), "any") {
		p, err := pricing.ParsePurchase(string(q.Purchase))
		if err != nil {
			return nil, err
		}
		where, args = append(where, "o.purchase = ?"), append(args, string(p))
		asked = append(asked, "purchase "+string(p))
	}
	order, limit := "ORDER BY p.valid_from, o.region, o.zone, o.purchase, p.id", ""
	if q.Limit > 0 { // the newest Limit, reversed below
		order, limit = "ORDER BY p.valid_from DESC, o.region DESC, o.zone DESC, o.purchase DESC, p.id DESC", " LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT o.provider, o.region, o.zone, o.instance_type, o.purchase, o.gpu_model, o.gpu_count,
		p.price, p.valid_from, p.valid_to
		FROM offers o JOIN prices p ON p.offer_id = o.id
		WHERE `+strings.Join(where, " AND ")+`
		`+order+limit, args...)
	if err != nil {
		return nil, s.dbError("query history", err)
	}
	defer rows.Close()
	var out []PricePoint
	for rows.Next() {
		var p PricePoint
		var from int64
		var to sql.NullInt64
		if err := rows.Scan(&p.Provider, &p.Region, &p.Zone, &p.InstanceType, &p.Purchase, &p.GPUModel, &p.GPUCount,
			&p.PriceUSDHr, &from, &to); err != nil {
			return nil, s.dbError("query history", err)
		}
		p.ValidFrom = fromUnix(from)
		if to.Valid {
			t := fromUnix(to.Int64)
			p.ValidTo = &t
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError("query history", err)
	}
	if len(out) == 0 {
		return nil, pricing.Errorf(pricing.NotFound, "no price history for %s", strings.Join(asked, ", "))
	}
	if q.Limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}

// ProviderStatus is what the store knows about one provider's freshness.
type ProviderStatus struct {
	Provider string `json:"provider"`
	// LastSuccess is when the newest successful refresh (or seed) finished.
	LastSuccess time.Time `json:"last_success,omitzero"`
	// LastAttempt is when the newest refresh, successful or not, finished.
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	// LastError is the newest run's error when that run failed, "" otherwise.
	LastError string `json:"last_error,omitempty"`
	// ConsecutiveFailures counts failed runs since the newest successful one.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Offers is the number of current offers; the observed times bound their ages.
	Offers         int       `json:"offers"`
	OldestObserved time.Time `json:"oldest_observed,omitzero"`
	NewestObserved time.Time `json:"newest_observed,omitzero"`
	// Sources of the current offers (pricing.SourceSnapshot, SourceAPI, SourceFile), sorted.
	Sources []string `json:"sources"`
}

// Providers returns the status of every provider seen in offers or refresh runs,
// sorted by name.
func (s *Store) Providers(ctx context.Context) ([]ProviderStatus, error) {
	byName := map[string]*ProviderStatus{}
	get := func(name string) *ProviderStatus {
		p := byName[name]
		if p == nil {
			p = &ProviderStatus{Provider: name, Sources: []string{}}
			byName[name] = p
		}
		return p
	}
	rows, err := s.db.QueryContext(ctx, `SELECT provider, count(price),
		min(CASE WHEN price IS NOT NULL THEN `+seenExpr("offers")+` END), max(CASE WHEN price IS NOT NULL THEN `+seenExpr("offers")+` END),
		group_concat(DISTINCT CASE WHEN price IS NOT NULL THEN source END)
		FROM offers GROUP BY provider`)
	if err != nil {
		return nil, s.dbError("provider status", err)
	}
	for rows.Next() {
		var name string
		var n int
		var oldest, newest sql.NullInt64
		var sources sql.NullString
		if err := rows.Scan(&name, &n, &oldest, &newest, &sources); err != nil {
			rows.Close()
			return nil, s.dbError("provider status", err)
		}
		p := get(name)
		p.Offers = n
		if oldest.Valid {
			p.OldestObserved, p.NewestObserved = fromUnix(oldest.Int64), fromUnix(newest.Int64)
		}
		if sources.Valid && sources.String != "" {
			p.Sources = strings.Split(sources.String, ",")
			slices.Sort(p.Sources)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbError("provider status", err)
	}

	// Newest runs first; per provider, read until its newest success. A provider
	// that has failed for months reads all those failures once, which is cheap next
	// to what the user is about to do with the answer.
	rows, err = s.db.QueryContext(ctx, `SELECT provider, status, coalesce(error, ''), finished FROM refresh_runs
		ORDER BY provider, started DESC, id DESC`)
	if err != nil {
		return nil, s.dbError("provider status", err)
	}
	defer rows.Close()
	done := map[string]bool{}
	for rows.Next() {
		var name, status, msg string
		var finished int64
		if err := rows.Scan(&name, &status, &msg, &finished); err != nil {
			return nil, s.dbError("provider status", err)
		}
		p := get(name)
		if done[name] {
			continue
		}
		if p.LastAttempt.IsZero() {
			p.LastAttempt = fromUnix(finished)
			if status == "failed" {
				p.LastError = msg
			}
		}
		if status == "ok" {
			p.LastSuccess = fromUnix(finished)
			done[name] = true
			continue
		}
		p.ConsecutiveFailures++
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError("provider status", err)
	}
	out := make([]ProviderStatus, 0, len(byName))
	for _, p := range byName {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b ProviderStatus) int { return strings.Compare(a.Provider, b.Provider) })
	return out, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func isEmpty(ctx context.Context, q querier) (bool, error) {
	var empty bool
	err := q.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM offers) AND NOT EXISTS (SELECT 1 FROM refresh_runs)`).Scan(&empty)
	return empty, err
}

// Empty reports whether the database holds no offers and no refresh runs: a fresh
// database that the embedded snapshot should seed.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	e, err := isEmpty(ctx, s.db)
	if err != nil {
		return false, s.dbError("check empty", err)
	}
	return e, nil
}

// Counts are row counts, for tests, benchmarks and `picker providers -v`.
type Counts struct {
	Offers, CurrentOffers, Prices, Runs int64
}

// Counts returns the number of rows in each table.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM offers), (SELECT count(*) FROM offers WHERE price IS NOT NULL),
		(SELECT count(*) FROM prices), (SELECT count(*) FROM refresh_runs)`).Scan(&c.Offers, &c.CurrentOffers, &c.Prices, &c.Runs)
	if err != nil {
		return c, s.dbError("count rows", err)
	}
	return c, nil
}

// SizeBytes is the size of the main database file (pages x page size), not counting
// the WAL, which SQLite checkpoints back into it. The daemon's history bound (50
// refreshes with 1 % of prices changing stay under 1.5x one refresh) is checked on it.
func (s *Store) SizeBytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&n)
	return n, s.dbError("database size", err)
}
