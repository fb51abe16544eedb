package pricing

import (
	"encoding/json"
	"fmt"
)

// Availability is what a provider says about launching an offer right now: whether it
// has the capacity (Lambda's regions_with_capacity_available, RunPod's stockStatus,
// Hyperstack's stocks, Shadeform's and Prime Intellect's availability). Most providers
// say nothing, so the zero value is "unknown" and an offer is ranked as launchable
// unless its provider said otherwise. The time it was observed is the offer's
// ObservedAt: the same refresh lists the offer and its stock.
//
// It is an int8 rather than a *bool so Offer stays comparable and its codec fixed-size.
type Availability int8

const (
	AvailabilityUnknown Availability = iota // the provider does not say (the zero value)
	AvailableNow                            // the provider says it has capacity now
	SoldOut                                 // the provider says it is out of capacity (sold out, no stock)
)

// AvailabilityOf maps a provider's yes/no to an Availability.
func AvailabilityOf(ok bool) Availability {
	if ok {
		return AvailableNow
	}
	return SoldOut
}

// Known reports whether the provider said anything.
func (a Availability) Known() bool { return a == AvailableNow || a == SoldOut }

// Launchable reports whether an offer may be ranked as launchable: unknown counts as
// launchable (nothing says otherwise).
func (a Availability) Launchable() bool { return a != SoldOut }

func (a Availability) String() string {
	switch a {
	case AvailableNow:
		return "available"
	case SoldOut:
		return "unavailable"
	}
	return "unknown"
}

// MarshalJSON writes true or false; the unknown zero value is null (Offer's
// `available,omitempty` leaves it out).
func (a Availability) MarshalJSON() ([]byte, error) {
	switch a {
	case AvailableNow:
		return []byte("true"), nil
	case SoldOut:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads true, false or null.
func (a *Availability) UnmarshalJSON(b []byte) error {
	var v *bool
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("available: want true, false or null: %w", err)
	}
	*a = AvailabilityUnknown
	if v != nil {
		*a = AvailabilityOf(*v)
	}
	return nil
}
