package main

import (
	"context"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// The flags several commands share are defined here once, so offers, export, recommend,
// history and refresh agree on their name, type, help and parsing: a script that passes
// --provider or --purchase to one command passes it to another.

// providerParam is --provider: provider names, a comma list (the flag may repeat),
// trimmed and lower-cased, blanks dropped. selects says what the names select, the one
// part of the help that differs between commands.
func providerParam(dst *[]string, selects string) param {
	return param{name: "provider", kind: kindList, usage: selects + " (names as 'picker providers' lists them, e.g. aws,lambda)",
		set: func(v string) error {
			*dst = nil
			for _, p := range splitList([]string{v}) {
				*dst = append(*dst, strings.ToLower(p))
			}
			return nil
		}}
}

// purchaseParam is --purchase: on-demand, spot or any (both; stored as ""). def is the
// command's default: recommend prices on-demand unless told otherwise, the price
// listings show both.
func purchaseParam(dst *pricing.Purchase, def string) param {
	return param{name: "purchase", usage: "on-demand, spot or any", def: def, set: func(v string) error {
		*dst = ""
		if lv := strings.ToLower(strings.TrimSpace(v)); lv == "any" || lv == "" {
			return nil
		}
		p, err := pricing.ParsePurchase(strings.TrimSpace(v))
		if err != nil {
			return pricing.ParamErrorf(pricing.Invalid, "purchase", "--purchase %q: want on-demand, spot or any", v)
		}
		*dst = p
		return nil
	}}
}

// checkProviders rejects a --provider name that is not among known, naming the closest
// ones; why says what known is ("no such adapter", "no stored offer has it").
func checkProviders(names, known []string, why string) error {
	for _, n := range names {
		if !slices.Contains(known, n) {
			return pricing.ParamErrorf(pricing.Invalid, "provider", "--provider %q: %s; closest: %s", n, why, strings.Join(closest(n, known, 4), ", "))
		}
	}
	return nil
}

// checkProviderFlag is the price commands' check of --provider: names no stored offer
// has are refused as offers, export and recommend refuse them (offerFilters.checkNames).
func (a *app) checkProviderFlag(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	st, err := a.offerStore(ctx)
	if err != nil {
		return err
	}
	f := offerFilters{q: store.Query{Providers: names}}
	return f.checkNames(ctx, st)
}
