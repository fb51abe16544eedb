package providers

import (
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// MaxPages caps the pages one list of one fetch may take. The longest real lists are
// far shorter: GCP's Compute Engine SKU catalogue is ~7 pages of 5,000
// (cloudbilling v1 services.skus.list, pageSize max 5000), the aggregated GPU machine
// types a few dozen of 500, and AWS GetProducts for one region's GPU instances well
// under 100 pages of 100 (MaxResults max 100). A cap ten times the longest stops a
// server that hands out fresh tokens for ever before memory or the timeout does.
const MaxPages = 1000

// PageGuard stops a paginated list that loops or does not end: a next-page token seen
// before in the same list (a server that repeats one, or alternates between two), or a
// list past MaxPages. The SDK paginators' StopOnDuplicateToken compares only with the
// previous token, and Google's iterator compares with nothing (issue 30: a repeating GCP
// token grew picker-fetch ~40 MiB/s until the timeout; an AWS NextToken alternating
// between two values ran until it). It is safe for concurrent use; lists are named by
// the caller (an API path, a region and call).
type PageGuard struct {
	mu    sync.Mutex
	lists map[string]*pageList
}

type pageList struct {
	pages int
	seen  map[string]bool
}

// Next records one page of list whose next-page token is token ("" at the end, or on the
// first request) and returns an error (pricing.Unavailable) when the token came before
// in that list or the list has passed MaxPages.
func (g *PageGuard) Next(list, token string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lists == nil {
		g.lists = map[string]*pageList{}
	}
	l := g.lists[list]
	if l == nil {
		l = &pageList{seen: map[string]bool{}}
		g.lists[list] = l
	}
	l.pages++
	switch {
	case l.pages > MaxPages:
		return pricing.Errorf(pricing.Unavailable, "%s: more than %d pages: the server's pagination does not end", list, MaxPages)
	case token != "" && l.seen[token]:
		return pricing.Errorf(pricing.Unavailable, "%s: page token %q came back after %d pages: the server's pagination loops", list, Clip(token, 40), l.pages)
	}
	if token != "" {
		l.seen[token] = true
	}
	return nil
}

// Clip shortens s to at most n bytes (on a rune boundary) with "…" when cut, for
// quoting a server's string in a message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
