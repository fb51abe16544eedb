package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/modelref"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/registry"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// Shell habits: completion of flag values (bash, zsh, fish and PowerShell through
// cobra's `picker completion SHELL` and its hidden __complete command), "Did you mean"
// for a mistyped command, and `picker help COMMAND`.

// maxRegionCandidates bounds the regions --region completes to.
const maxRegionCandidates = 200

// regionCompletionTimeout bounds the store read of --region's completion.
const regionCompletionTimeout = 3 * time.Second

func enumNames[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// flagValues are the fixed candidates of flags whose values come from a list.
func flagValues() map[string][]string {
	return map[string][]string{
		"task":           enumNames(fit.Tasks),
		"precision":      enumNames(fit.Precisions),
		"quant":          enumNames(fit.Quants),
		"optimizer":      enumNames(fit.Optimizers),
		"attention":      enumNames(fit.Attentions),
		"shard":          enumNames(fit.Shards),
		"offload":        enumNames(fit.Offloads),
		"framework":      enumNames(fit.Frameworks),
		"kv-cache-dtype": enumNames(fit.KVCacheDtypes),
		"split":          enumNames(fit.Splits),
		"optimizer-step": enumNames(fit.OptimizerSteps),
		"loss":           enumNames(fit.Losses),
		"norm":           enumNames(fit.Norms),
		"allocator":      enumNames(fit.Allocators),
		"purchase":       {"on-demand", "spot", "any"},
		"vendor":         {recommend.VendorNVIDIA, recommend.VendorAMD, recommend.VendorAny},
		"rank":           {string(recommend.RankJob), string(recommend.RankHourly)},
		"engine":         jobtime.Engines,
		"sort":           store.SortNames(),
		"dir":            {"asc", "desc"},
		"output":         {"table", "json", "csv"},
		"log-format":     {"text", "json"},
	}
}

// shellHabits registers the value completions on every command that has the flag,
// and makes an unknown command suggest the nearest one.
func (a *app) shellHabits(root *cobra.Command) {
	root.SuggestionsMinimumDistance = 2
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return usageError{fmt.Errorf("%s", msg)}
	}
	fixed := flagValues()
	dynamic := map[string]func(cmd *cobra.Command) []string{
		"model":     func(*cobra.Command) []string { return a.modelCandidates() },
		"gpu-model": func(*cobra.Command) []string { return gpuCandidates() },
		"provider":  func(*cobra.Command) []string { return providerCandidates() },
		"region":    a.regionCandidates,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(name string, values func(*cobra.Command) []string) {
			if c.Flags().Lookup(name) == nil && c.PersistentFlags().Lookup(name) == nil {
				return // not this command's (a root flag is registered on the root)
			}
			list := slices.Contains([]string{"gpu-model", "provider", "region", "purchase"}, name)
			_ = c.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				return completeFrom(values(cmd), toComplete, list), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for name, vs := range fixed {
			add(name, func(*cobra.Command) []string { return vs })
		}
		for name, f := range dynamic {
			add(name, f)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeFrom keeps the candidates that start with toComplete. A list flag
// (--gpu-model H100,A1) completes its last element, keeping the ones before.
func completeFrom(cands []string, toComplete string, list bool) []string {
	prefix, last := "", toComplete
	if list {
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			prefix, last = toComplete[:i+1], toComplete[i+1:]
		}
	}
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(strings.ToLower(c), strings.ToLower(last)) {
			out = append(out, prefix+c)
		}
	}
	return out
}

// modelCandidates are the catalog's names and the cached Hugging Face models.
func (a *app) modelCandidates() []string {
	var names []string
	for _, e := range model.Catalog() {
		names = append(names, e.Name)
	}
	return append(names, modelref.CachedIDs(modelref.FromEnv(a.m.Getenv))...)
}

// gpuCandidates are the pricing GPU catalog's models.
func gpuCandidates() []string {
	var out []string
	for _, g := range pricing.GPUs() {
		out = append(out, g.Model)
	}
	return out
}

// providerCandidates are the adapters' names.
func providerCandidates() []string {
	var out []string
	for _, d := range registry.All() {
		out = append(out, d.Name)
	}
	return out
}

// regionCandidates are the regions of the stored offers (of the --provider given, if
// any), at most maxRegionCandidates. Completion runs without the command's setup, so it
// loads the config itself, and reads only a database that exists: completing a flag
// never creates one.
func (a *app) regionCandidates(cmd *cobra.Command) []string {
	if a.cfg == nil {
		if err := a.setup(); err != nil {
			return nil
		}
	}
	if _, err := os.Stat(a.cfg.DBPath(a.dbPath)); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctxOr(cmd.Context()), regionCompletionTimeout)
	defer cancel()
	st, err := a.store(ctx)
	if err != nil {
		return nil
	}
	var q store.Query
	if f := cmd.Flags().Lookup("provider"); f != nil && f.Changed {
		q.Providers = splitList([]string{f.Value.String()})
	}
	offers, err := st.Offers(ctx, q)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, o := range offers {
		if o.Region != "" && !seen[o.Region] {
			seen[o.Region] = true
			out = append(out, o.Region)
		}
	}
	slices.Sort(out)
	if len(out) > maxRegionCandidates {
		out = out[:maxRegionCandidates]
	}
	return out
}

func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
