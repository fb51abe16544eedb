package main

import (
	"strings"
	"testing"
)

// TestAllocatorFlag: --allocator goes through the job binder like every job flag. With
// expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) the reserved
// peak and the device total fall, by the fragmentation slack the activations carried
// with fixed segments, while the allocated peak stays; --allocator default answers what
// no flag answers; a wrong value is a usage error naming the flag.
func TestAllocatorFlag(t *testing.T) {
	db := tempDB(t)
	job := []string{"estimate", "--model", "llama-2-7b", "--task", "lora", "--precision", "bf16", "--batch", "4", "--seq-len", "4096", "--gpus", "1", "-o", "json"}
	run := func(extra ...string) *estimateJSON {
		t.Helper()
		res, err := runEstimateCase(t, db, append(append([]string{}, job...), extra...))
		if err != nil {
			t.Fatalf("picker %s: %v", strings.Join(extra, " "), err)
		}
		return res
	}
	none, def, exp := run(), run("--allocator", "default"), run("--allocator", "expandable")
	if *def != *none {
		t.Errorf("--allocator default %+v differs from no flag %+v", *def, *none)
	}
	if exp.PeakAllocatedGiB != def.PeakAllocatedGiB {
		t.Errorf("peak allocated %.3f GiB with expandable segments, %.3f GiB without; the allocator changes only what it reserves", exp.PeakAllocatedGiB, def.PeakAllocatedGiB)
	}
	churn := exp.Breakdown.Activations + exp.Breakdown.Workspace
	if churn < 1 {
		t.Fatalf("the case has %.3f GiB of activations and workspace; it should churn several", churn)
	}
	// Fixed segments carry 10 % of the churned bytes, expandable ones one 2 MiB page.
	for _, c := range []struct {
		name     string
		def, exp float64
	}{
		{"peak reserved", def.PeakReservedGiB, exp.PeakReservedGiB},
		{"device total", def.DeviceTotalGiB, exp.DeviceTotalGiB},
	} {
		if got, want := c.def-c.exp, 0.10*churn-2.0/1024; got < want-0.002 || got > want+0.002 {
			t.Errorf("%s %.3f GiB with expandable segments, %.3f GiB with fixed ones: falls %.3f GiB; want %.3f (the churn's fragmentation slack)", c.name, c.exp, c.def, got, want)
		}
	}

	r := runCLI(t, db, false, append(append([]string{}, job[:len(job)-2]...), "--allocator", "expandable")...)
	if r.code != 0 || !strings.Contains(r.stdout, "expandable_segments:True") {
		t.Errorf("the table's assumptions do not name the expandable allocator (exit %d):\n%s", r.code, r.stdout)
	}
	bad := runCLI(t, db, false, append(append([]string{}, job...), "--allocator", "cudaMallocAsync")...)
	if bad.code != 2 || !strings.Contains(bad.stderr, "allocator") || !strings.Contains(bad.stderr, "cudaMallocAsync") {
		t.Errorf("--allocator cudaMallocAsync: exit %d, stderr %q; want exit 2 naming the flag and the value", bad.code, bad.stderr)
	}
}
