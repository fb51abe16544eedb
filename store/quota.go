package store

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// QuotaRead is one read of a provider's account quotas, as the refresh hands it over
// (providers.QuotaReport with its errors already redacted to text).
type QuotaRead struct {
	Account string
	Quotas  []pricing.Quota
	// Regions were read in full: their stored quotas are replaced. Failed regions keep
	// their last good ones.
	Regions  []string
	Failed   map[string]string
	Requests int
	At       time.Time
}

// QuotaStatus is a provider's newest quota read, for `picker providers` and the
// refresh's "is a read due" check.
type QuotaStatus struct {
	Provider  string    `json:"provider"`
	Account   string    `json:"account,omitempty"`
	Attempted time.Time `json:"attempted"`
	// LastOK is the newest read that landed any region; zero when none ever did.
	LastOK        time.Time `json:"last_ok,omitzero"`
	Error         string    `json:"error,omitempty"`
	RegionsOK     int       `json:"regions_ok"`
	RegionsFailed int       `json:"regions_failed"`
	Requests      int       `json:"requests"`
	// Quotas is how many quotas of Account are stored, Oldest the oldest one's read time
	// (a failed region's rows are older than LastOK).
	Quotas int       `json:"quotas"`
	Oldest time.Time `json:"oldest,omitzero"`
}

// WriteQuotas stores one quota read of provider: each region read in full has its
// quotas replaced by the new ones, a failed region keeps its last good ones, and the
// provider's quota_reads row records the read (when, which account, what failed). A
// quota that fails pricing.Quota.Validate is an error and nothing is written.
func (s *Store) WriteQuotas(ctx context.Context, provider string, r QuotaRead) error {
	if provider == "" {
		return pricing.Errorf(pricing.Invalid, "write quotas: provider name is empty")
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	for _, q := range r.Quotas {
		if q.Provider != provider {
			return pricing.Errorf(pricing.Invalid, "write %s quotas: quota %s is of provider %q", provider, q.Code, q.Provider)
		}
		if err := q.Validate(); err != nil {
			return err
		}
	}
	op := "write " + provider + " quotas"
	tx, release, err := s.beginWrite(ctx, op)
	if err != nil {
		return err
	}
	defer release()
	defer tx.Rollback()
	for _, region := range r.Regions {
		if _, err := tx.ExecContext(ctx, `DELETE FROM quotas WHERE provider = ? AND account = ? AND region = ?`, provider, r.Account, region); err != nil {
			return s.dbError(op, err)
		}
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO quotas (provider, account, region, code, name, family, purchase, unit, quota_limit, usage, observed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return s.dbError(op, err)
	}
	defer ins.Close()
	for _, q := range r.Quotas {
		at := q.ObservedAt
		if at.IsZero() {
			at = r.At
		}
		var usage any
		if q.UsageKnown {
			usage = q.Usage
		}
		if _, err := ins.ExecContext(ctx, provider, r.Account, q.Region, q.Code, q.Name, q.Family, string(q.Purchase), q.Unit, q.Limit, usage, unix(at)); err != nil {
			return s.dbError(op, err)
		}
	}
	msg := failures(r.Failed) // market.go
	var lastOK any
	if len(r.Regions) > 0 {
		lastOK = unix(r.At)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO quota_reads (provider, account, attempted, last_ok, error, regions_ok, regions_failed, requests)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (provider) DO UPDATE SET account = CASE WHEN excluded.last_ok IS NULL THEN account ELSE excluded.account END,
			attempted = excluded.attempted, last_ok = coalesce(excluded.last_ok, last_ok), error = excluded.error,
			regions_ok = excluded.regions_ok, regions_failed = excluded.regions_failed, requests = excluded.requests`,
		provider, r.Account, unix(r.At), lastOK, msg, len(r.Regions), len(r.Failed), r.Requests); err != nil {
		return s.dbError(op, err)
	}
	return s.dbError(op, tx.Commit())
}

// Quotas returns every stored quota of each provider's current account (the account
// of its newest read that landed), by provider, region and code.
func (s *Store) Quotas(ctx context.Context) ([]pricing.Quota, error) {
	rows, err := pooled{s}.QueryContext(ctx, `SELECT q.provider, q.account, q.region, q.code, q.name, q.family, q.purchase, q.unit, q.quota_limit, q.usage, q.observed
		FROM quotas q JOIN quota_reads r ON r.provider = q.provider AND r.account = q.account
		ORDER BY q.provider, q.region, q.code`)
	if err != nil {
		return nil, s.dbError("read quotas", err)
	}
	defer rows.Close()
	var out []pricing.Quota
	for rows.Next() {
		var q pricing.Quota
		var purchase string
		var usage sql.NullFloat64
		var observed int64
		if err := rows.Scan(&q.Provider, &q.Account, &q.Region, &q.Code, &q.Name, &q.Family, &purchase, &q.Unit, &q.Limit, &usage, &observed); err != nil {
			return nil, s.dbError("read quotas", err)
		}
		q.Purchase = pricing.Purchase(purchase)
		q.Usage, q.UsageKnown = usage.Float64, usage.Valid
		q.ObservedAt = fromUnix(observed)
		out = append(out, q)
	}
	return out, s.dbError("read quotas", rows.Err())
}

// QuotaStatuses returns each provider's newest quota read, by provider name.
func (s *Store) QuotaStatuses(ctx context.Context) ([]QuotaStatus, error) {
	rows, err := pooled{s}.QueryContext(ctx, `SELECT r.provider, r.account, r.attempted, r.last_ok, coalesce(r.error, ''), r.regions_ok, r.regions_failed, r.requests,
			(SELECT count(*) FROM quotas q WHERE q.provider = r.provider AND q.account = r.account),
			(SELECT min(observed) FROM quotas q WHERE q.provider = r.provider AND q.account = r.account)
		FROM quota_reads r ORDER BY r.provider`)
	if err != nil {
		return nil, s.dbError("read quota status", err)
	}
	defer rows.Close()
	var out []QuotaStatus
	for rows.Next() {
		var st QuotaStatus
		var attempted int64
		var lastOK, oldest sql.NullInt64
		if err := rows.Scan(&st.Provider, &st.Account, &attempted, &lastOK, &st.Error, &st.RegionsOK, &st.RegionsFailed, &st.Requests, &st.Quotas, &oldest); err != nil {
			return nil, s.dbError("read quota status", err)
		}
		st.Attempted = fromUnix(attempted)
		if lastOK.Valid {
			st.LastOK = fromUnix(lastOK.Int64)
		}
		if oldest.Valid {
			st.Oldest = fromUnix(oldest.Int64)
		}
		out = append(out, st)
	}
	return out, s.dbError("read quota status", rows.Err())
}

// WriteCapacity stores what one refresh of provider said about its offers' capacity
// (offers whose Available is known): in the regions the refresh covered (nil: all), the
// provider's previous word is replaced, so an offer it no longer reports on is unknown
// again. Offers whose availability is unknown are skipped.
func (s *Store) WriteCapacity(ctx context.Context, provider string, regions []string, offers []pricing.Offer, at time.Time) error {
	if provider == "" {
		return pricing.Errorf(pricing.Invalid, "write capacity: provider name is empty")
	}
	op := "write " + provider + " capacity"
	tx, release, err := s.beginWrite(ctx, op)
	if err != nil {
		return err
	}
	defer release()
	defer tx.Rollback()
	if regions == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM capacity WHERE provider = ?`, provider)
	} else {
		for _, r := range regions {
			if _, err = tx.ExecContext(ctx, `DELETE FROM capacity WHERE provider = ? AND region = ?`, provider, r); err != nil {
				break
			}
		}
	}
	if err != nil {
		return s.dbError(op, err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO capacity (provider, region, zone, instance_type, purchase, available, observed) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return s.dbError(op, err)
	}
	defer ins.Close()
	for _, o := range offers {
		if !o.Available.Known() || o.Provider != provider || (regions != nil && !slices.Contains(regions, o.Region)) {
			continue
		}
		t := o.ObservedAt
		if t.IsZero() {
			t = at
		}
		avail := 0
		if o.Available == pricing.AvailableNow {
			avail = 1
		}
		if _, err := ins.ExecContext(ctx, provider, o.Region, o.Zone, o.InstanceType, string(o.Purchase), avail, unix(t)); err != nil {
			return s.dbError(op, err)
		}
	}
	return s.dbError(op, tx.Commit())
}

// Capacity is the stored capacity word on offers: each known offer's availability and
// when it was observed.
type Capacity map[pricing.Key]CapacityWord

// CapacityWord is one offer's availability and its time.
type CapacityWord struct {
	Available  pricing.Availability
	ObservedAt time.Time
}

// ReadCapacity returns every stored capacity word.
func (s *Store) ReadCapacity(ctx context.Context) (Capacity, error) {
	rows, err := pooled{s}.QueryContext(ctx, `SELECT provider, region, zone, instance_type, purchase, available, observed FROM capacity`)
	if err != nil {
		return nil, s.dbError("read capacity", err)
	}
	defer rows.Close()
	out := Capacity{}
	for rows.Next() {
		var k pricing.Key
		var purchase string
		var avail int
		var observed int64
		if err := rows.Scan(&k.Provider, &k.Region, &k.Zone, &k.InstanceType, &purchase, &avail, &observed); err != nil {
			return nil, s.dbError("read capacity", err)
		}
		k.Purchase = pricing.Purchase(purchase)
		out[k] = CapacityWord{pricing.AvailabilityOf(avail == 1), fromUnix(observed)}
	}
	return out, s.dbError("read capacity", rows.Err())
}

// Apply sets each offer's Available from the stored word: offers read from the tables
// carry their prices only.
func (c Capacity) Apply(offers []pricing.Offer) {
	if len(c) == 0 {
		return
	}
	for i := range offers {
		if w, ok := c[offers[i].Key()]; ok {
			offers[i].Available = w.Available
		}
	}
}

// CapacityStatus is one provider's capacity word in the store, for `picker providers`.
type CapacityStatus struct {
	Provider  string    `json:"provider"`
	Available int       `json:"available"`
	SoldOut   int       `json:"sold_out"`
	Observed  time.Time `json:"observed"`
}

// CapacityStatuses returns, per provider with any capacity word, how many offers are
// available and sold out and when the newest word was observed.
func (s *Store) CapacityStatuses(ctx context.Context) ([]CapacityStatus, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT provider, sum(available), sum(1 - available), max(observed) FROM capacity GROUP BY provider ORDER BY provider`)
	if err != nil {
		return nil, s.dbError("read capacity status", err)
	}
	defer rows.Close()
	var out []CapacityStatus
	for rows.Next() {
		var st CapacityStatus
		var observed int64
		if err := rows.Scan(&st.Provider, &st.Available, &st.SoldOut, &observed); err != nil {
			return nil, s.dbError("read capacity status", err)
		}
		st.Observed = fromUnix(observed)
		out = append(out, st)
	}
	return out, s.dbError("read capacity status", rows.Err())
}
