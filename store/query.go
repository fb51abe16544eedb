package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Sort orders current offers, cheapest first.
type Sort string

const (
	SortPrice       Sort = "price"         // price per instance-hour (the default)
	SortPricePerGPU Sort = "price-per-gpu" // price / GPU count (a 1/8 slice counts as 1/8 of a GPU)
	SortPricePerGiB Sort = "price-per-gib" // price / total VRAM of the instance
)

// ParseSort accepts the CONTRACT's --sort values; "" means SortPrice.
func ParseSort(s string) (Sort, error) {
	switch v := Sort(strings.ToLower(strings.TrimSpace(s))); v {
	case "":
		return SortPrice, nil
	case SortPrice, SortPricePerGPU, SortPricePerGiB:
		return v, nil
	}
	return "", pricing.Errorf(pricing.Invalid, "sort %q: want price, price-per-gpu or price-per-gib", s)
}

// The ORDER BY expressions match the expression indexes of 0001_init.sql exactly, so
// SQLite walks an index instead of sorting every current offer.
var sortExpr = map[Sort]string{
	SortPrice:       "price",
	SortPricePerGPU: "price / gpu_count",
	SortPricePerGiB: "price / total_vram_gib",
}

// sortIndex names the partial index whose expression is sortExpr's.
var sortIndex = map[Sort]string{
	SortPrice:       "offers_current_price",
	SortPricePerGPU: "offers_current_per_gpu",
	SortPricePerGiB: "offers_current_per_gib",
}

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
	MaxPriceUSDHr   float64 // per instance-hour
	MaxGPUs         float64
	// ExcludeFractional drops vGPU slices (gpu_count < 1).
	ExcludeFractional bool
	Sort              Sort // "" = SortPrice
	Limit             int  // 0 = all
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

// Offers returns the current offers (those with an open price interval) matching q,
// cheapest first by q.Sort, ties broken by provider, region, zone, instance type and
// purchase so the order is the same on every run. ObservedAt is when the price was
// last seen, Source where it came from.
func (s *Store) Offers(ctx context.Context, q Query) ([]pricing.Offer, error) {
	if s.cache != nil {
		return s.cachedOffers(ctx, q)
	}
	return s.queryOffers(ctx, q)
}

func (s *Store) queryOffers(ctx context.Context, q Query) ([]pricing.Offer, error) {
	sortBy, err := ParseSort(string(q.Sort))
	if err != nil {
		return nil, err
	}
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
			return nil, err
		}
		where = append(where, "purchase = ?")
		args = append(args, string(pur))
	}
	cond := func(ok bool, expr string, v any) {
		if ok {
			where = append(where, expr)
			args = append(args, v)
		}
	}
	// Spelled out rather than through the generated columns vram_gib and
	// total_vram_gib so that they read only indexed columns (see 0001_init.sql).
	cond(q.MinVRAMGiB > 0, "(CASE WHEN gpu_count < 1 THEN gpu_count * gpu_mem_gib ELSE gpu_mem_gib END) >= ?", q.MinVRAMGiB)
	cond(q.MinTotalVRAMGiB > 0, "gpu_count * gpu_mem_gib >= ?", q.MinTotalVRAMGiB)
	cond(q.MaxPriceUSDHr > 0, "price <= ?", q.MaxPriceUSDHr)
	cond(q.MaxGPUs > 0, "gpu_count <= ?", q.MaxGPUs)
	if q.ExcludeFractional {
		where = append(where, "gpu_count >= 1")
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
		from += " INDEXED BY " + sortIndex[sortBy]
	}
	query := "SELECT " + offerColumns + " FROM " + from + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY " + sortExpr[sortBy] + ", provider, region, zone, instance_type, purchase"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
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
		if err := rows.Scan(&o.Provider, &o.Region, &o.Zone, &o.InstanceType, &o.Purchase, &o.GPUModel, &o.GPUCount,
			&o.GPUMemGiB, &o.VCPUs, &o.RAMGiB, &o.Currency, &o.Source, &o.PriceUSDHr, &seen); err != nil {
			return nil, s.dbError("query offers", err)
		}
		o.ObservedAt = fromUnix(seen)
		// Memory is the GPU model's usable figure (pricing.Offer.WithUsableMemory); the SQL
		// filters above saw the provider's figure, so the VRAM filters are applied again to
		// the usable one (an L4 reported as 24 does not pass --min-vram 24).
		o = o.WithUsableMemory()
		if (q.MinVRAMGiB > 0 && o.MemPerDeviceGiB() < q.MinVRAMGiB) || (q.MinTotalVRAMGiB > 0 && o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) {
			continue
		}
		out = append(out, o)
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
	rows, err := s.db.QueryContext(ctx, `SELECT o.provider, o.region, o.zone, o.instance_type, o.purchase, o.gpu_model, o.gpu_count,
		p.price, p.valid_from, p.valid_to
		FROM offers o JOIN prices p ON p.offer_id = o.id
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY p.valid_from, o.region, o.zone, o.purchase, p.id`, args...)
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
