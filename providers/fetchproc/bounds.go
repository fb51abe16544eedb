package fetchproc

import (
	"encoding/binary"
	"fmt"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// minOfferBytes is the fewest bytes one offer takes in pricing's layout (a zero offer:
// every string empty, the zero time): a part's count is checked against its length with
// it before the decoder allocates anything, so a header that lies costs nothing (issue
// 30: a 10 MB frame claiming 10M offers allocated 1.9 GiB in the decoder's make).
var minOfferBytes = uint64(len(pricing.AppendOffers(nil, []pricing.Offer{{}})) - 1)

// maxPartOffers is the hard cap on offers in one part: the adapters send a region, or
// chunk (8192) offers, at a time, and a million offers (~200 MiB decoded) is past any
// provider's whole catalogue. A variable so that a test can lower it.
var maxPartOffers uint64 = 1 << 20

// checkPartCount refuses a part payload whose count (its leading uvarint) its bytes
// cannot hold or that passes maxPartOffers.
func checkPartCount(p []byte) error {
	n, w := binary.Uvarint(p)
	switch {
	case w <= 0:
		return fmt.Errorf("bad offer count")
	case n > uint64(len(p)-w)/minOfferBytes:
		return fmt.Errorf("%d offers in %d bytes (an offer takes at least %d)", n, len(p), minOfferBytes)
	case n > maxPartOffers:
		return fmt.Errorf("%d offers in one part, over the cap of %d", n, maxPartOffers)
	}
	return nil
}

// recheck applies the plausibility bounds (providers.Finalize: Validate, CheckBounds, the
// string caps) to a part from the child: picker does not trust another process's
// numbers any more than a provider's (issue 30: an Inf memory from a child was stored
// and made recommend a 500). Dropped offers become warnings.
func recheck(name string, part []pricing.Offer) ([]pricing.Offer, []string) {
	return providers.Finalize(name, part)
}
