package store

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// MarketRead is one read of a provider's spot interruption bands and block-storage prices
// (providers.MarketReport with its errors redacted to text), for the all-in bill.
type MarketRead struct {
	Spot    []pricing.SpotBand
	Storage []pricing.StoragePrice
	// Regions were read in full: their stored bands and storage prices are replaced.
	// Failed parts (regions, or "spot-advisor") keep their last good rows.
	Regions  []string
	Failed   map[string]string
	Requests int
	At       time.Time
}

// MarketStatus is a provider's newest spot/storage read.
type MarketStatus struct {
	Provider  string    `json:"provider"`
	Attempted time.Time `json:"attempted"`
	LastOK    time.Time `json:"last_ok,omitzero"`
	Error     string    `json:"error,omitempty"`
	Requests  int       `json:"requests"`
}

// WriteMarket stores one spot/storage read of provider: each region read in full has its
// rows replaced, a failed part keeps its last good ones, and market_reads records the
// read. A band or price that fails its Validate is an error and nothing is written.
func (s *Store) WriteMarket(ctx context.Context, provider string, r MarketRead) error {
	if provider == "" {
		return pricing.Errorf(pricing.Invalid, "write market data: provider name is empty")
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	for _, b := range r.Spot {
		if b.Provider != provider {
			return pricing.Errorf(pricing.Invalid, "write %s spot bands: band %s/%s is of provider %q", provider, b.Region, b.InstanceType, b.Provider)
		}
		if err := b.Validate(); err != nil {
			return err
		}
	}
	for _, p := range r.Storage {
		if p.Provider != provider {
			return pricing.Errorf(pricing.Invalid, "write %s storage prices: price %s/%s is of provider %q", provider, p.Region, p.Product, p.Provider)
		}
		if err := p.Validate(); err != nil {
			return err
		}
	}
	op := "write " + provider + " spot and storage data"
	tx, release, err := s.beginWrite(ctx, op)
	if err != nil {
		return err
	}
	defer release()
	defer tx.Rollback()
	for _, region := range r.Regions {
		for _, q := range []string{`DELETE FROM spot_bands WHERE provider = ? AND region = ?`, `DELETE FROM storage_prices WHERE provider = ? AND region = ?`} {
			if _, err := tx.ExecContext(ctx, q, provider, region); err != nil {
				return s.dbError(op, err)
			}
		}
	}
	obs := func(t time.Time) int64 {
		if t.IsZero() {
			return unix(r.At)
		}
		return unix(t)
	}
	for _, b := range r.Spot {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO spot_bands (provider, region, instance_type, low_pct, high_pct, period_hours, label, score, source, observed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, provider, b.Region, b.InstanceType, b.LowPct, b.HighPct, b.PeriodHours, b.Label, b.Score, b.Source, obs(b.ObservedAt)); err != nil {
			return s.dbError(op, err)
		}
	}
	for _, p := range r.Storage {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO storage_prices (provider, region, product, usd_per_gib_month, size_gib, usd_per_month, source, observed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, provider, p.Region, p.Product, p.USDPerGiBMonth, p.SizeGiB, p.USDPerMonth, p.Source, obs(p.ObservedAt)); err != nil {
			return s.dbError(op, err)
		}
	}
	msg := failures(r.Failed)
	var lastOK any
	if len(r.Spot)+len(r.Storage) > 0 {
		lastOK = unix(r.At)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO market_reads (provider, attempted, last_ok, error, requests) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (provider) DO UPDATE SET attempted = excluded.attempted, last_ok = coalesce(excluded.last_ok, last_ok),
			error = excluded.error, requests = excluded.requests`,
		provider, unix(r.At), lastOK, msg, r.Requests); err != nil {
		return s.dbError(op, err)
	}
	return s.dbError(op, tx.Commit())
}

// failures is a read's failed parts as one message, "part: error; …" in part order, for
// a reads table's error column: NULL when none failed.
func failures(failed map[string]string) any {
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, 0, len(failed))
	for part, e := range failed {
		parts = append(parts, part+": "+e)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// SpotBands returns every stored spot band, by provider, region and instance type.
func (s *Store) SpotBands(ctx context.Context) ([]pricing.SpotBand, error) {
	rows, err := pooled{s}.QueryContext(ctx, `SELECT provider, region, instance_type, low_pct, high_pct, period_hours, label, score, source, observed
		FROM spot_bands ORDER BY provider, region, instance_type`)
	if err != nil {
		return nil, s.dbError("read spot bands", err)
	}
	defer rows.Close()
	var out []pricing.SpotBand
	for rows.Next() {
		var b pricing.SpotBand
		var observed int64
		if err := rows.Scan(&b.Provider, &b.Region, &b.InstanceType, &b.LowPct, &b.HighPct, &b.PeriodHours, &b.Label, &b.Score, &b.Source, &observed); err != nil {
			return nil, s.dbError("read spot bands", err)
		}
		b.ObservedAt = fromUnix(observed)
		out = append(out, b)
	}
	return out, s.dbError("read spot bands", rows.Err())
}

// StoragePrices returns every stored block-storage price, by provider, region and product.
func (s *Store) StoragePrices(ctx context.Context) ([]pricing.StoragePrice, error) {
	rows, err := pooled{s}.QueryContext(ctx, `SELECT provider, region, product, usd_per_gib_month, size_gib, usd_per_month, source, observed
		FROM storage_prices ORDER BY provider, region, product`)
	if err != nil {
		return nil, s.dbError("read storage prices", err)
	}
	defer rows.Close()
	var out []pricing.StoragePrice
	for rows.Next() {
		var p pricing.StoragePrice
		var observed int64
		if err := rows.Scan(&p.Provider, &p.Region, &p.Product, &p.USDPerGiBMonth, &p.SizeGiB, &p.USDPerMonth, &p.Source, &observed); err != nil {
			return nil, s.dbError("read storage prices", err)
		}
		p.ObservedAt = fromUnix(observed)
		out = append(out, p)
	}
	return out, s.dbError("read storage prices", rows.Err())
}

// MarketStatuses returns each provider's newest spot/storage read.
func (s *Store) MarketStatuses(ctx context.Context) ([]MarketStatus, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT provider, attempted, last_ok, coalesce(error, ''), requests FROM market_reads ORDER BY provider`)
	if err != nil {
		return nil, s.dbError("read market reads", err)
	}
	defer rows.Close()
	var out []MarketStatus
	for rows.Next() {
		var m MarketStatus
		var attempted int64
		var lastOK sql.NullInt64
		if err := rows.Scan(&m.Provider, &attempted, &lastOK, &m.Error, &m.Requests); err != nil {
			return nil, s.dbError("read market reads", err)
		}
		m.Attempted = fromUnix(attempted)
		if lastOK.Valid {
			m.LastOK = fromUnix(lastOK.Int64)
		}
		out = append(out, m)
	}
	return out, s.dbError("read market reads", rows.Err())
}
